"""Per-run objects owned by other packages: at most one of each type, released when the run closes.

The run's stores (usage, evidence, control, failures, recording) are the run's own; what a feature keeps
per run (the sandbox session, the named task, the MCP call slots) it attaches here under its own type, so
the run package never imports the features built on it.

Contract: ``get(kind)`` is the attached object of that type or None; ``attach(value)`` sets it (replacing
one of the same type); ``setdefault(kind, make)`` attaches ``make()`` once; on ``close_run`` every attached
object with a ``discard()`` method is discarded, so a feature frees what it holds without the run knowing it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

logger = logging.getLogger(__name__)


class Attachments:
    """One object per type, kept for one run."""

    def __init__(self) -> None:
        self._items: dict[type, Any] = {}
        self._lock = threading.Lock()

    def get(self, kind: type[T]) -> T | None:
        return self._items.get(kind)

    def attach(self, value: object) -> None:
        with self._lock:
            self._items[type(value)] = value

    def setdefault(self, kind: type[T], make: Callable[[], T]) -> T:
        with self._lock:
            value = self._items.get(kind)
            if value is None:
                value = self._items[kind] = make()
            return value

    def discard_all(self) -> None:
        with self._lock:
            items, self._items = list(self._items.values()), {}
        for item in items:
            discard = getattr(item, "discard", None)
            if callable(discard):
                try:
                    discard()
                except Exception:  # one feature's failure to free what it holds must not keep the others'
                    logger.exception("discarding %s failed", type(item).__name__)
