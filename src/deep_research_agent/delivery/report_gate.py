"""Report gate: no citation leaves the run unless the run retrieved the text it points to.

Contract (orchestrator only; wraps the ``submit_report`` tool call, so a draft is judged before the tool
records anything):
- every draft is scrubbed, its citation numbering linted, every citation's source checked against the
  run's evidence and findings, and every claim against the full text it cites (``vet_report``: figures,
  quotes, names, direction), in a worker thread (it reads every text the run retrieved);
- with a ``judge`` (``claim_judge`` on, ``lifecycle/claim_judge.py``), the claims those checks cannot settle
  are then judged by the model against their sources' nearest passages (``report/judge.py``; with an
  ``embedder``, chosen by meaning as well as by figures, names and words), every batch
  at once and each bounded by ``judge_timeout``; a claim judged on the bounced draft is not judged again
  when the revision leaves it as it was. A judge that fails, times out or answers unparseably leaves
  those claims' deterministic verdicts and, for the draft that is delivered, sends one ``status: warning``
  (reason ``claim_judge_failed``; a bounced draft's failure alone sends none, since its revision is judged
  again): it never blocks delivery;
- the first draft of a user turn with problems is not delivered: the model gets an error tool result
  listing what to fix (for a claim: the claim, the figure, quote or name that is not in its source, the
  words whose direction the source reverses or the judge's verdict, and the source's nearest or deciding
  sentence; for sources that disagree, both values), a ``status: revising`` (reason
  ``report_quality``, the problems in ``detail``, cut after ``DETAIL_CHARS`` with how many more there
  are) is sent, and the verdict on the draft is kept in private state;
- with an ``outline`` (``report_outline``), a draft missing one of its sections, or holding them out of order,
  has that among its problems (``report/outline.py``); a delivered report still missing one carries a note
  saying so, before its Sources;
- with a ``style`` (``report_style``) other than ``standard``, a draft far outside the length it asks for (a
  brief one much too long, a detailed one much too short: ``report/length.py``) has that among its problems;
  a delivered report still outside it sends one ``status: warning`` (reason ``report_length``);
- any later draft is delivered: citations the run never retrieved are removed and every claim still not
  supported is marked ``[unverified]`` (``finalise``), and ``submit_report`` records and sends that text.
  A bounced draft is therefore never ``final_report`` nor a ``report`` event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired, Protocol

from langchain.agents.middleware import AgentState
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import ToolMessage
from langgraph.channels import UntrackedValue
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.charts import DEFAULT_MAX_CHARTS
from ..domain.errors import tool_error_text
from ..domain.knobs import KnobError, callable_knob, not_negative
from ..domain.names import RevisionReason, ToolErrorClass, ToolName, WarningReason
from ..domain.reader import ReportStyle, style_refusal
from ..embeddings import Embedder
from ..handover.answer_gate import ANSWER, AnswerGate
from ..protocol.events import WarningStatus, emit
from ..report.citations import CitationReport
from ..report.judge import (
    FAILED_REASON,
    UNFOUNDED_REASON,
    UNRELIABLE_DETAIL,
    UNRELIABLE_REASON,
    JudgeCall,
    Judgement,
    JudgeOutcome,
    failure_detail,
    run_judge,
    unfounded_claims,
    unfounded_detail,
)
from ..report.length import length_gap, length_problem, length_warning
from ..report.outline import OutlineGaps, gap_problems, outline_gaps, with_outline_note
from ..report.passages import with_meaning
from ..report.vetting import VettedReport, finalise, vet_report, with_judgements
from ..run import Run, UsageMeter, run_hook

# A long report can have dozens of problems; a banner shows the first few.
DETAIL_CHARS = 4000


class RunJudge(Protocol):
    """A claim judge that makes its calls on a run's usage meter (``lifecycle/claim_judge.ModelClaimJudge``)."""

    def for_run(self, usage: UsageMeter) -> JudgeCall: ...


class ReportGateState(AgentState):
    report_gate_turn: NotRequired[Annotated[str | None, PrivateStateAttr, UntrackedValue]]
    report_gate_bounces: NotRequired[Annotated[dict[str, int], PrivateStateAttr, UntrackedValue]]
    report_gate_draft: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr, UntrackedValue]]
    # The judge's verdicts on the bounced draft, by claim key, so its revision's unchanged claims keep them.
    report_gate_judged: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr, UntrackedValue]]
    # The judge called a planted control claim supported: it is not asked again in this run.
    report_gate_judge_unreliable: NotRequired[Annotated[bool, PrivateStateAttr, UntrackedValue]]


