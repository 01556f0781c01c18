"""Specification of the streaming event protocol: the registry, ``emit``, senders, redaction and the schema."""

from __future__ import annotations

import json
import logging
import typing
from pathlib import Path
from typing import TypedDict
from urllib.parse import urljoin

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema_specifications import REGISTRY
from langgraph.graph import END, START, StateGraph
from pydantic import ValidationError

from deep_research_agent.domain import secrets
from deep_research_agent.domain.assist import AssistDecision
from deep_research_agent.domain.clock import format_elapsed
from deep_research_agent.domain.findings import Finding
from deep_research_agent.domain.names import (
    END_WORDS,
    OUTCOME_NOTICES,
    Ceiling,
    EndReason,
    HaltedBy,
    ModelFailure,
    Outcome,
    RevisionReason,
    RunawayKind,
    ScriptStatus,
    SkillState,
    StatusState,
    StopMode,
    ToolErrorClass,
    TriageReason,
    WarningReason,
)
from deep_research_agent.domain.secrets import register_secrets
from deep_research_agent.domain.stops import HALT_REASONS
from deep_research_agent.domain.task_diff import MovedFigure
from deep_research_agent.domain.usage import RoleUsage
from deep_research_agent.protocol import events
from deep_research_agent.protocol.events import (
    ENGINE_VERSION,
    EVENT_MODELS,
    EVENT_TYPES,
    PROTOCOL_VERSION,
    STATUS_MODELS,
    BudgetHaltStatus,
    BudgetSoftStatus,
    Clarification,
    CompactedStatus,
    CompactingStatus,
    DoneStatus,
    ErrorStatus,
    Event,
    KeylessSearchStatus,
    Limits,
    LoopDetectedStatus,
    LoopHaltStatus,
    McpCall,
    McpErrorStatus,
    McpReadyStatus,
    McpResult,
    ModelCallStatus,
    ModelUnavailableStatus,
    PageFetched,
    RateLimitedStatus,
    RecursionLimitStatus,
    Report,
    RevisingStatus,
    RunawayHaltStatus,
    RunawayOutputStatus,
    RunStart,
    SandboxResetStatus,
    Script,
    SearchHit,
    SearchQuery,
    SearchResults,
    Skill,
    Source,
    Status,
    StatusEvent,
    SteerReceivedStatus,
    StopRequestedStatus,
    SubagentDoneStatus,
    SubagentFailedStatus,
    SubagentFindings,
    SubagentStartStatus,
    TaskDiff,
    ToolCall,
    ToolResult,
    TriageStatus,
    Usage,
    WarningStatus,
    emit,
)
from deep_research_agent.protocol.sender import Sender, current_sender

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schema" / "events.schema.json"
LIVE_KEY = "sk-live-abcdef123456"


@pytest.fixture(autouse=True)
def isolated_secrets(monkeypatch):
    """Each test starts with no registered secrets and leaves none behind."""
    monkeypatch.setattr(secrets, "_secrets", set())


@pytest.fixture
def sender():
    """Set ``current_sender`` for the test and restore it afterwards."""
    tokens = []

    def set_sender(value: Sender) -> None:
        tokens.append(current_sender.set(value))

    yield set_sender
    for token in reversed(tokens):
        current_sender.reset(token)


def warnings_logged(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith(events.__name__) and r.levelno >= logging.WARNING]


# --- registry -----------------------------------------------------------------------------------


def test_event_types_lists_the_registry_keys_in_order():
    assert EVENT_TYPES == tuple(EVENT_MODELS)


def test_the_registry_has_one_model_per_event_type():
    union_members = typing.get_args(typing.get_args(Event)[0])

    assert len(set(EVENT_MODELS.values())) == len(EVENT_MODELS)
    # A status is the union of its models per state, each a StatusEvent: the registry names their base.
    assert set(union_members) == {*EVENT_MODELS.values(), Status} - {StatusEvent}
    assert len(union_members) == len(EVENT_TYPES)


