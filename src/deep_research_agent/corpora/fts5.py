"""The embedded search backend: one SQLite file per corpus with an FTS5 index (stdlib ``sqlite3``).

Why FTS5: it ships inside Python's sqlite3, so a fresh clone indexes and searches with nothing to
install or run, and it ranks with bm25 over weighted columns. The schema:

- ``passages_fts(title, heading, body)``: the document's title and file name, the passage's section
  headings, and its text; ranked with ``bm25`` weights ``TITLE_WEIGHT``/``HEADING_WEIGHT``/``BODY_WEIGHT``,
  then by how much of the query each candidate holds (``search``).
  The tokenizer is ``porter unicode61`` with ``_`` as a token character, so ``work_mem`` or
  ``SQLITE_MAX_COLUMN`` are one token each, as a reader types them;
- ``passages``: id, file, order, anchor, page and title path of each passage (same rowid as its text);
- ``documents``: every file seen, with the size and mtime that decide whether a reindex reads it again,
  its SHA-256 and title, or the reason it could not be read;
- ``meta``: the corpus's name, directory, title, description and counts.

The file is in WAL mode: the server's readers (opened read-only) keep answering while ``corpus
reindex`` writes, and see each committed batch.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..embeddings import fuse, rank_by_meaning
from ..embeddings.ranking import FUSION_POOL
from .backend import CorpusMeta, FileState, Hit, IndexedDocument, StoredPassage
from .query import query_terms
from .snippets import coverage, make_snippet, stem_pattern
from .vectors import SCHEMA as VECTORS_SCHEMA
from .vectors import PassageVectors

SCHEMA_VERSION = 1
TITLE_WEIGHT = 2.0
HEADING_WEIGHT = 4.0
BODY_WEIGHT = 1.0
TOKENIZER = "porter unicode61 remove_diacritics 2 tokenchars '_'"
# A word in more than this share of the passages is dropped from a query that has other terms.
COMMON_FRACTION = 0.3
RERANK_POOL = 40
# How many passages nearest the question in meaning join the keyword candidates before fusion.
MEANING_POOL = FUSION_POOL
COVERAGE_WEIGHT = 0.5
# A query reads at most about this many rows per passage of the corpus: past it the most common single
# words are dropped (never below two terms), which bounds the slowest queries without changing the ranking
# of the benchmark's questions.
POSTINGS_BUDGET = 0.6
_PATH_WORDS_RE = re.compile(r"[A-Za-z0-9]+")

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents(
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha256 TEXT, title TEXT,
    format TEXT, passages INTEGER NOT NULL DEFAULT 0, chars INTEGER NOT NULL DEFAULT 0, error TEXT
);
CREATE TABLE IF NOT EXISTS passages(
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL, seq INTEGER NOT NULL,
    anchor TEXT, page INTEGER, title_path TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS passages_by_path ON passages(path, seq);
CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(title, heading, body, tokenize="{TOKENIZER}");
{VECTORS_SCHEMA}
"""

_META_TEXT = ("name", "root", "title", "description", "html", "indexed_at")


class IndexUnavailable(Exception):
    """An index file that cannot be opened or is not one of ours; the message says what to do."""


def _connect(path: Path, *, writable: bool) -> sqlite3.Connection:
    if writable:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
    else:
        if not path.is_file():
            raise IndexUnavailable(f"no index at {path}")
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA busy_timeout=5000")
    return connection


