"""Indexing a corpus directory, incrementally: only files whose size or mtime changed are read again.

Contract of ``index_corpus(spec, index, progress=...)``:
- walks ``spec.root`` (following symlinks, never twice into the same real directory), skipping hidden
  entries, ``spec.exclude`` patterns (matched against each name and each relative path) and formats the
  corpus does not read; a symlink whose target lies outside the directory is not followed unless
  ``spec.follow_links`` (``corpus add --follow-links``), and the summary names each one left out;
- a file is read when it is new, its size or mtime changed, or the index was made from another directory,
  HTML reading or ``SPLITTER_VERSION`` (then every file is read again); a file no longer there leaves the
  index; an unchanged file is not opened at all;
- files are read in ``workers`` processes (the machine's cores) and written in batches, each batch
  committed, so a server reading the index sees whole files only;
- a file that cannot be read is reported to ``progress`` and in the summary with its reason, recorded so
  it is not retried until it changes, and never stops the run;
- returns an ``IndexSummary``; raises ``CorpusError`` only when the directory itself is unusable.
"""

from __future__ import annotations

import fnmatch
import json
import os
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..domain.clock import utc_now_iso
from ..settings.corpora import CorpusSpec
from .backend import CorpusIndex, IndexedDocument
from .formats import Unreadable, format_of, read_document
from .passages import build_passages

# Bump when splitting changes what passages a file gives, so every corpus is read again on its next reindex.
SPLITTER_VERSION = 1
_BATCH_FILES = 200
_BATCH_SECONDS = 2.0
_POOL_MIN_FILES = 24
_IN_FLIGHT_PER_WORKER = 8


class CorpusError(Exception):
    """The corpus cannot be indexed at all (its directory is missing or unreadable)."""


@dataclass(frozen=True)
class SourceFile:
    relative: str
    absolute: str
    size: int
    mtime_ns: int


@dataclass
class IndexSummary:
    name: str
    files: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    empty: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    still_unreadable: int = 0
    passages_written: int = 0
    bytes_read: int = 0
    documents: int = 0
    passages: int = 0
    elapsed_s: float = 0.0
    rebuilt: str = ""
    links_outside: list[str] = field(default_factory=list)
    """Symlinks (relative paths) that lead outside the directory and were not followed."""

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.unreadable)


class Progress(Protocol):
    def start(self, files: int, total_bytes: int) -> None: ...

    def advance(self, *, passages: int, size: int) -> None: ...

    def unreadable(self, path: str, reason: str) -> None: ...

    def finish(self) -> None: ...


class _Silent:
    def start(self, files: int, total_bytes: int) -> None:
        pass

    def advance(self, *, passages: int, size: int) -> None:
        pass

    def unreadable(self, path: str, reason: str) -> None:
        pass

    def finish(self) -> None:
        pass


def _excluded(name: str, relative: str, patterns: tuple[str, ...]) -> bool:
    return name.startswith(".") or any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(relative, p) for p in patterns)


def walk_corpus(spec: CorpusSpec, links_outside: list[str] | None = None) -> Iterator[SourceFile]:
    """Every file of the corpus that it indexes, in a stable order; each symlink left out because it leads
    outside the directory (without ``spec.follow_links``) is appended to ``links_outside``."""
    root = Path(spec.root)
    inside = os.path.realpath(root)

    def leads_outside(path: str, relative: str) -> bool:
        if spec.follow_links or not os.path.islink(path):
            return False
        target = os.path.realpath(path)
        if os.path.commonpath([inside, target]) == inside:
            return False
        if links_outside is not None:
            links_outside.append(relative)
        return True

    seen_dirs: set[str] = set()
    for directory, subdirs, names in os.walk(root, followlinks=True):
        real = os.path.realpath(directory)
        if real in seen_dirs:
            subdirs[:] = []
            continue
        seen_dirs.add(real)
        relative_dir = os.path.relpath(directory, root)
        prefix = "" if relative_dir == "." else relative_dir.replace(os.sep, "/") + "/"
        subdirs[:] = sorted(
            d
            for d in subdirs
            if not _excluded(d, prefix + d, spec.exclude) and not leads_outside(os.path.join(directory, d), prefix + d)
        )
        for name in sorted(names):
            relative = prefix + name
            if _excluded(name, relative, spec.exclude) or format_of(name) is None:
                continue
            absolute = os.path.join(directory, name)
            if leads_outside(absolute, relative):
                continue
            try:
                stat = os.stat(absolute)
            except OSError:
                continue  # a dangling symlink: nothing to read
            yield SourceFile(relative, absolute, stat.st_size, stat.st_mtime_ns)


@dataclass(frozen=True)
class _Read:
    file: SourceFile
    document: IndexedDocument | None
    error: str | None


def _read(name: str, html_mode: str, file: SourceFile) -> _Read:
    """Read and split one file; runs in a worker process."""
    try:
        extracted = read_document(file.absolute, file.relative, html_mode)  # type: ignore[arg-type]
    except Unreadable as exc:
        return _Read(file, None, str(exc))
    passages = build_passages(name, file.relative, extracted.sections)
    document = IndexedDocument(
        path=file.relative,
        size=file.size,
        mtime_ns=file.mtime_ns,
        sha256=extracted.sha256,
        title=extracted.title,
        format=extracted.format,
        passages=passages,
    )
    return _Read(file, document, None)


