"""The streaming event protocol: one pydantic model per event type, written to LangGraph's ``custom`` channel.

Contract for clients:
- every event is a JSON object with a ``type`` from ``EVENT_TYPES``;
- ``run_start`` is the first event of every run and carries ``protocol_version``: it is bumped only on
  breaking shape changes, new keys or types do not bump it;
- a ``status`` event is one model per ``state`` (``Status``, a union on ``state``), with exactly the
  fields that state carries and a typed ``reason`` wherever the reason is one of a closed set;
- exactly one ``status`` with ``state`` ``done`` or ``error`` ends a run; its ``detail`` ends with
  ``Run time Xm Ys.``;
- events sent from inside a sub-agent carry that sub-agent's ``role`` and the ``task_id`` of the ``task``
  tool call that started it; the orchestrator's events carry ``role: "orchestrator"``.

``emit`` takes an event model, so an event is validated where it is built (unknown fields, a missing
field, a reason outside its set raise there) and a type checker flags a wrong field before that: no
event reaches the stream unvalidated, and no path builds events from dicts, so there is no drift to log.
``emit`` stamps the sender (``role``, ``task_id``) unless the event names its own, and scrubs known
secrets from every string before it leaves the process.

The JSON Schema of every event is published in ``schema/events.schema.json`` (``python -m
deep_research_agent.protocol.events > schema/events.schema.json``); it compiles in Ajv's strict mode. It
also publishes what clients would otherwise copy by hand: which end reasons are halts (``HaltReason``,
from ``domain.stops``), the words a frontend shows for each end reason (``EndReason``'s values, each with
its ``description``) and the notice it shows for each outcome (``Outcome``'s, likewise).
"""

from __future__ import annotations

import inspect
import json
import sys
import typing
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..domain.assist import AssistDecision
from ..domain.claims import CitationSummary, ClaimSummary
from ..domain.findings import Finding
from ..domain.names import (
    END_WORDS,
    OUTCOME_NOTICES,
    Ceiling,
    EndReason,
    HaltedBy,
    ModelFailure,
    Outcome,
    RevisionReason,
    Role,
    RunawayKind,
    ScriptStatus,
    SkillState,
    StatusState,
    StopMode,
    ToolErrorClass,
    TriageReason,
    WarningReason,
)
from ..domain.plan import PlanEstimate
from ..domain.secrets import redact_tree
from ..domain.stops import HALT_REASONS
from ..domain.task_diff import MovedFigure
from ..domain.usage import RoleUsage
from .sender import current_sender

PROTOCOL_VERSION = 1
# Where a client asks a running run to finish: an item with the run id as its key and a ``mode``, either
# wrap up (the agents deliver, the report is written) or stop now (the report is assembled at once).
STOP_REQUESTS_NAMESPACE = ("deep_research_agent", "stop_requests")
# Where a client steers a running run, on the same channel: one item per message, any key, ``{"message": text}``.
STEER_REQUESTS_NAMESPACE = (*STOP_REQUESTS_NAMESPACE, "steer")
# The longest steering message a run takes; a longer one is cut there (it is read into every orchestrator call).
MAX_STEER_CHARS = 2000


def steer_namespace(run_id: str) -> tuple[str, ...]:
    """The namespace a client puts a steering message for the run ``run_id`` in."""
    return (*STEER_REQUESTS_NAMESPACE, run_id)


try:
    ENGINE_VERSION = version("deep-research-agent")
except PackageNotFoundError:  # running from a source tree that was never installed
    ENGINE_VERSION = "0+unknown"


def _type_is_required(schema: dict[str, Any]) -> None:
    # ``type`` has a default so code can build events without it, yet every payload carries it: generated
    # client types must not make it optional.
    schema["required"] = ["type", *[name for name in schema.get("required", []) if name != "type"]]


