"""The streaming event protocol: one pydantic model per event type, written to LangGraph's ``custom`` channel.

Contract for clients:
- every event is a JSON object with a ``type`` from ``EVENT_TYPES``;
- ``run_start`` is the first event of every run and carries ``protocol_version``: it is bumped only on
  breaking shape changes, new keys or types do not bump it;
- exactly one ``status`` with ``state`` ``done`` or ``error`` ends a run; its ``detail`` ends with
  ``Run time Xm Ys.``;
- events sent from inside a sub-agent carry that sub-agent's ``role`` and the ``task_id`` of the ``task``
  tool call that started it; the orchestrator's events carry ``role: "orchestrator"``.

``emit`` validates every event against its model. On drift it logs a warning and still emits, because a
frontend that gets a slightly wrong event is better off than one that gets none. Known secrets are
scrubbed from every string before it leaves the process.

The JSON Schema of every event is published in ``schema/events.schema.json`` (``python -m
deep_research_agent.protocol.events > schema/events.schema.json``); it compiles in Ajv's strict mode.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from enum import StrEnum
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from pydantic_core import to_jsonable_python

from ..domain.claims import CitationSummary, ClaimSummary
from ..domain.findings import Finding
from ..domain.names import (
    Ceiling,
    EndReason,
    HaltedBy,
    Outcome,
    RevisionReason,
    Role,
    ScriptStatus,
    SkillState,
    StatusState,
    StopMode,
    ToolErrorClass,
)
from ..domain.secrets import redact_tree
from ..domain.task_diff import MovedFigure
from ..domain.usage import RoleUsage
from .sender import current_sender

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
# Where a client asks a running run to finish: an item with the run id as its key and a ``mode``, either
# wrap up (the agents deliver, the report is written) or stop now (the report is assembled at once).
STOP_REQUESTS_NAMESPACE = ("deep_research_agent", "stop_requests")

try:
    ENGINE_VERSION = version("deep-research-agent")
except PackageNotFoundError:  # running from a source tree that was never installed
    ENGINE_VERSION = "0+unknown"


def _type_is_required(schema: dict[str, Any]) -> None:
    # ``type`` has a default so code can build events without it, yet every payload carries it: generated
    # client types must not make it optional.
    schema["required"] = ["type", *[name for name in schema.get("required", []) if name != "type"]]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_type_is_required)

    role: str = Field(default=Role.ORCHESTRATOR, description="Who sent it: orchestrator or a sub-agent role.")
    task_id: str | None = Field(default=None, description="The task tool call that started the sending sub-agent.")


class RunStart(_Event):
    """First event of every run: the version handshake and the clock anchor."""

    type: Literal["run_start"] = "run_start"
    protocol_version: int = PROTOCOL_VERSION
    engine_version: str = ENGINE_VERSION
    started_at: str = Field(description="UTC ISO-8601 time the run started.")
    thread_id: str | None = None
    run_id: str | None = None


class Report(_Event):
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


class Usage(_Event):
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


# The states whose ``reason`` is one of a closed set of codes: the schema lists each set, and an event
# with a code outside it is drift.
REASONS_BY_STATE: dict[StatusState, type[StrEnum]] = {
    StatusState.DONE: EndReason,
    StatusState.ERROR: EndReason,
    StatusState.BUDGET_SOFT: Ceiling,
    StatusState.BUDGET_HALT: Ceiling,
    StatusState.REVISING: RevisionReason,
    StatusState.STOP_REQUESTED: StopMode,
}


def _reasons_by_state(schema: dict[str, Any]) -> None:
    _type_is_required(schema)
    schema["allOf"] = [
        {
            "if": {"properties": {"state": {"const": state.value}}, "required": ["state"]},
            "then": {"properties": {"reason": {"enum": [code.value for code in codes]}}, "required": ["reason"]},
        }
        for state, codes in REASONS_BY_STATE.items()
    ]


class Status(_Event):
    """Lifecycle, guards and errors. ``done``/``error`` is the run's single authoritative end state, its
    ``reason`` an ``EndReason``.

    Guard states: ``budget_soft``/``budget_halt`` (``reason`` names the binding ceiling: tool_calls, tokens,
    time or cost; ``used``/``limit``), ``recursion_limit`` (``used``/``limit`` in graph steps),
    ``loop_detected``/``loop_halt`` (``repeats``), ``runaway_output``/``runaway_halt`` (``reason``
    repetition or length; ``chars`` before and ``kept_chars`` after trimming), ``rate_limited`` (one per
    wait: ``wait_s``, ``attempt``), ``model_unavailable`` (the retries gave up) and the ``model_call``
    heartbeat (``step``, ``unit``, and after tool results ``after``/``after_chars``). ``stop_requested``: the
    user asked the run to stop and report what it found. ``mcp_ready`` (``server``, ``label``,
    ``tool_count``, ``tools``, ``cached``) and ``mcp_error`` (``server``, ``label``, ``detail``) follow
    ``run_start``, one per MCP server of the run. ``sandbox_reset``: the run's sandbox session died and a
    fresh one replaced it (``detail`` says why); files written before it are gone, once per death however
    many calls were in flight.
    """

    type: Literal["status"] = "status"
    state: StatusState
    reason: str | None = None
    detail: str | None = None
    model: str | None = None
    subagent: str | None = None
    model_calls: int | None = None
    total_tokens: int | None = None
    tool_calls: int | None = None
    report_chars: int | None = None
    elapsed_s: float | None = None
    elapsed: str | None = None
    used: float | None = Field(default=None, description="How much of the named ceiling is spent.")
    limit: float | None = Field(default=None, description="The named ceiling.")
    repeats: int | None = Field(default=None, description="Identical tool calls in the agent's recent window.")
    chars: int | None = None
    kept_chars: int | None = None
    wait_s: float | None = None
    attempt: int | None = None
    step: int | None = Field(default=None, description="The agent's model step, counted from 1 per run.")
    unit: str | None = Field(default=None, description="The brief the agent works on.")
    after: list[str] | None = Field(default=None, description="Tools whose results the model is about to read.")
    after_chars: int | None = None
    tokens_estimate: int | None = Field(
        default=None, description="Estimated context tokens, before or after compaction."
    )
    messages_summarized: int | None = None
    messages_kept: int | None = None
    server: str | None = Field(default=None, description="An MCP server's URL, without user info or query.")
    label: str | None = Field(default=None, description="An MCP server's label, the name its sources are cited by.")
    tool_count: int | None = None
    tools: list[str] | None = Field(
        default=None, description="The tool names an MCP server offers the research sub-agents."
    )
    cached: bool | None = Field(default=None, description="The MCP tool listing came from the listing cache.")
    outcome: Outcome | None = Field(default=None, description="On done/error only. " + _OUTCOME)

    model_config = ConfigDict(extra="forbid", json_schema_extra=_reasons_by_state)

    @model_validator(mode="after")
    def _reason_is_listed(self) -> Status:
        codes = REASONS_BY_STATE.get(self.state)
        if codes is not None and self.reason not in set(codes):
            raise ValueError(f"a {self.state} status needs a reason among {', '.join(codes)}, not {self.reason!r}")
        return self


class SearchQuery(_Event):
    """A search is about to run: on the web, or in one local corpus."""

    type: Literal["search_query"] = "search_query"
    id: str
    query: str
    source: str = Field(description="The search backend: tavily for the web, corpus:<name> for a local corpus.")


class SearchHit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str
    url: str = Field(description="The page's URL, or a corpus passage's corpus://<name>/<path>#<anchor> (or #page=N).")
    domain: str = Field(description="The page's host, or the corpus name.")
    snippet: str


class SearchResults(_Event):
    """What a search returned; ``ok`` is false when it failed."""

    type: Literal["search_results"] = "search_results"
    id: str
    query: str
    ok: bool
    count: int
    results: list[SearchHit] = Field(default_factory=list)
    error: str | None = None


class Source(_Event):
    """A URL seen for the first time in this run: a web page, or a corpus passage (``corpus://…``, titled
    the way its Sources line reads)."""

    type: Literal["source"] = "source"
    title: str
    url: str
    domain: str = Field(description="The page's host, or the corpus name.")


class SubagentFindings(_Event):
    """A research unit's validated findings, as the orchestrator received them."""

    type: Literal["subagent_findings"] = "subagent_findings"
    unit: str
    summary: str
    findings: list[Finding] = Field(default_factory=list)
    gaps: list[str] = Field(default_factory=list)
    halted: HaltedBy | None = Field(default=None, description="Set when a guard or the user stopped the sub-agent.")