def _rebuild_reason(spec: CorpusSpec, index: CorpusIndex) -> str:
    meta = index.meta()
    stored = {"root": meta.root, "html": meta.html}
    if not meta.indexed_at:
        return ""
    if stored["root"] and stored["root"] != spec.root:
        return f"the directory changed from {stored['root']}"
    if stored["html"] and stored["html"] != spec.html:
        return f"HTML reading changed from {stored['html']} to {spec.html}"
    if meta.splitter_version != SPLITTER_VERSION:
        return "the passage splitter changed"
    return ""


def index_corpus(
    spec: CorpusSpec, index: CorpusIndex, *, progress: Progress | None = None, workers: int | None = None
) -> IndexSummary:
    started = time.monotonic()
    progress = progress or _Silent()
    root = Path(spec.root)
    if not root.is_dir():
        raise CorpusError(f"the directory of corpus {spec.name!r}, {spec.root}, does not exist or is not a directory.")
    if not os.access(root, os.R_OK | os.X_OK):
        raise CorpusError(f"the directory of corpus {spec.name!r}, {spec.root}, cannot be read.")
    summary = IndexSummary(name=spec.name)
    summary.rebuilt = _rebuild_reason(spec, index)
    known = index.files()
    if summary.rebuilt:
        index.remove(list(known))
        index.commit()
        known = {}
    files = list(walk_corpus(spec, summary.links_outside))
    summary.files = len(files)
    present = {f.relative for f in files}
    gone = [path for path in known if path not in present]
    if gone:
        index.remove(gone)
        summary.removed = len(gone)
    todo: list[SourceFile] = []
    for file in files:
        state = known.get(file.relative)
        if state is not None and state.size == file.size and state.mtime_ns == file.mtime_ns:
            if state.error:
                summary.still_unreadable += 1
            else:
                summary.unchanged += 1
            continue
        todo.append(file)
    progress.start(len(todo), sum(f.size for f in todo))
    last_commit = time.monotonic()
    pending = 0
    for result in _read_all(spec, todo, workers):
        file = result.file
        if result.document is None:
            index.mark_unreadable(file.relative, file.size, file.mtime_ns, result.error or "could not be read")
            summary.unreadable.append((file.relative, result.error or "could not be read"))
            progress.unreadable(file.relative, result.error or "could not be read")
            progress.advance(passages=0, size=file.size)
        else:
            try:
                index.replace_document(result.document)
            except Exception as exc:  # noqa: BLE001 - e.g. an id collision: this file is skipped, not the corpus
                reason = f"could not be written to the index ({type(exc).__name__})"
                index.mark_unreadable(file.relative, file.size, file.mtime_ns, reason)
                summary.unreadable.append((file.relative, reason))
                progress.unreadable(file.relative, reason)
                progress.advance(passages=0, size=file.size)
                continue
            if file.relative in known and not known[file.relative].error:
                summary.updated += 1
            else:
                summary.added += 1
            summary.passages_written += len(result.document.passages)
            summary.empty += not result.document.passages
            progress.advance(passages=len(result.document.passages), size=file.size)
        summary.bytes_read += file.size
        pending += 1
        if pending >= _BATCH_FILES or time.monotonic() - last_commit > _BATCH_SECONDS:
            index.commit()
            pending, last_commit = 0, time.monotonic()
    index.write_meta(
        name=spec.name,
        root=spec.root,
        title=spec.title,
        description=spec.description,
        html=spec.html,
        exclude=_json_list(spec.exclude),
        follow_links=int(spec.follow_links),
        indexed_at=utc_now_iso(),
        splitter_version=SPLITTER_VERSION,
    )
    if summary.changed or summary.rebuilt:
        index.finish()
    else:
        index.commit()
    progress.finish()
    meta = index.meta()
    summary.documents, summary.passages = meta.documents, meta.passages
    summary.elapsed_s = time.monotonic() - started
    return summary


def _json_list(items: tuple[str, ...]) -> str:
    return json.dumps(list(items))


def _read_all(spec: CorpusSpec, todo: list[SourceFile], workers: int | None) -> Iterator[_Read]:
    """Each file read and split, in worker processes when there are enough files to pay for them."""
    workers = workers or os.cpu_count() or 1
    if workers <= 1 or len(todo) < _POOL_MIN_FILES:
        for file in todo:
            yield _read(spec.name, spec.html, file)
        return
    # Big files first, so the last worker is not left alone with the largest page.
    queue = deque(sorted(todo, key=lambda f: f.size, reverse=True))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        running: dict[Future[_Read], SourceFile] = {}
        while queue or running:
            while queue and len(running) < workers * _IN_FLIGHT_PER_WORKER:
                file = queue.popleft()
                running[pool.submit(_read, spec.name, spec.html, file)] = file
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                file = running.pop(future)
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - a reader that died takes its file with it, not the corpus
                    yield _Read(file, None, f"its reader failed ({type(exc).__name__})")