class BaseEvent(BaseModel):
    """What every event carries besides its ``type``: who sent it."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_type_is_required)

    role: str = Field(default=Role.ORCHESTRATOR, description="Who sent it: orchestrator or a sub-agent role.")
    task_id: str | None = Field(default=None, description="The task tool call that started the sending sub-agent.")


class RunStart(BaseEvent):
    """First event of every run: the version handshake, the clock anchor, and the tools each agent is offered."""

    type: Literal["run_start"] = "run_start"
    protocol_version: int = PROTOCOL_VERSION
    engine_version: str = ENGINE_VERSION
    started_at: str = Field(description="UTC ISO-8601 time the run started.")
    thread_id: str | None = None
    run_id: str | None = None
    tools: dict[str, list[str]] = Field(
        default_factory=dict,
        description="The tools each agent role of the run is offered, by role, decided once per run.",
    )
    assist: dict[str, AssistDecision] = Field(
        default_factory=dict,
        description="Per agent role: whether its model gets the assist that helps a small model follow the "
        "research loop (model_assist), why, and the model it was decided for.",
    )


class Report(BaseEvent):
    """The delivered report. ``partial`` marks a report salvaged from an incomplete run; ``claims`` counts its
    checked claims (the per-claim verdicts are in the thread state's ``citations``)."""

    type: Literal["report"] = "report"
    markdown: str
    partial: bool = False
    claims: ClaimSummary | None = None


class Limits(BaseModel):
    """The run's ceilings; 0 for ``max_run_seconds`` or ``max_cost_usd`` means no cap."""

    model_config = ConfigDict(extra="forbid")

    max_tool_calls: int
    max_total_tokens: int = 0
    max_run_seconds: float = 0
    max_cost_usd: float = 0
    recursion_limit: int


_OUTCOME = (
    "How good the answer is, for a caller to act on (the end status' outcome): answered, insufficient_evidence, "
    "partial, partial_retrieval, budget_exhausted or recording_failed; absent when the run delivered nothing to judge."
)


class Usage(BaseEvent):
    """What the run spent, sent once at the end."""

    type: Literal["usage"] = "usage"
    tool_calls: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0
    total_tokens: int
    budget_tokens: int = Field(
        default=0, description="Tokens as the token ceiling counts them: cached input at a tenth."
    )
    cost_usd: float = Field(
        description="Best-effort dollars: the provider's reported cost where a response carried one, else tier prices."
    )
    reported_cost_usd: float = Field(default=0.0, description="Part of the cost the provider reported itself.")
    per_role: dict[str, RoleUsage] = Field(default_factory=dict)
    compactions: int = 0
    messages_summarized: int = 0
    citations: CitationSummary | None = Field(default=None, description="Set when the run delivered a report.")
    claims: ClaimSummary | None = Field(default=None, description="Set when the run delivered a report.")
    outcome: Outcome | None = Field(default=None, description=_OUTCOME)
    elapsed_s: float
    elapsed: str
    limits: Limits
    plan_estimate: PlanEstimate | None = Field(
        default=None, description="The reviewed plan's cost estimate, when the run's plan was reviewed (plan_review)."
    )
    plan_estimate_deviation: float | None = Field(
        default=None,
        description="How far cost_usd ended from the plan's estimate, as a fraction of it (0.25: 25 % over).",
    )


def _status_is_required(schema: dict[str, Any]) -> None:
    # ``state`` has a default (its model's one value) so code builds a status without it, yet every payload
    # carries it, and it decides which status model a payload is.
    _type_is_required(schema)
    schema["required"] = ["type", "state", *[name for name in schema["required"] if name not in ("type", "state")]]


class StatusEvent(BaseEvent):
    """Lifecycle, guards and errors: one model per ``state``, each with exactly the fields that state carries
    and, where its ``reason`` is one of a closed set, that set. ``done``/``error`` is the run's single
    authoritative end state, its ``reason`` an ``EndReason``."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_status_is_required)

    type: Literal["status"] = "status"
    state: StatusState


_USED = "How much of the named ceiling is spent."
_LIMIT = "The named ceiling."
_REPEATS = "Identical tool calls in the agent's recent window."
_TOKENS_ESTIMATE = "Estimated context tokens, before or after compaction."
_SERVER = "An MCP server's URL, without user info or query."
_LABEL = "An MCP server's label, the name its sources are cited by."

# A server error's reason: ``HTTP`` and its status code, 500 or above.
ServerError = Annotated[str, Field(pattern=r"^HTTP [5-9][0-9][0-9]$")]


class RunEndStatus(StatusEvent):
    """The run's end: exactly one per run; ``detail`` ends with ``Run time Xm Ys.``."""

    reason: EndReason
    detail: str
    tool_calls: int
    total_tokens: int
    report_chars: int
    elapsed_s: float
    elapsed: str
    outcome: Outcome | None = Field(default=None, description=_OUTCOME)


class DoneStatus(RunEndStatus):
    """The run ended as it should: a report, questions, an answer, or a halt the user asked for."""

    state: Literal[StatusState.DONE] = StatusState.DONE


class ErrorStatus(RunEndStatus):
    """The run ended on an error or a guard's halt (a partial report arrived if research had started)."""

    state: Literal[StatusState.ERROR] = StatusState.ERROR


class SubagentStartStatus(StatusEvent):
    """A sub-agent starts one ``task`` call."""

    state: Literal[StatusState.SUBAGENT_START] = StatusState.SUBAGENT_START
    subagent: str = Field(description="The sub-agent's role.")
    model: str | None = None


class SubagentDoneStatus(StatusEvent):
    """A sub-agent finished its ``task`` call, with what it spent."""

    state: Literal[StatusState.SUBAGENT_DONE] = StatusState.SUBAGENT_DONE
    subagent: str = Field(description="The sub-agent's role.")
    model: str | None = None
    model_calls: int
    total_tokens: int
    tool_calls: int


class SubagentFailedStatus(StatusEvent):
    """A sub-agent crashed; its unit came back as an error."""

    state: Literal[StatusState.SUBAGENT_FAILED] = StatusState.SUBAGENT_FAILED
    subagent: str = Field(description="The sub-agent's role.")
    detail: str


class RevisingStatus(StatusEvent):
    """A deliverable was sent back for one revision, with the problems in ``detail``."""

    state: Literal[StatusState.REVISING] = StatusState.REVISING
    reason: RevisionReason
    detail: str


class WarningStatus(StatusEvent):
    """Something is wrong and the run goes on: a configuration problem, a failed compaction or store write."""

    state: Literal[StatusState.WARNING] = StatusState.WARNING
    reason: WarningReason
    detail: str


class KeylessSearchStatus(StatusEvent):
    """Said once per run: web search runs without a Tavily key (rate-limited)."""

    state: Literal[StatusState.KEYLESS_SEARCH] = StatusState.KEYLESS_SEARCH
    reason: Literal["missing_tavily_api_key"] = "missing_tavily_api_key"
    detail: str


class ModelCallStatus(StatusEvent):
    """The heartbeat before every model step of an agent."""

    state: Literal[StatusState.MODEL_CALL] = StatusState.MODEL_CALL
    model: str
    step: int = Field(description="The agent's model step, counted from 1 per run.")
    unit: str | None = Field(default=None, description="The brief the agent works on.")
    after: list[str] | None = Field(default=None, description="Tools whose results the model is about to read.")
    after_chars: int | None = None


class RateLimitedStatus(StatusEvent):
    """One retry wait: a model call's (``model``, ``reason``), an MCP call's or a search backend's (``label``)."""

    state: Literal[StatusState.RATE_LIMITED] = StatusState.RATE_LIMITED
    reason: ModelFailure | ServerError | None = Field(default=None, description="What the model endpoint answered.")
    model: str | None = None
    label: str | None = Field(default=None, description=_LABEL + " Or a search backend's name (arXiv, OpenAlex, …).")
    wait_s: float
    attempt: int
    detail: str


class ModelUnavailableStatus(StatusEvent):
    """The retries of a model call gave up."""

    state: Literal[StatusState.MODEL_UNAVAILABLE] = StatusState.MODEL_UNAVAILABLE
    reason: ModelFailure | ServerError = Field(description="What the model endpoint last answered.")
    model: str
    attempt: int
    detail: str


class CeilingStatus(StatusEvent):
    """What the budget guard says at either stage: the binding ceiling, how much of it is spent, and why."""

    reason: Ceiling
    used: float = Field(description=_USED)
    limit: float = Field(description=_LIMIT)
    detail: str


class BudgetSoftStatus(CeilingStatus):
    """The 75% wrap-up stage of the binding ceiling (``steps``: the orchestrator's graph steps)."""

    state: Literal[StatusState.BUDGET_SOFT] = StatusState.BUDGET_SOFT


class BudgetHaltStatus(CeilingStatus):
    """The hard stop at 100% of the binding ceiling: no further model or tool call starts."""

    state: Literal[StatusState.BUDGET_HALT] = StatusState.BUDGET_HALT


class RecursionLimitStatus(StatusEvent):
    """An agent stopped before LangGraph's recursion limit (``used``/``limit`` in graph steps)."""

    state: Literal[StatusState.RECURSION_LIMIT] = StatusState.RECURSION_LIMIT
    used: int = Field(description="Graph steps used.")
    limit: int = Field(description="The recursion limit, in graph steps.")
    detail: str


class LoopStatus(StatusEvent):
    """What the loop guard says at either stage: how often the agent repeated one call."""

    repeats: int = Field(description=_REPEATS)
    detail: str


class LoopDetectedStatus(LoopStatus):
    """The identical-call nudge."""

    state: Literal[StatusState.LOOP_DETECTED] = StatusState.LOOP_DETECTED


class LoopHaltStatus(LoopStatus):
    """The identical-call stop."""

    state: Literal[StatusState.LOOP_HALT] = StatusState.LOOP_HALT


class RunawayStatus(StatusEvent):
    """What the runaway guard says at either stage: the kind of runaway and how much of the reply it kept."""

    reason: RunawayKind
    chars: int
    kept_chars: int
    detail: str


class RunawayOutputStatus(RunawayStatus):
    """A runaway reply was trimmed (``chars`` before, ``kept_chars`` after)."""

    state: Literal[StatusState.RUNAWAY_OUTPUT] = StatusState.RUNAWAY_OUTPUT


class RunawayHaltStatus(RunawayStatus):
    """The second runaway reply of a turn stopped the agent."""

    state: Literal[StatusState.RUNAWAY_HALT] = StatusState.RUNAWAY_HALT


class TriageStatus(StatusEvent):
    """The pre-triage verdict: ``detail`` ``simple`` or ``research``, ``reason`` why."""

    state: Literal[StatusState.TRIAGE] = StatusState.TRIAGE
    reason: TriageReason
    detail: Literal["simple", "research"]


class CompactingStatus(StatusEvent):
    """A context compaction starts."""

    state: Literal[StatusState.COMPACTING] = StatusState.COMPACTING
    tokens_estimate: int = Field(description=_TOKENS_ESTIMATE)


class CompactedStatus(StatusEvent):
    """A context compaction ended."""

    state: Literal[StatusState.COMPACTED] = StatusState.COMPACTED
    messages_summarized: int
    messages_kept: int
    tokens_estimate: int = Field(description=_TOKENS_ESTIMATE)


class StopRequestedStatus(StatusEvent):
    """The user asked the run to finish: wrap up, or stop now and report what it found."""

    state: Literal[StatusState.STOP_REQUESTED] = StatusState.STOP_REQUESTED
    reason: StopMode
    detail: str


class SteerReceivedStatus(StatusEvent):
    """The run took a steering message from the user; the orchestrator reads it at its next model call."""

    state: Literal[StatusState.STEER_RECEIVED] = StatusState.STEER_RECEIVED
    message: str = Field(description="The user's steering message, as typed.")
    detail: str
    dropped_units: list[str] = Field(
        default_factory=list,
        description="The task ids of the running research units the message drops: each stops at its next model "
        "call and hands over what it found.",
    )


class McpReadyStatus(StatusEvent):
    """Follows ``run_start``, one per MCP server of the run that listed its tools."""

    state: Literal[StatusState.MCP_READY] = StatusState.MCP_READY
    server: str = Field(description=_SERVER)
    label: str = Field(description=_LABEL)
    tool_count: int
    tools: list[str] = Field(description="The tool names an MCP server offers the research sub-agents.")
    cached: bool = Field(description="The MCP tool listing came from the listing cache.")


class McpErrorStatus(StatusEvent):
    """Follows ``run_start``, one per MCP server that could not be listed."""

    state: Literal[StatusState.MCP_ERROR] = StatusState.MCP_ERROR
    server: str = Field(description=_SERVER)
    label: str = Field(description=_LABEL)
    detail: str


class SandboxResetStatus(StatusEvent):
    """The run's sandbox session died and a fresh one replaced it, once per death however many calls were in
    flight; files written before it are gone."""

    state: Literal[StatusState.SANDBOX_RESET] = StatusState.SANDBOX_RESET
    detail: str


Status = Annotated[
    DoneStatus
    | ErrorStatus
    | SubagentStartStatus
    | SubagentDoneStatus
    | SubagentFailedStatus
    | RevisingStatus
    | WarningStatus
    | KeylessSearchStatus
    | ModelCallStatus
    | RateLimitedStatus
    | ModelUnavailableStatus
    | BudgetSoftStatus
    | BudgetHaltStatus
    | RecursionLimitStatus
    | LoopDetectedStatus
    | LoopHaltStatus
    | RunawayOutputStatus
    | RunawayHaltStatus
    | TriageStatus
    | CompactingStatus
    | CompactedStatus
    | StopRequestedStatus
    | SteerReceivedStatus
    | McpReadyStatus
    | McpErrorStatus
    | SandboxResetStatus,
    Field(discriminator="state"),
]
"""A ``status`` event: the model of its ``state``."""

STATUS_MODELS: dict[StatusState, type[StatusEvent]] = {
    model.model_fields["state"].default: model for model in typing.get_args(typing.get_args(Status)[0])
}


class SearchQuery(BaseEvent):
    """A search is about to run: on the web, or in one local corpus."""

    type: Literal["search_query"] = "search_query"
    id: str
    query: str
    source: str = Field(
        description="The search backend: tavily, searxng, arxiv, wikipedia, pubmed, openalex, or corpus:<name> for a "
        "local corpus."
    )


class SearchHit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str
    url: str = Field(description="The page's URL, or a corpus passage's corpus://<name>/<path>#<anchor> (or #page=N).")
    domain: str = Field(description="The page's host, or the corpus name.")
    snippet: str


class SearchResults(BaseEvent):
    """What a search returned; ``ok`` is false when it failed."""

    type: Literal["search_results"] = "search_results"
    id: str
    query: str
    ok: bool
    count: int
    results: list[SearchHit] = Field(default_factory=list)
    error: str | None = None


class Source(BaseEvent):
    """A URL seen for the first time in this run: a web page, or a corpus passage (``corpus://…``, titled
    the way its Sources line reads)."""

    type: Literal["source"] = "source"
    title: str
    url: str
    domain: str = Field(description="The page's host, or the corpus name.")


class SubagentFindings(BaseEvent):
    """A research unit's validated findings, as the orchestrator received them."""

    type: Literal["subagent_findings"] = "subagent_findings"
    unit: str
    summary: str
    findings: list[Finding] = Field(default_factory=list)
    gaps: list[str] = Field(default_factory=list)
    halted: HaltedBy | None = Field(default=None, description="Set when a guard or the user stopped the sub-agent.")


class Clarification(BaseEvent):
    """Questions for the user; the run ends after this and waits for the answers on the same thread."""

    type: Literal["clarification"] = "clarification"
    questions: list[str]


class PageFetched(BaseEvent):
    """A page, or a corpus passage, was read in full (or failed to be)."""

    type: Literal["page_fetched"] = "page_fetched"
    url: str
    ok: bool
    title: str | None = None
    chars: int = 0
    error: str | None = None


class Skill(BaseEvent):
    """A sub-agent read a skill's instructions; sent the first time the run reads that skill."""

    type: Literal["skill"] = "skill"
    name: str
    path: str = Field(description="Where the skill was read, e.g. /skills/<name>/SKILL.md.")
    state: SkillState


class ToolCall(BaseEvent):
    """A custom tool is about to run."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    tool: str
    args: dict[str, Any] = Field(
        default_factory=dict, description="The call's arguments, each value cut to 120 characters."
    )


class ToolResult(BaseEvent):
    """What a custom tool call returned; ``ok`` is false and ``error_class`` set when it failed."""

    type: Literal["tool_result"] = "tool_result"
    id: str
    tool: str
    ok: bool
    summary: str = Field(description="The start of the result, or the error the model read.")
    bytes: int = Field(description="Size of the whole result in UTF-8 bytes, before any truncation.")
    error_class: ToolErrorClass | None = None


class Script(BaseEvent):
    """The coding sub-agent's script as it finished the task: its final code, after every edit."""

    type: Literal["script"] = "script"
    path: str = Field(description="Where the script lives in the sandbox, e.g. /workspace/mean_price.py.")
    code: str = Field(description="The script's text, cut to 50,000 characters (see truncated).")
    language: str = "python"
    status: ScriptStatus = Field(description="What the coding sub-agent reported: ok, or failed.")
    output: str = Field(default="", description="The start of the output it reported, at most 2,000 characters.")
    bytes: int = Field(description="Size of the whole script in UTF-8 bytes.")
    truncated: bool = False


class McpCall(BaseEvent):
    """A research sub-agent calls an MCP tool."""

    type: Literal["mcp_call"] = "mcp_call"
    id: str
    tool: str
    server: str = Field(description="The MCP server's label.")
    args: dict[str, str] = Field(default_factory=dict, description="The arguments, each value cut to 120 characters.")


class McpResult(BaseEvent):
    """What an MCP tool call returned; on failure ``error_class`` says whether retrying can help."""

    type: Literal["mcp_result"] = "mcp_result"
    id: str
    tool: str
    server: str = Field(description="The MCP server's label.")
    ok: bool
    summary: str = Field(description="The head of the result text, or of the error.")
    bytes: int = Field(description="Size of the result text in UTF-8 bytes (0 on failure).")
    error_class: Literal["permanent", "transient"] | None = None
    repeated: bool | None = Field(
        default=None, description="Answered from the memo of permanently failed calls, without a call."
    )


class TaskDiff(BaseEvent):
    """What changed since the last run of a named task, sent when a re-run delivers its report (the report's
    "What changed since the last run" section says the same)."""

    type: Literal["task_diff"] = "task_diff"
    task: str = Field(description="The task's name.")
    previous_run_at: str = Field(description="UTC ISO-8601 time of the run compared with.")
    new_findings: list[str] = Field(default_factory=list)
    new_sources: list[str] = Field(default_factory=list, description="URLs the task had never read.")
    changed_sources: list[str] = Field(default_factory=list, description="URLs read before whose text changed.")
    moved_figures: list[MovedFigure] = Field(
        default_factory=list, description="A figure of a source, before and after."
    )
    gone_sources: list[str] = Field(
        default_factory=list,
        description="Pages the task had read that this run tried to read again and could not: the URL and why.",
    )


Event = Annotated[
    RunStart
    | Report
    | Usage
    | Status
    | SearchQuery
    | SearchResults
    | Source
    | SubagentFindings
    | Clarification
    | PageFetched
    | Skill
    | ToolCall
    | ToolResult
    | Script
    | McpCall
    | McpResult
    | TaskDiff,
    Field(discriminator="type"),
]

EVENT_MODELS: dict[str, type[BaseEvent]] = {
    model.model_fields["type"].default: model
    for model in (
        RunStart,
        Report,
        Usage,
        StatusEvent,
        SearchQuery,
        SearchResults,
        Source,
        SubagentFindings,
        Clarification,
        PageFetched,
        Skill,
        ToolCall,
        ToolResult,
        Script,
        McpCall,
        McpResult,
        TaskDiff,
    )
}
"""Each event type's model; a ``status`` event's is ``StatusEvent``, the base of ``STATUS_MODELS``."""
EVENT_TYPES = tuple(EVENT_MODELS)
_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


def build_event(event: BaseEvent) -> dict[str, Any]:
    """The payload of ``event`` as it leaves the process: stamped with its sender, secrets scrubbed.

    The sender (``current_sender``) fills ``role`` and ``task_id`` unless the event set them itself (the
    hand-over names the sub-agent of a ``task`` call from outside it)."""
    sender = current_sender.get()
    stamp = {"role": sender.role, "task_id": sender.task_id}
    stamped = event.model_copy(update={k: v for k, v in stamp.items() if k not in event.model_fields_set})
    redacted: dict[str, Any] = redact_tree(stamped.model_dump(mode="json", exclude_none=True))
    return redacted


def emit(event: BaseEvent) -> dict[str, Any]:
    """Send one event on the ``custom`` stream channel; a no-op outside a graph run."""
    payload = build_event(event)
    try:
        from langgraph.config import get_stream_writer

        writer = get_stream_writer()
    except (RuntimeError, KeyError):  # outside a graph run, e.g. a unit test of a tool (KeyError: a bare tool.ainvoke)
        return payload
    writer(payload)
    return payload


def _status_definition(schema: dict[str, Any]) -> None:
    """Name the ``status`` union ``Status``: pydantic inlines a nested union where the event union lists it.

    ``Status`` keeps what every status has (``type`` and ``state``) and is one of the models per state."""
    defs = schema["$defs"]
    [inline] = [member for member in schema["oneOf"] if "$ref" not in member]
    defs["StatusState"] = TypeAdapter(StatusState).json_schema()
    defs["Status"] = {
        "title": "Status",
        "description": inspect.cleandoc(StatusEvent.__doc__ or ""),
        "type": "object",
        "properties": {
            "type": {"const": "status", "default": "status", "type": "string"},
            "state": {"$ref": "#/$defs/StatusState"},
        },
        "required": ["type", "state"],
        "oneOf": inline["oneOf"],
    }
    schema["oneOf"] = [member if "$ref" in member else {"$ref": "#/$defs/Status"} for member in schema["oneOf"]]


def _published_vocabulary(defs: dict[str, Any]) -> None:
    """What clients would copy by hand: which end reasons are halts, each end reason's words and each
    outcome's notice."""
    defs["HaltReason"] = {
        "title": "HaltReason",
        "description": (
            "The end reasons that are halts: the run stopped early and its report was assembled from the "
            "findings so far (a subset of EndReason)."
        ),
        "type": "string",
        "enum": [reason.value for reason in EndReason if reason in HALT_REASONS],
    }
    end_reason = defs["EndReason"]
    del end_reason["enum"]
    end_reason["oneOf"] = [{"const": value.value, "description": END_WORDS[value]} for value in EndReason]
    end_reason["description"] = (
        f"{end_reason['description']} Each value's description is the words a frontend shows on the end line."
    )
    outcome = defs["Outcome"]
    del outcome["enum"]
    outcome["oneOf"] = [{"const": value.value, "description": OUTCOME_NOTICES[value]} for value in Outcome]
    outcome["description"] = (
        f"{outcome['description']} Each value's description is the notice a frontend shows with the answer "
        "(none for answered)."
    )


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of every event, for frontends to validate events and generate types from.

    It uses only 2020-12 keywords, so strict validators (Ajv's strict mode) compile it: the events are a
    plain ``oneOf`` that each event's ``type`` const decides (a status: its ``state`` const, within
    ``Status``), and ``$comment`` is ``protocol_version N``, the version that ``run_start`` carries.
    """
    schema = _EVENT_ADAPTER.json_schema(mode="serialization")
    # pydantic adds OpenAPI's ``discriminator``, which no JSON Schema vocabulary defines.
    del schema["discriminator"]
    _status_definition(schema)
    _published_vocabulary(schema["$defs"])
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": f"protocol_version {PROTOCOL_VERSION}",
        "title": "DeepResearchAgentEvent",
        "description": f"Events on the custom stream channel, protocol version {PROTOCOL_VERSION}.",
        **schema,
    }


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(schema_text())
