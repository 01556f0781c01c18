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

from deep_research_agent.domain import secrets
from deep_research_agent.domain.clock import format_elapsed
from deep_research_agent.domain.names import EndReason, HaltedBy
from deep_research_agent.domain.secrets import register_secrets
from deep_research_agent.protocol import events
from deep_research_agent.protocol.events import (
    ENGINE_VERSION,
    EVENT_MODELS,
    EVENT_TYPES,
    PROTOCOL_VERSION,
    Event,
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


def drift_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == events.__name__ and r.levelno == logging.WARNING]


# --- registry -----------------------------------------------------------------------------------


def test_event_types_lists_the_registry_keys_in_order():
    assert EVENT_TYPES == tuple(EVENT_MODELS)


def test_the_registry_has_one_model_per_event_type():
    union_members = typing.get_args(typing.get_args(Event)[0])

    assert len(set(EVENT_MODELS.values())) == len(EVENT_MODELS)
    assert set(union_members) == set(EVENT_MODELS.values())
    assert len(union_members) == len(EVENT_TYPES)


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_every_models_type_literal_equals_its_registry_key(event_type):
    field = EVENT_MODELS[event_type].model_fields["type"]

    assert typing.get_args(field.annotation) == (event_type,)
    assert field.default == event_type


# --- emit -------------------------------------------------------------------------------------


def test_emit_outside_a_graph_run_returns_the_validated_payload():
    payload = emit("page_fetched", url="https://example.org/a", ok=True)

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
        emit("status", state="warning", detail=f"looking into {state['topic']}")
        emit("source", title="A", url="https://example.org/a", domain="example.org")
        return {}

    builder = StateGraph(State)
    builder.add_node("research", node)
    builder.add_edge(START, "research")
    builder.add_edge("research", END)

    chunks = list(builder.compile().stream({"topic": "sodium"}, stream_mode="custom"))

    assert chunks == [
        {"type": "status", "state": "warning", "detail": "looking into sodium", "role": "orchestrator"},
        {
            "type": "source",
            "title": "A",
            "url": "https://example.org/a",
            "domain": "example.org",
            "role": "orchestrator",
        },
    ]


def test_a_valid_event_logs_no_drift_warning(caplog):
    emit("status", state="done", reason="report_delivered", detail="Run time 0m 1s.")

    assert drift_records(caplog) == []


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        ("done", None),
        ("error", "loop_guard"),
        ("budget_halt", "dollars"),
        ("revising", "style"),
        ("stop_requested", "later"),
    ],
)
def test_a_status_whose_reason_is_not_among_its_listed_codes_is_drift(caplog, state, reason):
    emit("status", state=state, reason=reason)

    [record] = drift_records(caplog)
    assert "needs a reason among" in record.getMessage()


def test_the_schema_lists_every_end_reason_and_every_halted_value():
    schema = events.json_schema()
    status_rules = schema["$defs"]["Status"]["allOf"]
    end_codes = next(
        r["then"]["properties"]["reason"]["enum"]
        for r in status_rules
        if r["if"]["properties"]["state"]["const"] == "done"
    )
    assert end_codes == [reason.value for reason in EndReason]
    halted = schema["$defs"]["SubagentFindings"]["properties"]["halted"]
    assert {"$ref": "#/$defs/HaltedBy"} in halted["anyOf"]
    assert schema["$defs"]["HaltedBy"]["enum"] == [value.value for value in HaltedBy]


def test_every_event_definition_requires_its_type():
    schema = events.json_schema()
    for name, model in EVENT_MODELS.items():
        definition = schema["$defs"][model.__name__]
        assert definition["required"][0] == "type", name


def test_an_unknown_field_is_logged_as_drift_and_still_emitted(caplog):
    payload = emit("source", title="A", url="https://example.org/a", domain="example.org", favicon="a.ico")

    assert payload["favicon"] == "a.ico"
    assert payload["title"] == "A"
    assert payload["type"] == "source"
    [record] = drift_records(caplog)
    assert "drift" in record.getMessage()
    assert "favicon" in record.getMessage()


