"""What failed during a run without failing it: retrieval calls the report had to do without, and store
writes that did not confirm. ``lifecycle/outcome.py`` reads both to name the run's outcome.

Contract: written only through ``RunFailures``' methods, under its lock; readers get copies.
- a retrieval failure is keyed by its tool and target (a query, a URL, an MCP call's arguments); a later
  success of the same tool on the same target clears it, because the report then was not written without it;
- a recording failure is never cleared: what was not stored is lost to later runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class RetrievalFailure:
    tool: str
    target: str
    message: str


@dataclass(frozen=True)
class RecordingFailure:
    """A store write that did not confirm: what was being recorded, and why it failed (no secrets)."""

    what: str
    detail: str


class RunFailures:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._retrieval: dict[tuple[str, str], RetrievalFailure] = {}
        self._recording: list[RecordingFailure] = []

    def retrieval_failed(self, tool: str, target: str, message: str) -> None:
        with self._lock:
            self._retrieval[(tool, target)] = RetrievalFailure(tool, target, message)

    def retrieval_succeeded(self, tool: str, target: str) -> None:
        with self._lock:
            self._retrieval.pop((tool, target), None)

    def retrieval(self) -> list[RetrievalFailure]:
        """Retrieval calls that failed and were not later answered."""
        with self._lock:
            return list(self._retrieval.values())

    def recording_failed(self, what: str, detail: str) -> None:
        with self._lock:
            self._recording.append(RecordingFailure(what, detail))

    def recording(self) -> list[RecordingFailure]:
        with self._lock:
            return list(self._recording)