def test_a_status_has_one_model_per_state():
    members = typing.get_args(typing.get_args(Status)[0])

    assert list(STATUS_MODELS) == list(StatusState)
    assert list(STATUS_MODELS.values()) == list(members)
    for state, model in STATUS_MODELS.items():
        assert issubclass(model, StatusEvent)
        assert typing.get_args(model.model_fields["state"].annotation) == (state,)
        assert model.model_fields["type"].default == "status"


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_every_models_type_literal_equals_its_registry_key(event_type):
    field = EVENT_MODELS[event_type].model_fields["type"]

    assert typing.get_args(field.annotation) == (event_type,)
    assert field.default == event_type


# --- emit -------------------------------------------------------------------------------------


def test_emit_outside_a_graph_run_returns_the_payload():
    payload = emit(PageFetched(url="https://example.org/a", ok=True))

    assert payload == {
        "type": "page_fetched",
        "url": "https://example.org/a",
        "ok": True,
        "chars": 0,
        "role": "orchestrator",
    }


def test_emit_inside_a_graph_run_writes_to_the_custom_stream():
    class State(TypedDict):
        topic: str

    def node(state: State) -> dict:
        emit(WarningStatus(reason=WarningReason.CONFIG, detail=f"looking into {state['topic']}"))
        emit(Source(title="A", url="https://example.org/a", domain="example.org"))
        return {}

    builder = StateGraph(State)
    builder.add_node("research", node)
    builder.add_edge(START, "research")
    builder.add_edge("research", END)

    chunks = list(builder.compile().stream({"topic": "sodium"}, stream_mode="custom"))

    assert chunks == [
        {
            "type": "status",
            "state": "warning",
            "reason": "config",
            "detail": "looking into sodium",
            "role": "orchestrator",
        },
        {
            "type": "source",
            "title": "A",
            "url": "https://example.org/a",
            "domain": "example.org",
            "role": "orchestrator",
        },
    ]


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        (DoneStatus, {"reason": "loop_guard"}),
        (BudgetHaltStatus, {"reason": "dollars", "used": 1, "limit": 1, "detail": "d"}),
        (RevisingStatus, {"reason": "style", "detail": "d"}),
        (StopRequestedStatus, {"reason": "later", "detail": "d"}),
        (WarningStatus, {"reason": "something", "detail": "d"}),
        (TriageStatus, {"reason": "guessed", "detail": "research"}),
        (RunawayOutputStatus, {"reason": "loud", "chars": 1, "kept_chars": 1, "detail": "d"}),
        (RateLimitedStatus, {"reason": "HTTP 404", "wait_s": 1, "attempt": 1, "detail": "d"}),
    ],
    ids=["end", "ceiling", "revision", "stop mode", "warning", "triage", "runaway", "model failure"],
)
def test_a_status_whose_reason_is_not_among_its_codes_cannot_be_built(model, fields):
    with pytest.raises(ValidationError, match="reason"):
        model(**fields)


def test_a_status_state_is_its_models_and_nothing_else():
    with pytest.raises(ValidationError):
        SandboxResetStatus(state=StatusState.DONE, detail="d")


def test_an_event_with_an_unknown_or_a_missing_field_cannot_be_built():
    with pytest.raises(ValidationError, match="favicon"):
        Source(title="A", url="https://example.org/a", domain="example.org", favicon="a.ico")
    with pytest.raises(ValidationError, match="used"):
        BudgetHaltStatus(reason=Ceiling.TOKENS, limit=10, detail="d")


def test_a_server_error_is_a_model_failure_reason_too():
    for reason in ("HTTP 429", "HTTP 503", "timeout", "connection error"):
        assert RateLimitedStatus(reason=reason, wait_s=1, attempt=1, detail="d").reason == reason
    assert isinstance(RateLimitedStatus(reason="HTTP 429", wait_s=1, attempt=1, detail="d").reason, ModelFailure)


