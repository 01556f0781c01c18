"""Named, resumable tasks in the orchestrator: resume a task's memory, show it compactly, diff a re-run, save it.

Contract (orchestrator only, inside the guards):
- at the start of a run with ``configurable.task``, the task's record and decisions are read from the
  store (``tasks/store.py``) and the evidence texts of its sources are taken into the run's evidence with
  the time each was fetched (``EvidenceStore.adopt``), so the report can cite a page an earlier run read
  without reading it again; a source whose text is no longer stored is left out (logged);
- while the task has an earlier run, every model call of the orchestrator sees, instead of the thread's
  earlier transcript, the current turn preceded by the task view (``tasks/view.py``);
- a ``submit_report`` of a run that researched again (a research unit handed back findings) on a task
  with an earlier run gets the "What changed since the last run" section appended (``tasks/diff.py``)
  after the report gate, and a ``task_diff`` event is sent;
- a run a schedule started (``configurable.schedule``, ``tasks/digest.py``) gets its digest instead: the
  report opens with "What changed since <date>" (on the task's first run, that there is nothing to compare
  with yet); when nothing material changed it delivers the short "nothing material changed" digest under
  the draft's title rather than the report again, and records no claims for it;
- the digest and the "what changed" section are written in the run's report language (``RunLanguage``, told
  at the orchestrator's first model call): for a language other than English, the ``translator`` gives the
  wording (``tasks/translation.py``: one utility-model call per language per process) when the report is
  submitted, kept on the ``TaskContext`` so ``finish_task``'s digest says the same; a translation that fails
  or cannot be used leaves the English wording and one ``status: warning`` (``digest_in_english``) saying
  why, and the run goes on;
- ``finish_task`` (called by the lifecycle once the end status is known, before the outcome) saves the
  task's record merged with this run: its question, findings and gaps, the latest version of each source,
  the report, the end reason, the outcome as it stands before the save, and the cost so far; a failed write is a recording
  failure of the run (``run/recording.py``). A scheduled run's save also adds it to the task's digests
  (``DigestEntry``), a run that failed before its task was opened (a refused setting) included, and
  ``finish_task`` returns its ``Digest`` for the run's ``digest`` state key.
A ``configurable.task`` that is not a usable name is a ``status: warning`` and the run goes on untasked.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import OmitFromInput
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.store.base import BaseStore
from langgraph.types import Command

from ..domain.claims import CitationSummary, no_claims
from ..domain.clock import utc_now_iso
from ..domain.conversation import last_user_index, latest_user_text
from ..domain.knobs import KnobError, callable_knob
from ..domain.names import EvidenceKind, ToolName, WarningReason
from ..domain.reader import ENGLISH, RunLanguage, language_name
from ..domain.secrets import redact
from ..domain.url_policy import UrlPolicy
from ..protocol.events import TaskDiff, WarningStatus, emit
from ..run import Run, UsageMeter, run_hook, stored_evidence
from ..run.archive import evidence_record
from ..run.owner import run_user
from .context import TaskContext
from .decisions import record_decision, search_decisions, task_decisions
from .diff import section, task_diff
from .digest import (
    Digest,
    build_digest,
    digest_section,
    first_section,
    headline,
    material,
    opening_with,
    schedule_of,
    unchanged_report,
)
from .store import (
    MAX_DIGESTS,
    DigestEntry,
    TaskFinding,
    TaskNameError,
    TaskRecord,
    TaskSource,
    load_task,
    save_task,
    task_of,
)
from .view import render_view
from .wording import ENGLISH_WORDING, DigestWording

# The digest's wording in a language (a code), metered on the run's usage: ``translation.WordingTranslator``.
Translator = Callable[[UsageMeter, str], Awaitable[DigestWording]]

logger = logging.getLogger(__name__)

TASK_AGENT = "task"


async def open_task(store: BaseStore | None, run: Run, config: dict[str, Any]) -> None:
    """Load the run's named task (``configurable.task``) into the run (an attachment): its record, decisions and the
    evidence texts of its earlier runs. The lifecycle calls it as the run starts, so a task costs the graph
    no step of its own."""
    try:
        name = task_of(config)
    except TaskNameError as exc:
        emit(WarningStatus(reason=WarningReason.CONFIG, detail=f"{exc}; the run goes on without a task."))
        return
    if name is None:
        return
    user = run_user(config)
    thread_id = str((config.get("configurable") or {}).get("thread_id") or "")
    previous = await load_task(store, user, name)
    context = TaskContext(name=name, user=user, thread_id=thread_id, previous=previous, schedule=schedule_of(config))
    if previous is not None:
        context.decisions = await _read(task_decisions(store, user, name), default=[])
        context.adopted = await _adopt_sources(store, run, previous)
    run.attachments.attach(context)


class TaskState(AgentState):
    """A scheduled run's digest (``tasks/digest.Digest``), for clients and the run's webhook: output only."""

    digest: NotRequired[Annotated[dict[str, Any] | None, OmitFromInput]]


class TaskMiddleware(AgentMiddleware):
    """Shows and diffs the run's named task (which ``open_task`` loaded and ``finish_task`` saves); gives the
    decision tools; ``translator`` gives the digest's wording in a report language other than English;
    ``public_url`` (where users reach this server, or empty) starts a digest's report link."""

    state_schema = TaskState
    tools = [record_decision, search_decisions]

    def __init__(self, *, translator: Translator, public_url: str = "") -> None:
        callable_knob(type(self).__name__, "translator", translator)
        if not isinstance(public_url, str) or (public_url and UrlPolicy("public URLs").refusal(public_url)):
            raise KnobError(type(self).__name__, "public_url", public_url, "an http(s) URL, or empty")
        super().__init__()
        self.translator = translator
        self.public_url = public_url.rstrip("/")

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse:
        context = run.attachments.get(TaskContext)
        if context is not None:
            context.public_url = self.public_url
        if context is None or context.previous is None:
            return await handler(request)
        messages = list(request.messages)
        start = last_user_index(messages) or 0
        view = HumanMessage(content=render_view(context.previous, context.decisions), name="dra_task_view")
        return await handler(request.override(messages=[view, *messages[start:]]))

    @run_hook
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
        *,
        run: Run,
    ) -> ToolMessage | Command:
        context = run.attachments.get(TaskContext)
        if request.tool_call["name"] != ToolName.SUBMIT_REPORT or context is None:
            return await handler(request)
        args = request.tool_call.get("args") or {}
        draft = str(args.get("report_markdown") or "").rstrip()
        if not draft:
            return await handler(request)
        researched = bool(run.evidence.handovers())
        if context.schedule is None and (context.previous is None or not researched):
            return await handler(request)  # nothing is added: no call for a wording
        wording = await self._wording(run, context)
        if context.previous is None:
            return await handler(_with_report(request, opening_with(draft, first_section(context.name, wording))))
        if not researched:
            return await handler(request)  # answered from the task's memory: the digest says so, the report is as is
        diff = task_diff(context.previous, _findings(run), _own_pages(run), _failed_reads(run))
        context.diff = diff
        emit(TaskDiff(**diff.model_dump()))
        if context.schedule is None:
            return await handler(_with_report(request, f"{draft}\n\n{section(diff, wording)}\n"))
        if material(diff):
            return await handler(_with_report(request, opening_with(draft, digest_section(diff, wording))))
        # Nothing material: the short digest is the report, and none of the draft's checked claims is in it.
        run.evidence.deliver_citations([], CitationSummary(), claims=[], claim_summary=no_claims())
        short = unchanged_report(draft, digest_section(diff, wording), context.name)
        return await handler(_with_report(request, short))

    async def _wording(self, run: Run, context: TaskContext) -> DigestWording:
        """The run's digest wording: English, or the run's report language's, asked for once per run."""
        if context.wording is not None:
            return context.wording
        told = run.attachments.get(RunLanguage)
        language = told.code if told is not None else None
        context.wording = ENGLISH_WORDING
        if language is not None and language != ENGLISH:
            try:
                context.wording = await self.translator(run.usage, language)
            except Exception as exc:  # noqa: BLE001 - the digest is delivered in English, never lost
                logger.warning("digest wording in %s failed: %s", language, redact(f"{type(exc).__name__}: {exc}"))
                emit(WarningStatus(reason=WarningReason.DIGEST_IN_ENGLISH, detail=_in_english(language, exc)))
        return context.wording


