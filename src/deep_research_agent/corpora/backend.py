"""The search-backend interface every corpus index implements, and the records that cross it.

The indexer writes through it and the tools and the CLI read through it, so a deployment that outgrows
one SQLite file per corpus can point the same code at another engine (see the README: Postgres full-text
search is the first candidate). ``fts5.Fts5Index`` is the embedded implementation.

Contract of an index:
- ``files()`` is what the index knows of each file (size, mtime, and the reason when it was unreadable),
  keyed by the path relative to the corpus directory, so the indexer can skip unchanged files;
- ``replace_document`` swaps a file's passages for new ones in one step; ``mark_unreadable`` records a
  file that could not be read (so an unchanged broken file is not retried, and is still reported);
  ``remove`` forgets files; ``commit`` makes the writes visible to readers; ``finish`` compacts the index
  after a reindex;
- ``search(query, k)`` returns at most ``k`` hits, best first, never raising on odd user text (quotes,
  operators, lone punctuation); ``passage(id)`` and ``neighbours(id, n)`` read passages back whole;
- ``meta()`` describes the corpus (``CorpusMeta``) and ``write_meta`` updates it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .passages import Passage


@dataclass(frozen=True)
class FileState:
    size: int
    mtime_ns: int
    error: str | None = None


@dataclass(frozen=True)
class IndexedDocument:
    """One file's passages as the indexer hands them to the index."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    title: str
    format: str
    passages: Sequence[Passage]


@dataclass(frozen=True)
class StoredPassage:
    """A passage read back from an index, with what a citation of it needs."""

    id: str
    corpus: str
    path: str
    seq: int
    anchor: str | None
    page: int | None
    title_path: tuple[str, ...]
    text: str
    file_sha256: str


@dataclass(frozen=True)
class Hit:
    passage: StoredPassage
    score: float
    snippet: str = field(default="")


@dataclass(frozen=True)
class CorpusMeta:
    name: str
    root: str
    title: str
    description: str
    html: str
    exclude: tuple[str, ...]
    indexed_at: str
    documents: int
    passages: int
    text_chars: int
    source_bytes: int
    unreadable: int
    splitter_version: int = 0
    follow_links: bool = False


class CorpusIndex(Protocol):
    name: str

    def files(self) -> dict[str, FileState]: ...

    def replace_document(self, document: IndexedDocument) -> None: ...

    def mark_unreadable(self, path: str, size: int, mtime_ns: int, reason: str) -> None: ...

    def remove(self, paths: Iterable[str]) -> None: ...

    def commit(self) -> None: ...

    def finish(self) -> None: ...

    def search(self, query: str, k: int) -> list[Hit]: ...

    def passage(self, passage_id: str) -> StoredPassage | None: ...

    def neighbours(self, passage_id: str, around: int) -> list[StoredPassage]: ...

    def meta(self) -> CorpusMeta: ...

    def write_meta(self, **values: str | int) -> None: ...

    def close(self) -> None: ...