class ReportGateMiddleware(AnswerGate):
    """Sends a report with fixable citation problems back once, then delivers it repaired."""

    state_schema = ReportGateState
    gate_key = "report_gate"
    reason = RevisionReason.REPORT_QUALITY
    per_turn = True

    def __init__(
        self,
        *,
        judge: RunJudge | None = None,
        judge_timeout: float = 60.0,
        max_charts: int = DEFAULT_MAX_CHARTS,
        outline: Sequence[str] = (),
        style: str = ReportStyle.STANDARD.value,
        embedder: Embedder | None = None,
    ) -> None:
        """``max_charts``: the charts a report may hold (``report/charts.py``); 0 refuses every chart.
        ``outline``: the sections the reader asked for (``report_outline``): a draft missing one, or with them
        out of order, is sent back like any other problem; delivered so, it carries a note saying what it lacks.
        ``style``: the length preset (``report_style``) a draft far outside is sent back for.
        ``embedder``: the judge's passages are chosen by meaning too (``report/passages.py``)."""
        super().__init__()
        callable_knob("ReportGateMiddleware", "judge", getattr(judge, "for_run", None), optional=judge is None)
        not_negative("ReportGateMiddleware", "judge_timeout", judge_timeout)
        not_negative("ReportGateMiddleware", "max_charts", max_charts)
        if not isinstance(style, str) or style_refusal(style):
            raise KnobError("ReportGateMiddleware", "style", style, f"one of {', '.join(ReportStyle)}")
        callable_knob(
            "ReportGateMiddleware", "embedder", getattr(embedder, "embed_documents", None), optional=embedder is None
        )
        self.judge = judge
        self.judge_timeout = judge_timeout
        self.max_charts = max_charts
        self.outline = tuple(outline)
        self.style = style
        self.embedder = embedder

    @run_hook
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
        *,
        run: Run,
    ) -> ToolMessage | Command:
        if request.tool_call["name"] != ToolName.SUBMIT_REPORT:
            return await handler(request)
        args = request.tool_call.get("args") or {}
        draft = str(args.get("report_markdown") or "")
        if not draft.strip():
            return await handler(request)
        evidence = run.evidence
        messages = request.state.get("messages") or []
        spent = self.bounces_spent(request.state, messages)
        bounced = request.state.get("report_gate_draft") if spent else None
        previous = CitationReport.model_validate(bounced) if bounced is not None else None
        vetted = await asyncio.to_thread(vet_report, draft, evidence, previous=previous, max_charts=self.max_charts)
        judged = request.state.get("report_gate_judged") if bounced is not None else None
        unreliable = bool(request.state.get("report_gate_judge_unreliable"))
        vetted, judged_now = await self._judged(run, vetted, evidence, judged or {}, unreliable=unreliable)
        gaps = outline_gaps(vetted.markdown, self.outline) if self.outline else OutlineGaps()
        off_length = length_gap(vetted.markdown, self.style)
        problems = [*vetted.problems, *gap_problems(gaps), *([length_problem(off_length)] if off_length else [])]
        if problems and self.may_bounce(spent):
            self.announce(problems)
            message = ToolMessage(
                self.bounce_text(problems),
                tool_call_id=request.tool_call["id"],
                name=ToolName.SUBMIT_REPORT,
                status="error",
            )
            return Command(
                update={
                    "messages": [message],
                    **self.spend(spent, ANSWER, messages),
                    "report_gate_draft": vetted.check.model_dump(),
                    "report_gate_judged": {key: j.to_json() for key, j in vetted.judgements.items()},
                    "report_gate_judge_unreliable": vetted.judge_unreliable,
                }
            )
        # Only the delivered draft's warnings: the revision of a bounced one is judged again, so a failure on the
        # bounced draft alone says nothing about the report the user gets.
        if vetted.judge_unreliable:
            emit(WarningStatus(reason=UNRELIABLE_REASON, detail=UNRELIABLE_DETAIL))
        if judged_now.failures:
            emit(WarningStatus(reason=FAILED_REASON, detail=failure_detail(judged_now.failures)))
        unfounded = unfounded_claims(vetted.claims, vetted.judgements)
        if unfounded:
            emit(WarningStatus(reason=UNFOUNDED_REASON, detail=unfounded_detail(unfounded)))
        if off_length:
            emit(WarningStatus(reason=WarningReason.REPORT_LENGTH, detail=length_warning(off_length)))
        delivered = await asyncio.to_thread(finalise, vetted, evidence)
        if gaps:
            delivered = with_outline_note(delivered, gaps)
        return await handler(
            request.override(tool_call={**request.tool_call, "args": {**args, "report_markdown": delivered}})
        )

    def bounce_text(self, problems: Sequence[str]) -> str:
        """The error result of the bounced ``submit_report``: every fix, and that this is the one revision."""
        listed = "\n".join(f"- {problem}" for problem in problems)
        return tool_error_text(
            ToolName.SUBMIT_REPORT,
            ToolErrorClass.PERMANENT,
            f"the report was NOT delivered. Fix these, then call {ToolName.SUBMIT_REPORT} again with the whole "
            f"corrected report:\n{listed}\nCite only sources the research units read, and state only figures, "
            "quotes, names and facts their text holds; this is the one revision before delivery, which removes citations "
            "of sources never retrieved and marks every sentence that still does not check out [unverified].",
        )

    def detail(self, problems: Sequence[str]) -> str:
        """The problems for the ``revising`` status, cut to ``DETAIL_CHARS`` (the model gets them all)."""
        shown: list[str] = []
        length = 0
        for problem in problems:
            if shown and length + len(problem) > DETAIL_CHARS:
                return " ".join(shown) + f" … and {len(problems) - len(shown)} more."
            shown.append(problem)
            length += len(problem) + 1
        return " ".join(shown)

    async def _judged(
        self, run: Run, vetted: VettedReport, evidence: Any, known: dict[str, Any], *, unreliable: bool
    ) -> tuple[VettedReport, JudgeOutcome]:
        """The draft with the judge's verdicts on the claims no deterministic check settles, and what the judge
        did; unchanged when there is no judge, nothing to judge, or the judge fails. A judge found unreliable
        earlier in the run is not asked again: the draft says so."""
        if self.judge is None or not vetted.claims.judgeable():
            return vetted, JudgeOutcome()
        if unreliable:
            return with_judgements(vetted, {}, judge_unreliable=True), JudgeOutcome(unreliable=True)
        try:
            before = {key: Judgement.from_json(value) for key, value in known.items()}
        except (KeyError, ValueError):
            before = {}
        outcome = await run_judge(
            vetted.claims,
            evidence.library(),
            self.judge.for_run(run.usage),
            timeout=self.judge_timeout,
            known=before,
            signals=with_meaning(self.embedder),
        )
        return with_judgements(vetted, outcome.judgements, judge_unreliable=outcome.unreliable), outcome
