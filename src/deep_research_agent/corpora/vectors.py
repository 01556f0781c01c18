"""Passage vectors beside the FTS5 index, in the same SQLite file, and the embedding pass that fills them.

Schema: ``passage_vectors(rowid, vector)``, one float16 vector (``embeddings.vectors``) per passage under the
passage's rowid; the ``meta`` keys ``embedder`` (the identity of the model that made them) and
``embedded_at``. A file's passages and their vectors leave together (``Fts5Index._drop_passages``), so an
unchanged file keeps its vectors across reindexes and only new or changed passages are embedded again.

Why not sqlite-vec: Python builds without loadable-extension support (pyenv's and this machine's
interpreter among them) cannot load it; its brute-force KNN is the same exact search the matrix product
in ``embeddings.ranking`` does, which takes about 10 ms over 34,000 passages.

Contract:
- ``embed_passages(index, embedder, progress=..., batch=...)`` embeds every passage without a vector, in
  batches, each committed, so readers search by meaning whatever is already embedded while the rest is
  still going (keyword search covers every passage from the start). When the index was embedded by another
  model, its vectors are dropped first. Returns an ``EmbeddingSummary``; an ``EmbeddingFailed`` stops the
  pass (the vectors already written stay) and is reported in the summary, never raised;
- ``PassageVectors(db)`` reads them: ``identity()``, ``counts()`` and ``matrix()`` (rowids and the float32
  matrix, cached until another connection commits).
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..domain.clock import utc_now_iso
from ..embeddings import Embedder, EmbeddingFailed, pack, unpack_many

SCHEMA = "CREATE TABLE IF NOT EXISTS passage_vectors(rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL);"
BATCH = 64
# What of a passage is embedded: its section path (context the text often lacks) and its text.
EMBEDDED_PATH_PARTS = 2


class EmbeddingProgress(Protocol):
    def start_embedding(self, passages: int) -> None: ...

    def embedded(self, passages: int) -> None: ...

    def finish_embedding(self) -> None: ...


@dataclass
class EmbeddingSummary:
    identity: str = ""
    embedded: int = 0
    total: int = 0
    dropped: int = 0
    elapsed_s: float = 0.0
    failure: str = ""

    @property
    def rate(self) -> float:
        return self.embedded / self.elapsed_s if self.elapsed_s > 0 else 0.0


def passage_text(title_path: list[str], body: str) -> str:
    """The text embedded for a passage: the last parts of its title path, then its body."""
    path = " › ".join(part for part in title_path[-EMBEDDED_PATH_PARTS:] if part)
    return f"{path}\n{body}" if path else body


class PassageVectors:
    """The vectors of one index connection (``fts5.Fts5Index.vectors``)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._cache: tuple[int, int, np.ndarray, np.ndarray] | None = None

    def available(self) -> bool:
        return bool(
            self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'passage_vectors'").fetchone()
        )

    def identity(self) -> str:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        return row[0] if row and self.available() else ""

    def counts(self) -> tuple[int, int]:
        """(passages with a vector, passages)."""
        total = self._db.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
        if not self.available():
            return 0, total
        return self._db.execute("SELECT COUNT(*) FROM passage_vectors").fetchone()[0], total

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, unit vectors as rows); read again only after a commit by any connection."""
        if not self.available():
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        changes = self._db.total_changes
        if self._cache is not None and self._cache[:2] == (version, changes):
            return self._cache[2], self._cache[3]
        rows = self._db.execute("SELECT rowid, vector FROM passage_vectors ORDER BY rowid").fetchall()
        rowids = np.fromiter((rowid for rowid, _ in rows), dtype=np.int64, count=len(rows))
        dims = len(rows[0][1]) // 2 if rows else 0
        same = [vector for _, vector in rows if len(vector) == dims * 2]
        matrix = unpack_many(same, dims) if len(same) == len(rows) else np.zeros((0, dims), dtype=np.float32)
        self._cache = (version, changes, rowids if len(matrix) else rowids[:0], matrix)
        return self._cache[2], self._cache[3]


class _Writable(Protocol):
    """What ``embed_passages`` needs of an index (``Fts5Index`` with ``writable=True``)."""

    @property
    def db(self) -> sqlite3.Connection: ...

    def begin(self) -> None: ...

    def commit(self) -> None: ...


class _Quiet:
    def start_embedding(self, passages: int) -> None:
        pass

    def embedded(self, passages: int) -> None:
        pass

    def finish_embedding(self) -> None:
        pass


def embed_passages(
    index: _Writable, embedder: Embedder, *, progress: EmbeddingProgress | None = None, batch: int = BATCH
) -> EmbeddingSummary:
    progress = progress or _Quiet()
    db = index.db
    started = time.monotonic()
    summary = EmbeddingSummary(identity=embedder.identity)
    index.begin()
    db.execute(SCHEMA)
    recorded = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    if recorded and recorded[0] != embedder.identity:
        summary.dropped = db.execute("DELETE FROM passage_vectors").rowcount
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('embedder', ?)", (embedder.identity,))
    index.commit()
    summary.total = db.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
    todo = db.execute(
        "SELECT COUNT(*) FROM passages AS p WHERE NOT EXISTS (SELECT 1 FROM passage_vectors AS v WHERE v.rowid = p.rowid)"
    ).fetchone()[0]
    progress.start_embedding(todo)
    last = 0
    try:
        while True:
            rows = db.execute(
                "SELECT p.rowid, p.title_path, f.body FROM passages AS p JOIN passages_fts AS f ON f.rowid = p.rowid "
                "WHERE p.rowid > ? AND NOT EXISTS (SELECT 1 FROM passage_vectors AS v WHERE v.rowid = p.rowid) "
                "ORDER BY p.rowid LIMIT ?",
                (last, batch),
            ).fetchall()
            if not rows:
                break
            last = rows[-1][0]
            texts = [passage_text(_path(title_path), body) for _, title_path, body in rows]
            try:
                vectors = embedder.embed_documents(texts)
            except EmbeddingFailed as exc:
                summary.failure = str(exc)
                break
            index.begin()
            db.executemany(
                "INSERT OR REPLACE INTO passage_vectors(rowid, vector) VALUES (?, ?)",
                [(rowid, pack(vector)) for (rowid, _, _), vector in zip(rows, vectors, strict=True)],
            )
            index.commit()
            summary.embedded += len(rows)
            progress.embedded(len(rows))
        if not summary.failure:
            index.begin()
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('embedded_at', ?)", (utc_now_iso(),))
            index.commit()
    finally:
        progress.finish_embedding()
        summary.elapsed_s = time.monotonic() - started
    return summary


def _path(title_path: str) -> list[str]:
    try:
        value = json.loads(title_path)
    except ValueError:
        return []
    return [str(part) for part in value] if isinstance(value, list) else []