class Clarification(_Event):
    """Questions for the user; the run ends after this and waits for the answers on the same thread."""

    type: Literal["clarification"] = "clarification"
    questions: list[str]


class PageFetched(_Event):
    """A page, or a corpus passage, was read in full (or failed to be)."""

    type: Literal["page_fetched"] = "page_fetched"
    url: str
    ok: bool
    title: str | None = None
    chars: int = 0
    error: str | None = None


class Skill(_Event):
    """A sub-agent read a skill's instructions; sent the first time the run reads that skill."""

    type: Literal["skill"] = "skill"
    name: str
    path: str = Field(description="Where the skill was read, e.g. /skills/<name>/SKILL.md.")
    state: SkillState


class ToolCall(_Event):
    """A custom tool is about to run."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    tool: str
    args: dict[str, Any] = Field(
        default_factory=dict, description="The call's arguments, each value cut to 120 characters."
    )


class ToolResult(_Event):
    """What a custom tool call returned; ``ok`` is false and ``error_class`` set when it failed."""

    type: Literal["tool_result"] = "tool_result"
    id: str
    tool: str
    ok: bool
    summary: str = Field(description="The start of the result, or the error the model read.")
    bytes: int = Field(description="Size of the whole result in UTF-8 bytes, before any truncation.")
    error_class: ToolErrorClass | None = None


class Script(_Event):
    """The coding sub-agent's script as it finished the task: its final code, after every edit."""

    type: Literal["script"] = "script"
    path: str = Field(description="Where the script lives in the sandbox, e.g. /workspace/mean_price.py.")
    code: str = Field(description="The script's text, cut to 50,000 characters (see truncated).")
    language: str = "python"
    status: ScriptStatus = Field(description="What the coding sub-agent reported: ok, or failed.")
    output: str = Field(default="", description="The start of the output it reported, at most 2,000 characters.")
    bytes: int = Field(description="Size of the whole script in UTF-8 bytes.")
    truncated: bool = False