def test_emitting_logs_nothing(caplog):
    emit(DoneStatus(reason=EndReason.REPORT_DELIVERED, detail="Run time 0m 1s.", **END_COUNTS))

    assert warnings_logged(caplog) == []


def test_the_schema_lists_every_end_reason_and_every_halted_value():
    schema = events.json_schema()
    for end in ("DoneStatus", "ErrorStatus"):
        assert schema["$defs"][end]["properties"]["reason"] == {"$ref": "#/$defs/EndReason"}
    assert [member["const"] for member in schema["$defs"]["EndReason"]["oneOf"]] == [
        reason.value for reason in EndReason
    ]
    halted = schema["$defs"]["SubagentFindings"]["properties"]["halted"]
    assert {"$ref": "#/$defs/HaltedBy"} in halted["anyOf"]
    assert schema["$defs"]["HaltedBy"]["enum"] == [value.value for value in HaltedBy]


# The enum each state's ``reason`` is typed by, where it is one of a closed set.
REASON_ENUMS = {
    StatusState.DONE: EndReason,
    StatusState.ERROR: EndReason,
    StatusState.REVISING: RevisionReason,
    StatusState.WARNING: WarningReason,
    StatusState.BUDGET_SOFT: Ceiling,
    StatusState.BUDGET_HALT: Ceiling,
    StatusState.RUNAWAY_OUTPUT: RunawayKind,
    StatusState.RUNAWAY_HALT: RunawayKind,
    StatusState.TRIAGE: TriageReason,
    StatusState.STOP_REQUESTED: StopMode,
}


def closed_codes(definition: dict) -> list[str]:
    """The codes of an enum definition, or of one whose values are consts, each with its words (``EndReason``)."""
    return definition.get("enum") or [member["const"] for member in definition["oneOf"]]


def test_the_schema_lists_the_codes_of_every_state_whose_reason_is_a_closed_set():
    schema = events.json_schema()
    for state, codes in REASON_ENUMS.items():
        reason = schema["$defs"][STATUS_MODELS[state].__name__]["properties"]["reason"]
        assert reason == {"$ref": f"#/$defs/{codes.__name__}"}, state
        assert closed_codes(schema["$defs"][codes.__name__]) == [code.value for code in codes]
        assert "reason" in schema["$defs"][STATUS_MODELS[state].__name__]["required"], state
    keyless = schema["$defs"]["KeylessSearchStatus"]["properties"]["reason"]
    assert keyless["const"] == "missing_tavily_api_key"
    unavailable = schema["$defs"]["ModelUnavailableStatus"]["properties"]["reason"]["anyOf"]
    assert unavailable == [{"$ref": "#/$defs/ModelFailure"}, {"pattern": "^HTTP [5-9][0-9][0-9]$", "type": "string"}]
    reasoned = {state for state, model in STATUS_MODELS.items() if "reason" in model.model_fields}
    assert reasoned == {
        *REASON_ENUMS,
        StatusState.KEYLESS_SEARCH,
        StatusState.RATE_LIMITED,
        StatusState.MODEL_UNAVAILABLE,
    }


def test_the_schema_publishes_the_halt_reasons_the_end_words_and_the_outcome_notices():
    schema = events.json_schema()

    end_reasons = schema["$defs"]["EndReason"]
    assert [(member["const"], member["description"]) for member in end_reasons["oneOf"]] == [
        (reason.value, END_WORDS[reason]) for reason in EndReason
    ]
    assert all(END_WORDS[reason] for reason in EndReason), "every end reason has words for the end line"
    halts = schema["$defs"]["HaltReason"]
    assert halts["enum"] == [reason.value for reason in EndReason if reason in HALT_REASONS]
    assert set(halts["enum"]) <= {member["const"] for member in end_reasons["oneOf"]}
    outcome = schema["$defs"]["Outcome"]
    assert [(member["const"], member["description"]) for member in outcome["oneOf"]] == [
        (value.value, OUTCOME_NOTICES[value]) for value in Outcome
    ]
    assert OUTCOME_NOTICES[Outcome.ANSWERED] == "" and all(OUTCOME_NOTICES[o] for o in Outcome if o != "answered")


