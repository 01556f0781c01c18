"""The run ledger: what one run has spent and seen, shared by the orchestrator and every sub-agent.

Sub-agents run as separate graphs with their own state, so run-wide facts (usage per role, sources in
first-seen order, the full text of every page read) cannot live in any one agent's state. They live
here, keyed by the LangGraph run id, and the orchestrator copies them into its final state.

A ledger is created on first use and dropped by ``close_ledger`` when the run ends. The registry is
bounded, so a run that dies before its end hook cannot leak memory for long.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from langgraph.config import get_config

from ..protocol.sender import current_sender
from ..protocol.events import utc_now_iso
from ..handover.contract import Findings

_MAX_OPEN_LEDGERS = 256


CACHED_TOKEN_WEIGHT = 0.1


@dataclass
class RoleCounters:
    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    reported_cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def budget_tokens(self) -> float:
        """Tokens as the token ceiling counts them: cached input is cheap, so it weighs a tenth."""
        cached = min(self.cached_tokens, self.input_tokens)
        return self.input_tokens - cached + cached * CACHED_TOKEN_WEIGHT + self.output_tokens


@dataclass(frozen=True)
class Halt:
    """Why the whole run stopped early. ``reason`` is the end-status reason code."""

    reason: str
    detail: str
    ceiling: str | None = None


@dataclass
class SourceRecord:
    index: int
    url: str
    title: str
    domain: str


@dataclass
class EvidenceRecord:
    """Text the run actually retrieved, kept whole for citation checks."""

    id: str
    url: str
    title: str
    kind: str
    retrieved_at: str
    agent: str
    sha256: str
    text: str


@dataclass
class RunLedger:
    run_key: str
    started_monotonic: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=utc_now_iso)
    usage: dict[str, RoleCounters] = field(default_factory=dict)
    usage_by_task: dict[str, RoleCounters] = field(default_factory=dict)
    sources: OrderedDict[str, SourceRecord] = field(default_factory=OrderedDict)
    evidence: list[EvidenceRecord] = field(default_factory=list)
    findings: list[tuple[str, Findings]] = field(default_factory=list)
    notices: set[str] = field(default_factory=set)
    halt: Halt | None = None
    budget_soft: str | None = None
    wrap_up_requested: bool = False
    halted_tasks: dict[str, str] = field(default_factory=dict)
    compactions: int = 0
    messages_summarized: int = 0
    research_started: bool = False
    report_delivered: bool = False
    clarification_requested: bool = False
    # The delivered report's citations as ``{index, url, evidence_id, verified, reason}`` and the counts of
    # what vetting did to them (valid, repaired, removed, flagged); set once a report leaves the run.
    citations: list[dict[str, Any]] = field(default_factory=list)
    citation_summary: dict[str, int] | None = None
    closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stop_requested: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started_monotonic

    def role(self, role: str) -> RoleCounters:
        with self._lock:
            return self.usage.setdefault(role, RoleCounters())

    def task(self, task_id: str) -> RoleCounters:
        with self._lock:
            return self.usage_by_task.setdefault(task_id, RoleCounters())

    def totals(self) -> RoleCounters:
        total = RoleCounters()
        for counters in list(self.usage.values()):
            total.model_calls += counters.model_calls
            total.tool_calls += counters.tool_calls
            total.input_tokens += counters.input_tokens
            total.output_tokens += counters.output_tokens
            total.cached_tokens += counters.cached_tokens
            total.cost_usd += counters.cost_usd
            total.reported_cost_usd += counters.reported_cost_usd
        return total

    def halt_run(self, halt: Halt) -> bool:
        """Stop the whole run; True only for the first halt, so its event is sent once."""
        return self._set_once("halt", halt)

    def request_wrap_up(self) -> bool:
        """Note that the user asked the run to finish with what it has; True only the first time."""
        return self._set_once("wrap_up_requested", True)

    def request_stop(self, halt: Halt) -> bool:
        """Halt the run at the user's request and wake every call racing ``stop_requested``."""
        first = self.halt_run(halt)
        self._stop_requested.set()
        return first

    async def stop_requested(self) -> None:
        """Returns once the user asked the run to stop; calls in flight race it."""
        await self._stop_requested.wait()

    def enter_budget_soft_stage(self, ceiling: str) -> bool:
        """Note that a ceiling passed its wrap-up mark; True only the first time in the run."""
        return self._set_once("budget_soft", ceiling)

    def _set_once(self, name: str, value: Any) -> bool:
        """Set a run-wide stage unless it is set already; True only for the first caller, whose event is sent."""
        with self._lock:
            if getattr(self, name) not in (None, False):
                return False
            setattr(self, name, value)
            return True

    def record_compaction(self, messages_summarized: int) -> None:
        """Count one context compaction; the summarized work keeps counting against the budget."""
        with self._lock:
            self.compactions += 1
            self.messages_summarized += messages_summarized

    def add_source(self, url: str, title: str = "") -> SourceRecord | None:
        """Record a URL; returns the new record, or None when the run has seen it already."""
        key = normalise_url(url)
        with self._lock:
            if key in self.sources:
                existing = self.sources[key]
                if title and not existing.title:
                    existing.title = title
                return None
            record = SourceRecord(index=len(self.sources) + 1, url=url, title=title or domain_of(url), domain=domain_of(url))
            self.sources[key] = record
            return record

    def add_evidence(self, *, url: str, title: str, kind: str, text: str) -> EvidenceRecord:
        sender = current_sender.get()
        digest = hashlib.sha256(text.encode()).hexdigest()
        with self._lock:
            for record in self.evidence:
                if record.url == url and record.sha256 == digest:
                    return record
            record = EvidenceRecord(
                id=f"ev{len(self.evidence) + 1}",
                url=url,
                title=title,
                kind=kind,
                retrieved_at=utc_now_iso(),
                agent=sender.role,
                sha256=digest,
                text=text,
            )
            self.evidence.append(record)
            return record

    def first_notice(self, key: str) -> bool:
        """True the first time ``key`` is noticed in this run (for say-it-once messages)."""
        with self._lock:
            if key in self.notices:
                return False
            self.notices.add(key)
            return True


_ledgers: OrderedDict[str, RunLedger] = OrderedDict()
_registry_lock = threading.Lock()


def run_key(config: dict[str, Any] | None = None) -> str:
    """The id that is shared by a run's orchestrator and its sub-agents."""
    if config is None:
        try:
            config = get_config()
        except RuntimeError:
            return "no-run"
    configurable = config.get("configurable") or {}
    metadata = config.get("metadata") or {}
    for candidate in (configurable.get("run_id"), metadata.get("run_id"), configurable.get("thread_id")):
        if candidate:
            return str(candidate)
    return "no-run"


def current_ledger(config: dict[str, Any] | None = None) -> RunLedger:
    key = run_key(config)
    with _registry_lock:
        ledger = _ledgers.get(key)
        if ledger is None:
            ledger = _ledgers[key] = RunLedger(run_key=key)
            while len(_ledgers) > _MAX_OPEN_LEDGERS:
                _ledgers.popitem(last=False)
        return ledger


def close_ledger(key: str) -> None:
    with _registry_lock:
        ledger = _ledgers.pop(key, None)
    if ledger is not None:
        ledger.closed = True


def normalise_url(url: str) -> str:
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/") or "/"
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}" + (f"?{parts.query}" if parts.query else "")


def domain_of(url: str) -> str:
    host = urlsplit(url).hostname or ""
    return host.removeprefix("www.")