class Fts5Index:
    """One corpus's index file (see the module docstring); implements ``backend.CorpusIndex``."""

    def __init__(self, name: str, path: Path, *, writable: bool = False) -> None:
        self.name = name
        self.path = path
        self._db = _connect(path, writable=writable)
        self._in_transaction = False
        self._vocabulary: int | None = None
        self.vectors = PassageVectors(self._db)
        if writable:
            self._db.executescript(_SCHEMA)
            version = self._meta_value("schema_version")
            if version is None:
                self._set_meta({"schema_version": SCHEMA_VERSION, "name": name})
            elif int(version) != SCHEMA_VERSION:
                raise IndexUnavailable(
                    f"{path} was written by another version of the index (schema {version}); "
                    f"remove it and run `./run.sh corpus reindex {name}`."
                )
        elif self._meta_value("schema_version") != str(SCHEMA_VERSION):
            raise IndexUnavailable(
                f"{path} is not a corpus index of this version; run `./run.sh corpus reindex {name}`."
            )

    # --- writing ----------------------------------------------------------------------------------

    def begin(self) -> None:
        if not self._in_transaction:
            self._db.execute("BEGIN IMMEDIATE")
            self._in_transaction = True

    def commit(self) -> None:
        if self._in_transaction:
            self._db.execute("COMMIT")
            self._in_transaction = False

    def files(self) -> dict[str, FileState]:
        rows = self._db.execute("SELECT path, size, mtime_ns, error FROM documents")
        return {path: FileState(size, mtime, error) for path, size, mtime, error in rows}

    @property
    def db(self) -> sqlite3.Connection:
        """The connection, for the embedding pass (``vectors.embed_passages``) that writes beside the index."""
        return self._db

    def _drop_passages(self, path: str) -> None:
        rowids = [(row,) for (row,) in self._db.execute("SELECT rowid FROM passages WHERE path = ?", (path,))]
        if rowids:
            self._db.executemany("DELETE FROM passages_fts WHERE rowid = ?", rowids)
            self._db.executemany("DELETE FROM passage_vectors WHERE rowid = ?", rowids)
            self._db.execute("DELETE FROM passages WHERE path = ?", (path,))

    def replace_document(self, document: IndexedDocument) -> None:
        self.begin()
        self._drop_passages(document.path)
        title_words = " ".join([document.title, *_PATH_WORDS_RE.findall(document.path)])
        start = self._db.execute("SELECT COALESCE(MAX(rowid), 0) FROM passages").fetchone()[0] + 1
        rows, texts = [], []
        for offset, passage in enumerate(document.passages):
            rowid = start + offset
            rows.append(
                (
                    rowid,
                    passage.id,
                    document.path,
                    passage.seq,
                    passage.anchor,
                    passage.page,
                    json.dumps(passage.title_path),
                )
            )
            headings = " ".join(dict.fromkeys([*passage.title_path[1:], *passage.headings]))
            texts.append((rowid, title_words, headings, passage.text))
        self._db.executemany(
            "INSERT INTO passages(rowid, id, path, seq, anchor, page, title_path) VALUES (?,?,?,?,?,?,?)", rows
        )
        self._db.executemany("INSERT INTO passages_fts(rowid, title, heading, body) VALUES (?,?,?,?)", texts)
        self._db.execute(
            "INSERT OR REPLACE INTO documents(path, size, mtime_ns, sha256, title, format, passages, chars, error) "
            "VALUES (?,?,?,?,?,?,?,?,NULL)",
            (
                document.path,
                document.size,
                document.mtime_ns,
                document.sha256,
                document.title,
                document.format,
                len(document.passages),
                sum(len(p.text) for p in document.passages),
            ),
        )

    def mark_unreadable(self, path: str, size: int, mtime_ns: int, reason: str) -> None:
        self.begin()
        self._drop_passages(path)
        self._db.execute(
            "INSERT OR REPLACE INTO documents(path, size, mtime_ns, passages, chars, error) VALUES (?,?,?,0,0,?)",
            (path, size, mtime_ns, reason),
        )

    def remove(self, paths: Iterable[str]) -> None:
        self.begin()
        for path in paths:
            self._drop_passages(path)
            self._db.execute("DELETE FROM documents WHERE path = ?", (path,))

    def finish(self) -> None:
        """Merge the index's segments (faster queries) and fold the WAL back into the file."""
        self.commit()
        self._db.execute("INSERT INTO passages_fts(passages_fts) VALUES ('optimize')")
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # --- meta ---------------------------------------------------------------------------------------

    def _meta_value(self, key: str) -> str | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise IndexUnavailable(
                f"{self.path} is not a readable corpus index ({exc}); run `./run.sh corpus reindex {self.name}`."
            ) from None
        return row[0] if row else None

    def _set_meta(self, values: dict[str, str | int]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [(k, str(v)) for k, v in values.items()]
        )

    def write_meta(self, **values: str | int) -> None:
        self.begin()
        self._set_meta(values)

    def meta(self) -> CorpusMeta:
        stored = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        documents, passages, chars, size, unreadable = self._db.execute(
            "SELECT COUNT(*) FILTER (WHERE error IS NULL), COALESCE(SUM(passages), 0), COALESCE(SUM(chars), 0), "
            "COALESCE(SUM(size) FILTER (WHERE error IS NULL), 0), COUNT(*) FILTER (WHERE error IS NOT NULL) FROM documents"
        ).fetchone()
        return CorpusMeta(
            **{key: stored.get(key, "") for key in _META_TEXT},
            exclude=tuple(json.loads(stored.get("exclude", "[]"))),
            documents=documents,
            passages=passages,
            text_chars=chars,
            source_bytes=size,
            unreadable=unreadable,
            splitter_version=int(stored.get("splitter_version") or 0),
            follow_links=stored.get("follow_links") == "1",
        )

    # --- reading ------------------------------------------------------------------------------------

    _PASSAGE_COLUMNS = "p.id, p.path, p.seq, p.anchor, p.page, p.title_path, f.body, COALESCE(d.sha256, '')"
    _PASSAGE_JOIN = (
        "passages AS p JOIN passages_fts AS f ON f.rowid = p.rowid LEFT JOIN documents AS d ON d.path = p.path"
    )

    def _stored(self, row: tuple) -> StoredPassage:
        passage_id, path, seq, anchor, page, title_path, text, sha = row
        return StoredPassage(
            id=passage_id,
            corpus=self.name,
            path=path,
            seq=seq,
            anchor=anchor,
            page=page,
            title_path=tuple(json.loads(title_path)),
            text=text,
            file_sha256=sha,
        )

    def _analyse(self, query: str) -> tuple[str | None, list[str]]:
        """The MATCH expression for ``query`` and the Porter stems of its words (for snippets).

        A single word found in more than ``COMMON_FRACTION`` of the passages is left out when other terms
        remain: its idf is about zero, so it ranks nothing, yet reading its long posting list is most of
        the query's time ("python" in the Python docs, "sqlite" in SQLite's). Then, while the terms would
        still read more than ``POSTINGS_BUDGET`` rows per passage, the most common single word goes."""
        terms = query_terms(query)
        if not terms:
            return None, []
        if self._vocabulary is None:
            self._db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.corpus_vocab USING fts5vocab(main, passages_fts, 'row')"
            )
            self._db.execute(
                f'CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_words USING fts5(word, tokenize="{TOKENIZER}")'
            )
            self._db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_tokens USING fts5vocab(temp, query_words, 'instance')"
            )
            self._vocabulary = self._db.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
        self._db.execute("DELETE FROM temp.query_words")
        self._db.executemany(
            "INSERT INTO temp.query_words(rowid, word) VALUES (?, ?)",
            list(enumerate((t[1:-1].replace('""', '"') for t in terms), 1)),
        )
        tokens: dict[int, list[tuple[str, int]]] = {}
        for row, term, frequency in self._db.execute(
            "SELECT q.doc, q.term, COALESCE(v.doc, 0) FROM temp.query_tokens AS q "
            "LEFT JOIN temp.corpus_vocab AS v ON v.term = q.term ORDER BY q.doc, q.offset"
        ):
            tokens.setdefault(row, []).append((term, frequency))
        common = self._vocabulary * COMMON_FRACTION
        kept = [
            (row, term)
            for row, term in enumerate(terms, 1)
            if not (len(tokens.get(row, ())) == 1 and tokens[row][0][1] > common)
        ]
        if POSTINGS_BUDGET:
            # The most common single words go first while the query would read more rows than the budget.
            frequency = {row: sum(f for _, f in tokens.get(row, ())) for row, _ in kept}
            while len(kept) > 2 and sum(frequency[row] for row, _ in kept) > POSTINGS_BUDGET * self._vocabulary:
                singles = [(frequency[row], row) for row, _ in kept if len(tokens.get(row, ())) == 1]
                if not singles:
                    break
                drop = max(singles)[1]
                kept = [(row, term) for row, term in kept if row != drop]
        kept = [term for _, term in kept]
        stems = list(dict.fromkeys(token for found in tokens.values() for token, _ in found))
        return " OR ".join(kept or terms), stems

    def search(self, query: str, k: int, *, meaning: np.ndarray | None = None) -> list[Hit]:
        """The best ``k`` passages. Keywords: bm25 over the weighted columns picks ``RERANK_POOL`` candidates,
        then each score is multiplied by ``1 + COVERAGE_WEIGHT × the share of the query's words the passage
        holds`` (Lucene's coordination factor), so a passage with every term beats one that repeats a few.
        With ``meaning`` (the query's vector, from the embedder the index was embedded with) the
        ``MEANING_POOL`` passages nearest it join in and both rankings are fused (``embeddings.fuse``)."""
        if k <= 0:
            return []
        expression, stems = self._analyse(query)
        keyword = self._keyword_ranking(expression, max(k, RERANK_POOL), stems) if expression else []
        nearest: list[tuple[int, float]] = []
        if meaning is not None:
            rowids, matrix = self.vectors.matrix()
            if len(matrix) and matrix.shape[1] == len(meaning):
                nearest = [(int(rowids[row]), score) for row, score in rank_by_meaning(meaning, matrix, MEANING_POOL)]
        scores = [(rowid, score) for rowid, score, _ in keyword]
        ranked = fuse(scores, nearest, k) if nearest else scores[:k]
        known = {rowid: passage for rowid, _, passage in keyword}
        missing = [rowid for rowid, _ in ranked if rowid not in known]
        known.update(self._passages_by_rowid(missing))
        pattern = stem_pattern(stems)
        return [
            Hit(
                passage=known[rowid],
                score=round(score, 3),
                snippet=make_snippet(known[rowid].text, stems, pattern=pattern),
            )
            for rowid, score in ranked
            if rowid in known
        ]

    def _passages_by_rowid(self, rowids: list[int]) -> dict[int, StoredPassage]:
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        return {
            row[0]: self._stored(row[1:])
            for row in self._db.execute(
                f"SELECT p.rowid, {self._PASSAGE_COLUMNS} FROM {self._PASSAGE_JOIN} WHERE p.rowid IN ({marks})", rowids
            )
        }

    def _keyword_ranking(self, expression: str, pool: int, stems: list[str]) -> list[tuple[int, float, StoredPassage]]:
        """(rowid, score, passage) of the keyword candidates, best first (see ``search``)."""
        ranked = self._db.execute(
            "SELECT rowid, bm25(passages_fts, ?, ?, ?) AS score FROM passages_fts WHERE passages_fts MATCH ? "
            "ORDER BY score LIMIT ?",
            (TITLE_WEIGHT, HEADING_WEIGHT, BODY_WEIGHT, expression, pool),
        ).fetchall()
        passages = self._passages_by_rowid([rowid for rowid, _ in ranked])
        pattern = stem_pattern(stems)
        scored = [
            (rowid, -score * (1 + COVERAGE_WEIGHT * coverage(passages[rowid], stems, pattern)), passages[rowid])
            for rowid, score in ranked
        ]
        scored.sort(key=lambda item: item[1], reverse=True)
        return scored

    def passage(self, passage_id: str) -> StoredPassage | None:
        row = self._db.execute(
            f"SELECT {self._PASSAGE_COLUMNS} FROM {self._PASSAGE_JOIN} WHERE p.id = ?", (passage_id,)
        ).fetchone()
        return self._stored(row) if row else None

    def neighbours(self, passage_id: str, around: int) -> list[StoredPassage]:
        """The passage and up to ``around`` passages on each side of it in the same file, in order."""
        found = self._db.execute("SELECT path, seq FROM passages WHERE id = ?", (passage_id,)).fetchone()
        if found is None:
            return []
        path, seq = found
        rows = self._db.execute(
            f"SELECT {self._PASSAGE_COLUMNS} FROM {self._PASSAGE_JOIN} WHERE p.path = ? AND p.seq BETWEEN ? AND ? ORDER BY p.seq",
            (path, seq - around, seq + around),
        ).fetchall()
        return [self._stored(row) for row in rows]

    def passages_in_order(self) -> list[tuple[str, str, str]]:
        """Every passage's id, file and text, file by file in reading order (for audits and benchmarks)."""
        return self._db.execute(
            "SELECT p.id, p.path, f.body FROM passages AS p JOIN passages_fts AS f ON f.rowid = p.rowid ORDER BY p.path, p.seq"
        ).fetchall()

    def close(self) -> None:
        try:
            self.commit()
        finally:
            self._db.close()