def test_every_status_definition_requires_its_type_and_state():
    schema = events.json_schema()
    assert schema["$defs"]["Status"]["required"] == ["type", "state"]
    for model in STATUS_MODELS.values():
        assert schema["$defs"][model.__name__]["required"][:2] == ["type", "state"], model.__name__


def test_every_event_definition_requires_its_type():
    schema = events.json_schema()
    for name, model in EVENT_MODELS.items():
        definition = schema["$defs"]["Status" if model is StatusEvent else model.__name__]
        assert definition["required"][0] == "type", name


# --- sender -------------------------------------------------------------------------------------


def test_events_are_sent_by_the_orchestrator_by_default():
    payload = emit(RevisingStatus(reason=RevisionReason.REPORT_QUALITY, detail="d"))

    assert payload["role"] == "orchestrator"
    assert "task_id" not in payload


def test_events_inside_a_subagent_carry_its_role_and_task_id(sender):
    sender(Sender(role="research-subagent", task_id="call_1"))

    payload = emit(SearchQuery(id="q1", query="sodium cells", source="tavily"))

    assert payload["role"] == "research-subagent"
    assert payload["task_id"] == "call_1"


def test_an_event_that_names_its_sender_keeps_it(sender):
    sender(Sender(role="orchestrator"))

    payload = emit(SubagentStartStatus(role="research-subagent", task_id="call_1", subagent="research-subagent"))

    assert payload["role"] == "research-subagent"
    assert payload["task_id"] == "call_1"


# --- secrets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("secret", [LIVE_KEY, "correct-horse-battery-staple"])
def test_a_registered_secret_never_appears_in_an_emitted_event(secret):
    register_secrets([secret])

    payload = emit(
        SubagentFindings(
            unit="costs",
            summary=f"The key is {secret}.",
            findings=[Finding(finding=f"leaked {secret}", evidence=f"[{secret}]", source="https://example.org/a")],
            gaps=[f"ask for {secret}"],
        )
    )

    text = json.dumps(payload)
    assert secret not in text
    assert payload["summary"] == "The key is [redacted]."
    assert payload["findings"][0]["finding"] == "leaked [redacted]"
    assert payload["gaps"] == ["ask for [redacted]"]


def test_a_registered_secret_is_redacted_in_nested_fields_too():
    register_secrets(["correct-horse-battery-staple"])

    payload = emit(
        McpReadyStatus(
            server="https://mcp.test", label="m", tool_count=1, tools=["correct-horse-battery-staple"], cached=False
        )
    )

    assert payload["tools"] == ["[redacted]"]


@pytest.mark.parametrize(
    ("token", "kept"),
    [
        ("sk-or-v1-0123456789abcdef", ""),
        ("sk-proj-AbCdEf123456", ""),
        ("tvly-dev-AbC123xyz789", ""),
        ("Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "Bearer "),
        ("bearer abcdef0123456789", "bearer "),
    ],
)
def test_key_shaped_tokens_are_redacted_even_if_unregistered(token, kept):
    payload = emit(SandboxResetStatus(detail=f"auth failed with {token} today"))

    assert payload["detail"] == f"auth failed with {kept}[redacted] today"


def test_ordinary_prose_is_untouched():
    prose = (
        "Task-based agents ask-the-expert style; risk-adjusted returns rose 4% "
        "(see https://example.org/desk-research/2024). Bearer bonds are rare."
    )

    payload = emit(Report(markdown=prose))

    assert payload["markdown"] == prose


def test_prose_about_bearer_instruments_is_untouched():
    prose = "Bearer instruments and bearer securities were abolished in the UK in 2015."

    payload = emit(Report(markdown=prose))

    assert payload["markdown"] == prose


def test_a_url_slug_starting_with_sk_is_not_a_key():
    url = "https://www.reuters.com/technology/sk-hynix-posts-record-profit-2024-07-25/"

    payload = emit(Source(title="SK hynix posts record profit", url=url, domain="www.reuters.com"))

    assert payload["url"] == url


# --- helpers and defaults -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0m 0s"), (59.6, "1m 0s"), (60, "1m 0s"), (252, "4m 12s"), (3725, "62m 5s"), (-3, "0m 0s")],
)
def test_format_elapsed_renders_minutes_and_seconds(seconds, text):
    assert format_elapsed(seconds) == text


