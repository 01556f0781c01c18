"""Read connections to the corpus indexes, kept open between tool calls.

Why: opening an index and warming its page cache costs more than a search, and every research sub-agent
of every run searches. ``borrow(name, path)`` lends one idle read-only ``Fts5Index`` of that file to one
thread at a time (an sqlite3 connection must not serve two threads at once) and takes it back afterwards;
a file replaced since the connection opened it (``corpus remove`` then ``add``) gets a fresh connection.
At most ``IDLE_PER_INDEX`` idle connections are kept per file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .fts5 import Fts5Index

IDLE_PER_INDEX = 4

_idle: dict[tuple[str, str], list[tuple[int, Fts5Index]]] = {}
_lock = threading.Lock()


def _identity(path: Path) -> int:
    return os.stat(path).st_ino


@contextmanager
def borrow(name: str, path: Path) -> Iterator[Fts5Index]:
    """A read-only index of ``path`` for this thread; raises what ``Fts5Index`` raises when it cannot open."""
    key = (name, str(path))
    inode = _identity(path)
    index: Fts5Index | None = None
    with _lock:
        pool = _idle.setdefault(key, [])
        while pool:
            opened_inode, candidate = pool.pop()
            if opened_inode == inode:
                index = candidate
                break
            candidate.close()
    if index is None:
        index = Fts5Index(name, path)
    healthy = False
    try:
        yield index
        healthy = True
    finally:
        with _lock:
            pool = _idle.setdefault(key, [])
            if healthy and len(pool) < IDLE_PER_INDEX:
                pool.append((inode, index))
                index = None
        if index is not None:
            index.close()


def close_all() -> None:
    with _lock:
        pools = list(_idle.values())
        _idle.clear()
    for pool in pools:
        for _, index in pool:
            index.close()