def _in_english(language: str, exc: Exception) -> str:
    # A provider's error text may echo the request's credentials: redacted before it reaches an event or a log.
    why = "no answer in time" if isinstance(exc, TimeoutError) else redact(f"{type(exc).__name__}: {exc}")[:200]
    return (
        f"The digest's wording could not be put into {language_name(language)} ({why}); "
        "the digest is in English, and the report is delivered all the same."
    )


def _with_report(request: ToolCallRequest, report: str) -> ToolCallRequest:
    args = request.tool_call.get("args") or {}
    return request.override(tool_call={**request.tool_call, "args": {**args, "report_markdown": report}})


async def _read(awaitable: Awaitable[Any], *, default: Any) -> Any:
    try:
        return await awaitable
    except Exception:  # noqa: BLE001 - what cannot be read is left out, the run goes on
        logger.exception("could not read part of a task")
        return default


async def _adopt_sources(store: BaseStore | None, run: Run, previous: TaskRecord) -> int:
    if store is None:
        return 0
    adopted = 0
    for thread_id, run_id in dict.fromkeys((s.thread_id, s.run_id) for s in previous.sources):
        texts = {r["id"]: r for r in await _read(stored_evidence(store, thread_id, run_id), default=[])}
        for source in (s for s in previous.sources if (s.thread_id, s.run_id) == (thread_id, run_id)):
            stored = texts.get(source.evidence_id)
            if stored is None or stored.get("sha256") != source.sha256:
                logger.warning(
                    "task %s: the text of %s is no longer stored; it must be read again", previous.name, source.url
                )
                continue
            run.evidence.adopt(replace(evidence_record(stored), agent=f"{TASK_AGENT}:{previous.name}"))
            adopted += 1
    return adopted