def test_run_start_carries_the_protocol_and_engine_versions_by_default():
    payload = emit(RunStart(started_at="2026-01-01T00:00:00Z", thread_id="t1"))

    assert payload["protocol_version"] == PROTOCOL_VERSION
    assert payload["engine_version"] == ENGINE_VERSION
    assert payload["started_at"] == "2026-01-01T00:00:00Z"


# --- published schema ---------------------------------------------------------------------------


def test_the_published_schema_is_fresh():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == events.schema_text(), (
        "schema/events.schema.json is stale; regenerate it with "
        "`uv run python -m deep_research_agent.protocol.events > schema/events.schema.json`"
    )


def published_schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def test_the_schema_is_one_of_every_event_type_and_names_the_protocol_version():
    schema = published_schema()

    members = [schema["$defs"][member["$ref"].removeprefix("#/$defs/")] for member in schema["oneOf"]]
    assert [member["properties"]["type"]["const"] for member in members] == list(EVENT_TYPES)
    assert schema["$comment"] == f"protocol_version {PROTOCOL_VERSION}"


# Keywords whose value is a schema, a list of schemas, or a map of names to schemas (draft 2020-12).
SUBSCHEMA = {"additionalProperties", "contains", "contentSchema", "else", "if", "items", "not", "propertyNames", "then"}
SUBSCHEMA |= {"unevaluatedItems", "unevaluatedProperties"}
SUBSCHEMA_LIST = {"allOf", "anyOf", "oneOf", "prefixItems"}
SUBSCHEMA_MAP = {"$defs", "dependentSchemas", "patternProperties", "properties"}


def keywords_in(schema: dict | bool) -> typing.Iterator[str]:
    """Every keyword of a schema and of its subschemas; property names, enums, consts and defaults are data."""
    if isinstance(schema, bool):
        return
    for keyword, value in schema.items():
        yield keyword
        subschemas = [value] if keyword in SUBSCHEMA else value if keyword in SUBSCHEMA_LIST else []
        for subschema in value.values() if keyword in SUBSCHEMA_MAP else subschemas:
            yield from keywords_in(subschema)


def draft_2020_12_keywords() -> set[str]:
    """The keywords the 2020-12 vocabularies define: the properties of the meta-schemas its dialect combines."""
    dialect = REGISTRY.contents(Draft202012Validator.META_SCHEMA["$id"])
    return {
        keyword
        for vocabulary in dialect["allOf"]
        for keyword in REGISTRY.contents(urljoin(dialect["$id"], vocabulary["$ref"]))["properties"]
    }


def test_the_published_schema_is_a_draft_2020_12_schema_of_standard_keywords_only():
    schema = published_schema()

    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == Draft202012Validator.META_SCHEMA["$id"]
    assert {"oneOf", "anyOf", "const", "enum", "pattern"} <= set(keywords_in(schema))
    assert set(keywords_in(schema)) - draft_2020_12_keywords() == set()


END_COUNTS = {"tool_calls": 3, "total_tokens": 1000, "report_chars": 16, "elapsed_s": 12.5, "elapsed": "0m 13s"}