class McpCall(_Event):
    """A research sub-agent calls an MCP tool."""

    type: Literal["mcp_call"] = "mcp_call"
    id: str
    tool: str
    server: str = Field(description="The MCP server's label.")
    args: dict[str, str] = Field(default_factory=dict, description="The arguments, each value cut to 120 characters.")


class McpResult(_Event):
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


class TaskDiff(_Event):
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

EVENT_MODELS: dict[str, type[_Event]] = {
    model.model_fields["type"].default: model
    for model in (
        RunStart,
        Report,
        Usage,
        Status,
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
EVENT_TYPES = tuple(EVENT_MODELS)
_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


def build_event(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Stamp an event with its sender and validate it; drift is logged, never raised."""
    sender = current_sender.get()
    payload = {"role": sender.role, "task_id": sender.task_id, **fields}
    try:
        payload = _EVENT_ADAPTER.validate_python(payload).model_dump(mode="json", exclude_none=True)
    except ValidationError as exc:
        problems = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)]
        logger.warning("event drift in %r: %s", payload.get("type"), "; ".join(problems))
        payload = {k: v for k, v in to_jsonable_python(payload).items() if v is not None}
    redacted: dict[str, Any] = redact_tree(payload)
    return redacted


def emit(event_type: str, /, **fields: Any) -> dict[str, Any]:
    """Send one event on the ``custom`` stream channel; a no-op outside a graph run."""
    payload = build_event({"type": event_type, **fields})
    try:
        from langgraph.config import get_stream_writer

        writer = get_stream_writer()
    except (RuntimeError, KeyError):  # outside a graph run, e.g. a unit test of a tool (KeyError: a bare tool.ainvoke)
        return payload
    writer(payload)
    return payload


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of every event, for frontends to validate events and generate types from.

    It uses only 2020-12 keywords, so strict validators (Ajv's strict mode) compile it: the events are a
    plain ``oneOf`` that each event's ``type`` const decides, and ``$comment`` is ``protocol_version N``,
    the version that ``run_start`` carries.
    """
    schema = _EVENT_ADAPTER.json_schema(mode="serialization")
    # pydantic adds OpenAPI's ``discriminator``, which no JSON Schema vocabulary defines.
    del schema["discriminator"]
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