def _findings(run: Run) -> list[Any]:
    return [finding for findings in run.evidence.all_findings() for finding in findings.findings]


def _failed_reads(run: Run) -> dict[str, str]:
    """The pages this run tried to read and could not, and why (a later read of the same page clears one)."""
    return {f.target: f.message for f in run.failures.retrieval() if f.tool == ToolName.WEB_FETCH}


def _own_pages(run: Run) -> list[Any]:
    return [
        r
        for r in run.evidence.own_records()
        if r.kind in (EvidenceKind.PAGE, EvidenceKind.MCP_RESULT, EvidenceKind.CORPUS)
    ]


async def finish_task(
    store: BaseStore | None,
    run: Run,
    state: dict[str, Any],
    *,
    run_id: str,
    status: str,
    outcome: str | None,
    failed: bool = False,
    config: dict[str, Any] | None = None,
) -> Digest | None:
    """Save the run's task, merged with what this run asked, found, read and delivered (see the contract);
    ``failed``: the run ended in error; ``config``: the run's, which names a schedule whose run failed before
    its task was opened. Returns a scheduled run's digest, else None."""
    context = run.attachments.get(TaskContext) or await _scheduled_context(store, config)
    if context is None:
        return None
    now = utc_now_iso()
    previous = context.previous
    record = previous.model_copy(deep=True) if previous else TaskRecord(
        name=context.name, user_id=context.user, thread_id=context.thread_id, created_at=now, last_run_at=now, last_run_id=run_id
    )  # fmt: skip
    question = latest_user_text(state.get("messages") or [])
    if question and question not in record.questions:
        record.questions.append(question)
    if context.diff is None and previous is not None and run.evidence.handovers():
        # A run cut short delivers a report assembled from its findings: what changed is still what it found.
        context.diff = task_diff(previous, _findings(run), _own_pages(run), _failed_reads(run))
    known = {_key(f.finding) for f in record.findings}
    for finding in _findings(run):
        if _key(finding.finding) not in known:
            record.findings.append(
                TaskFinding(finding=finding.finding, evidence=finding.evidence, source=finding.source)
            )
            known.add(_key(finding.finding))
    gaps = [gap for findings in run.evidence.all_findings() for gap in findings.gaps]
    if run.evidence.handovers():
        record.gaps = list(dict.fromkeys(gaps))
    sources = {s.url: s for s in record.sources}
    for page in _own_pages(run):
        sources[page.url] = TaskSource(
            url=page.url, title=page.title, sha256=page.sha256, retrieved_at=page.retrieved_at,
            thread_id=context.thread_id, run_id=run.key, evidence_id=page.id,
        )  # fmt: skip
    record.sources = list(sources.values())
    if report := state.get("final_report"):
        record.last_report = report
    if run.control.report_delivered or (report and not failed):
        record.last_delivered_at = now
    record.thread_id = context.thread_id or record.thread_id
    record.last_run_at, record.last_run_id, record.status, record.outcome = now, run_id, status, outcome
    record.runs += 1
    cost = round(run.usage.totals().cost_usd, 6)
    record.cost_usd = round(record.cost_usd + cost, 6)
    digest = None
    if context.schedule is not None:
        # The run's own thread holds only its report, which the thread's route reads on either server (Aegra
        # cannot read one run's state of a thread, which /reports/{thread_id}/{run_id} needs).
        digest = build_digest(
            context, run_id=run_id, status=status, outcome=outcome, failed=failed, cost=cost, finished_at=now,
            report_url=f"{context.public_url}/reports/{context.thread_id}" if report else None,
        )  # fmt: skip
        entry = DigestEntry(
            run_id=run_id, thread_id=context.thread_id, finished_at=now, status=status, outcome=outcome,
            failed=failed, material=digest.material, since=digest.since, headline=headline(digest), cost_usd=cost,
        )  # fmt: skip
        record.digests = [*record.digests, entry][-MAX_DIGESTS:]
    await save_task(store, record, failures=run.failures)
    return digest


async def _scheduled_context(store: BaseStore | None, config: dict[str, Any] | None) -> TaskContext | None:
    """The task of a scheduled run that ended before its task was opened (a refused setting, too many runs)."""
    if (schedule := schedule_of(config)) is None:
        return None
    try:
        name = task_of(config)
    except TaskNameError:
        return None
    if name is None:
        return None
    user = run_user(config)
    thread_id = str(((config or {}).get("configurable") or {}).get("thread_id") or "")
    previous = await load_task(store, user, name)
    return TaskContext(name=name, user=user, thread_id=thread_id, previous=previous, schedule=schedule)


def _key(text: str) -> str:
    return " ".join(text.lower().split())