def one_status_per_state() -> list[StatusEvent]:
    """A status of every state, with every field its model has, as the emitters fill them."""
    model_fields = {"model": "m", "attempt": 3, "detail": "The model endpoint answered HTTP 503."}
    mcp = {"server": "https://mcp.test/mcp", "label": "everything"}
    return [
        DoneStatus(
            reason=EndReason.REPORT_DELIVERED, detail="Run time 0m 13s.", outcome=Outcome.ANSWERED, **END_COUNTS
        ),
        ErrorStatus(
            reason=EndReason.BUDGET_EXHAUSTED, detail="Run time 0m 13s.", outcome=Outcome.BUDGET_EXHAUSTED, **END_COUNTS
        ),
        SubagentStartStatus(subagent="research-subagent", model="m"),
        SubagentDoneStatus(subagent="research-subagent", model="m", model_calls=2, total_tokens=500, tool_calls=3),
        SubagentFailedStatus(subagent="research-subagent", detail="RuntimeError: boom"),
        RevisingStatus(reason=RevisionReason.SCRIPT_ANSWER, detail="SCRIPT is missing."),
        WarningStatus(reason=WarningReason.KNOWLEDGE_WRITE_FAILED, detail="The knowledge base could not store it."),
        KeylessSearchStatus(detail="Web search runs without a key."),
        ModelCallStatus(model="m", step=2, unit="costs", after=["task"], after_chars=40),
        RateLimitedStatus(reason="HTTP 503", wait_s=1.5, **model_fields),
        RateLimitedStatus(label="everything", wait_s=2.0, attempt=1, detail="MCP server everything answered 429."),
        ModelUnavailableStatus(reason=ModelFailure.TIMEOUT, **model_fields),
        BudgetSoftStatus(reason=Ceiling.STEPS, used=150, limit=200, detail="150 of 200 graph steps used."),
        BudgetHaltStatus(reason=Ceiling.COST, used=0.5, limit=0.5, detail="$0.5 of $0.5."),
        RecursionLimitStatus(used=190, limit=200, detail="190 of 200 graph steps used."),
        LoopDetectedStatus(repeats=3, detail="web_search repeated with the same arguments and result"),
        LoopHaltStatus(repeats=6, detail="web_search returned the same result 6 times"),
        RunawayOutputStatus(reason=RunawayKind.LENGTH, chars=9000, kept_chars=4000, detail="reply trimmed (length)"),
        RunawayHaltStatus(reason=RunawayKind.REPETITION, chars=9000, kept_chars=40, detail="a second runaway reply"),
        TriageStatus(reason=TriageReason.LONG_MESSAGE, detail="research"),
        CompactingStatus(tokens_estimate=90_000),
        CompactedStatus(messages_summarized=30, messages_kept=6, tokens_estimate=20_000),
        StopRequestedStatus(reason=StopMode.WRAP_UP, detail="Wrapping up."),
        SteerReceivedStatus(message="Also cover Europe", detail="Steering message 1 received."),
        McpReadyStatus(tool_count=1, tools=["echo"], cached=True, **mcp),
        McpErrorStatus(detail="the server refused the connection", **mcp),
        SandboxResetStatus(detail="the sandbox session ended (HTTP 404); earlier files are gone."),
    ]


def test_the_samples_cover_every_status_state():
    assert {status.state for status in one_status_per_state()} == set(StatusState)


