"""The open runs: one ``Run`` per LangGraph run, shared by its orchestrator and every sub-agent.

Sub-agents run as separate graphs with their own state, so run-wide facts cannot live in any one
agent's state. They live in the run's stores, found by the run id in the LangGraph config:
- ``current_run()`` inside a graph run returns that run's stores, created on first use; outside a run
  it raises ``NoRunError``, unless code (a unit test, a tool called directly) opened one with ``bound_run``.
  Only the entry points call it (``boundary.py``: a hook or a tool looks its run up once and passes it
  down); everything they call takes the run, or one of its stores, as a parameter;
- ``close_run`` drops a run's stores when it ends or is cancelled, and discards what features attached to it (the sandbox session is deleted);
  the registry is bounded, so a run that dies before its end hook cannot leak memory for long.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from langgraph.config import get_config

from ..domain.clock import utc_now_iso
from ..evidence.store import EvidenceStore
from .attachments import Attachments
from .control import RunControl
from .failures import RunFailures
from .recording import RecordingLedger
from .usage import UsageMeter

_MAX_OPEN_RUNS = 256


class NoRunError(LookupError):
    """Run state was asked for outside a graph run and outside ``bound_run``."""


@dataclass
class Run:
    """One run's stores: what it spent, what it saw, what failed without failing it, and the signals that steer it.

    Only what every part of the run shares is a field; what one feature keeps per run is an attachment of a
    type that feature defines, so this package never imports the features built on it."""

    key: str
    started_at: str = field(default_factory=utc_now_iso)
    started_monotonic: float = field(default_factory=time.monotonic)
    usage: UsageMeter = field(default_factory=UsageMeter)
    evidence: EvidenceStore = field(default_factory=EvidenceStore)
    control: RunControl = field(default_factory=RunControl)
    failures: RunFailures = field(default_factory=RunFailures)
    """What failed without failing the run: unanswered retrieval calls and unconfirmed store writes."""
    recording: RecordingLedger = field(init=False)
    """Durable writes of the run still in flight; a failed one lands in ``failures``."""
    attachments: Attachments = field(default_factory=Attachments)
    """What features keep per run, each under a type of its own: the sandbox session (``sandbox/session.py``),
    the named task (``tasks/context.py``), the MCP call slots (``mcp/calls.py``), the MCP connections' opening
    statuses (``mcp/listing.py``), the skills applied (``extensions/skills.py``), the stop watcher
    (``delivery/stop.py``), the admission slot (``run/admission.py``), the texts the ledger saved
    (``run/ledger.py``) and whether this process has taken the run on (``lifecycle/opening.py``)."""

    def __post_init__(self) -> None:
        self.recording = RecordingLedger(self.failures)

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started_monotonic


_runs: OrderedDict[str, Run] = OrderedDict()
_registry_lock = threading.Lock()
_bound: ContextVar[Run | None] = ContextVar("bound_run", default=None)


def run_key(config: dict[str, Any] | None = None) -> str:
    """The id shared by a run's orchestrator and its sub-agents."""
    bound = _bound.get()
    if bound is not None:
        return bound.key
    resolved: Mapping[str, Any]
    if config is None:
        try:
            resolved = get_config()
        except RuntimeError as exc:
            raise NoRunError("no graph run is in progress") from exc
    else:
        resolved = config
    configurable = resolved.get("configurable") or {}
    metadata = resolved.get("metadata") or {}
    for candidate in (configurable.get("run_id"), metadata.get("run_id"), configurable.get("thread_id")):
        if candidate:
            return str(candidate)
    raise NoRunError("the run's config carries no run id")


def current_run(config: dict[str, Any] | None = None) -> Run:
    bound = _bound.get()
    if bound is not None:
        return bound
    key = run_key(config)
    with _registry_lock:
        run = _runs.get(key)
        if run is None:
            run = _runs[key] = Run(key=key)
            while len(_runs) > _MAX_OPEN_RUNS:
                _release(_runs.popitem(last=False)[1])
        return run


def close_run(key: str) -> None:
    with _registry_lock:
        run = _runs.pop(key, None)
    if run is not None:
        _release(run)


def _release(run: Run) -> None:
    run.control.close()
    run.attachments.discard_all()


def is_open(key: str) -> bool:
    with _registry_lock:
        return key in _runs


@contextmanager
def bound_run(run: Run | None = None) -> Iterator[Run]:
    """Make ``run`` (a fresh one by default) the current run for code outside a graph run."""
    run = run or Run(key="bound")
    token = _bound.set(run)
    try:
        yield run
    finally:
        _bound.reset(token)