def test_a_bad_status_state_is_logged_as_drift_and_still_emitted(caplog):
    payload = emit("status", state="finished", detail="all good")

    assert payload["state"] == "finished"
    assert payload["detail"] == "all good"
    assert payload["role"] == "orchestrator"
    [record] = drift_records(caplog)
    assert "'status'" in record.getMessage()


def test_an_unknown_event_type_is_logged_as_drift_and_still_emitted(caplog):
    payload = emit("heartbeat", beat=1)

    assert payload["type"] == "heartbeat"
    assert payload["beat"] == 1
    assert len(drift_records(caplog)) == 1


# --- sender -------------------------------------------------------------------------------------


def test_events_are_sent_by_the_orchestrator_by_default():
    payload = emit("status", state="revising")

    assert payload["role"] == "orchestrator"
    assert "task_id" not in payload


def test_events_inside_a_subagent_carry_its_role_and_task_id(sender):
    sender(Sender(role="research-subagent", task_id="call_1"))

    payload = emit("search_query", id="q1", query="sodium cells", source="tavily")

    assert payload["role"] == "research-subagent"
    assert payload["task_id"] == "call_1"


# --- secrets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("secret", [LIVE_KEY, "correct-horse-battery-staple"])
def test_a_registered_secret_never_appears_in_an_emitted_event(secret):
    register_secrets([secret])

    payload = emit(
        "subagent_findings",
        unit="costs",
        summary=f"The key is {secret}.",
        findings=[{"finding": f"leaked {secret}", "evidence": f"[{secret}]", "source": "https://example.org/a"}],
        gaps=[f"ask for {secret}"],
    )

    text = json.dumps(payload)
    assert secret not in text
    assert payload["summary"] == "The key is [redacted]."
    assert payload["findings"][0]["finding"] == "leaked [redacted]"
    assert payload["gaps"] == ["ask for [redacted]"]


def test_a_registered_secret_is_redacted_in_drifted_events_too():
    register_secrets(["correct-horse-battery-staple"])

    payload = emit("status", state="error", extra={"nested": ["correct-horse-battery-staple"]})

    assert payload["extra"] == {"nested": ["[redacted]"]}


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
    payload = emit("status", state="error", detail=f"auth failed with {token} today")

    assert payload["detail"] == f"auth failed with {kept}[redacted] today"


def test_ordinary_prose_is_untouched():
    prose = (
        "Task-based agents ask-the-expert style; risk-adjusted returns rose 4% "
        "(see https://example.org/desk-research/2024). Bearer bonds are rare."
    )

    payload = emit("report", markdown=prose)

    assert payload["markdown"] == prose


def test_prose_about_bearer_instruments_is_untouched():
    prose = "Bearer instruments and bearer securities were abolished in the UK in 2015."

    payload = emit("report", markdown=prose)

    assert payload["markdown"] == prose


def test_a_url_slug_starting_with_sk_is_not_a_key():
    url = "https://www.reuters.com/technology/sk-hynix-posts-record-profit-2024-07-25/"

    payload = emit("source", title="SK hynix posts record profit", url=url, domain="www.reuters.com")

    assert payload["url"] == url


def test_the_drift_warning_never_logs_a_registered_secret(caplog):
    register_secrets(["correct-horse-battery-staple"])

    emit("status", state="error", note="the key is correct-horse-battery-staple")

    assert drift_records(caplog)
    assert "correct-horse-battery-staple" not in caplog.text


# --- helpers and defaults -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0m 0s"), (59.6, "1m 0s"), (60, "1m 0s"), (252, "4m 12s"), (3725, "62m 5s"), (-3, "0m 0s")],
)
def test_format_elapsed_renders_minutes_and_seconds(seconds, text):
    assert format_elapsed(seconds) == text


def test_run_start_carries_the_protocol_and_engine_versions_by_default():
    payload = emit("run_start", started_at="2026-01-01T00:00:00Z", thread_id="t1")

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
    assert {"oneOf", "allOf", "if", "then", "const", "enum"} <= set(keywords_in(schema))
    assert set(keywords_in(schema)) - draft_2020_12_keywords() == set()