def emitted_events() -> list[dict]:
    """One emitted event of each shape a run sends, a sub-agent's among them."""
    hit = SearchHit(title="Halvorsen cell", url="https://example.org/a", domain="example.org", snippet="412 Wh/kg")
    orchestrator = [
        emit(
            RunStart(
                started_at="2026-01-01T00:00:00Z",
                thread_id="t1",
                run_id="r1",
                assist={"research-subagent": AssistDecision(on=True, reason="local_profile", model="qwen2.5:7b")},
            )
        ),
        *[emit(status) for status in one_status_per_state()],
        emit(Report(markdown="# Report\n\nDone.", partial=True)),
        emit(
            Usage(
                tool_calls=3,
                model_calls=4,
                input_tokens=900,
                output_tokens=100,
                total_tokens=1000,
                cost_usd=0.01,
                per_role={"orchestrator": RoleUsage(model_calls=2, input_tokens=400)},
                elapsed_s=12.5,
                elapsed="0m 13s",
                limits=Limits(max_tool_calls=40, recursion_limit=200),
            )
        ),
    ]
    token = current_sender.set(Sender(role="research-subagent", task_id="call_1"))
    try:
        subagent = [
            emit(SearchQuery(id="q1", query="sodium glass", source="tavily")),
            emit(SearchResults(id="q1", query="sodium glass", ok=True, count=1, results=[hit])),
            emit(Source(title=hit.title, url=hit.url, domain=hit.domain)),
            emit(PageFetched(url=hit.url, ok=True, title=hit.title, chars=5000)),
            emit(McpCall(id="mcp-1", tool="echo", server="everything", args={"message": "412"})),
            emit(
                McpResult(
                    id="mcp-1",
                    tool="echo",
                    server="everything",
                    ok=False,
                    summary="bad",
                    bytes=0,
                    error_class="permanent",
                    repeated=True,
                )
            ),
            emit(
                TaskDiff(
                    task="kelp",
                    previous_run_at="2026-01-01T00:00:00Z",
                    new_findings=["It stored 1,300 tonnes."],
                    changed_sources=["https://a.test/kelp"],
                    moved_figures=[
                        MovedFigure(source="https://a.test/kelp", before="1,240 tonnes", after="1,300 tonnes")
                    ],
                )
            ),
            emit(
                SubagentFindings(
                    unit="costs",
                    summary="412 Wh/kg.",
                    gaps=["cost"],
                    halted=HaltedBy.BUDGET,
                    findings=[Finding(finding="412 Wh/kg", evidence="412 Wh/kg", source=hit.url)],
                )
            ),
            emit(
                Skill(name="source-reliability", path="/skills/source-reliability/SKILL.md", state=SkillState.APPLIED)
            ),
            emit(ToolCall(id="c1", tool="convert_units", args={"value": 1, "from_unit": "kWh"})),
            emit(
                ToolResult(
                    id="c1",
                    tool="convert_units",
                    ok=False,
                    summary="TOOL ERROR (convert_units, permanent): ...",
                    bytes=0,
                    error_class=ToolErrorClass.PERMANENT,
                )
            ),
        ]
    finally:
        current_sender.reset(token)
    token = current_sender.set(Sender(role="coding-subagent", task_id="call_2"))
    try:
        subagent += [
            emit(Script(path="/workspace/mean.py", code="print(42)\n", status=ScriptStatus.OK, output="42", bytes=10)),
        ]
    finally:
        current_sender.reset(token)
    return orchestrator + subagent + [emit(Clarification(questions=["Which region?"]))]


def test_emitted_events_validate_against_the_published_schema_with_format_checks(caplog):
    validator = Draft202012Validator(published_schema(), format_checker=FormatChecker())

    payloads = emitted_events()

    assert warnings_logged(caplog) == []
    assert {payload["type"] for payload in payloads} == set(EVENT_TYPES)
    assert {payload["state"] for payload in payloads if payload["type"] == "status"} == set(StatusState)
    assert [list(validator.iter_errors(payload)) for payload in payloads] == [[] for _ in payloads]


@pytest.mark.parametrize(
    "event",
    [
        {"title": "A", "url": "https://example.org/a", "domain": "example.org"},
        {"type": "status", "state": "done", "reason": "finished", "detail": "Run time 0m 1s."},
        {"type": "status", "state": "budget_halt"},
        {"type": "report", "markdown": "# R", "favicon": "a.ico"},
    ],
    ids=["no type", "unlisted end reason", "guard without its ceiling", "unknown field"],
)
def test_the_published_schema_rejects_drifted_events(event):
    assert not Draft202012Validator(published_schema()).is_valid(event)