def emitted_events() -> list[dict]:
    """One emitted event of each shape a run sends, a sub-agent's among them."""
    hit = {"title": "Halvorsen cell", "url": "https://example.org/a", "domain": "example.org", "snippet": "412 Wh/kg"}
    orchestrator = [
        emit("run_start", started_at="2026-01-01T00:00:00Z", thread_id="t1", run_id="r1"),
        emit("status", state="model_call", model="m", step=2, unit="costs", after=["task"], after_chars=40),
        emit("status", state="budget_soft", reason="tokens", used=750.0, limit=1000.0),
        emit("report", markdown="# Report\n\nDone.", partial=True),
        emit(
            "usage",
            tool_calls=3,
            model_calls=4,
            input_tokens=900,
            output_tokens=100,
            total_tokens=1000,
            cost_usd=0.01,
            per_role={"orchestrator": {"model_calls": 2, "input_tokens": 400}},
            citations={"valid": 1},
            elapsed_s=12.5,
            elapsed="0m 13s",
            limits={"max_tool_calls": 40, "recursion_limit": 200},
        ),  # fmt: skip
        emit("status", state="done", reason="report_delivered", detail="Run time 0m 13s.", tool_calls=3),
    ]
    token = current_sender.set(Sender(role="research-subagent", task_id="call_1"))
    try:
        subagent = [
            emit("search_query", id="q1", query="sodium glass", source="tavily"),
            emit("search_results", id="q1", query="sodium glass", ok=True, count=1, results=[hit]),
            emit("source", title=hit["title"], url=hit["url"], domain=hit["domain"]),
            emit("page_fetched", url=hit["url"], ok=True, title=hit["title"], chars=5000),
            emit("mcp_call", id="mcp-1", tool="echo", server="everything", args={"message": "412"}),
            emit(
                "mcp_result",
                id="mcp-1",
                tool="echo",
                server="everything",
                ok=False,
                summary="bad",
                bytes=0,
                error_class="permanent",
                repeated=True,
            ),
            emit(
                "task_diff",
                task="kelp",
                previous_run_at="2026-01-01T00:00:00Z",
                new_findings=["It stored 1,300 tonnes."],
                changed_sources=["https://a.test/kelp"],
                moved_figures=[{"source": "https://a.test/kelp", "before": "1,240 tonnes", "after": "1,300 tonnes"}],
            ),
            emit(
                "subagent_findings",
                unit="costs",
                summary="412 Wh/kg.",
                gaps=["cost"],
                halted="budget",
                findings=[{"finding": "412 Wh/kg", "evidence": "412 Wh/kg", "source": hit["url"]}],
            ),  # fmt: skip
            emit("skill", name="source-reliability", path="/skills/source-reliability/SKILL.md", state="applied"),
            emit("tool_call", id="c1", tool="convert_units", args={"value": 1, "from_unit": "kWh"}),
            emit(
                "tool_result",
                id="c1",
                tool="convert_units",
                ok=False,
                summary="TOOL ERROR (convert_units, permanent): ...",
                bytes=0,
                error_class="permanent",
            ),
            emit(
                "status", state="sandbox_reset", detail="the sandbox session ended (HTTP 404); earlier files are gone."
            ),
        ]
    finally:
        current_sender.reset(token)
    token = current_sender.set(Sender(role="coding-subagent", task_id="call_2"))
    try:
        subagent += [
            emit("script", path="/workspace/mean.py", code="print(42)\n", status="ok", output="42", bytes=10),
            emit("status", state="revising", reason="script_answer", detail="SCRIPT is missing."),
        ]
    finally:
        current_sender.reset(token)
    return orchestrator + subagent + [emit("clarification", questions=["Which region?"])]


def test_emitted_events_validate_against_the_published_schema_with_format_checks(caplog):
    validator = Draft202012Validator(published_schema(), format_checker=FormatChecker())

    payloads = emitted_events()

    assert drift_records(caplog) == []
    assert {payload["type"] for payload in payloads} == set(EVENT_TYPES)
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
