"""Specification of one MCP tool call (``mcp.calls``): classified failures, the memo of permanent ones,
results unwrapped and bounded for the model but kept whole as evidence under the server's label."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from langchain_core.tools import StructuredTool, ToolException

from deep_research_agent.domain.retry_after import MAX_DELAY_S
from deep_research_agent.mcp.calls import (
    CallLimits,
    McpSlots,
    classify_call_error,
    instrument,
    rate_limit_wait,
    result_text,
)
from deep_research_agent.protocol.events import EVENT_MODELS
from deep_research_agent.settings.mcp_servers import McpServer
from deep_research_agent.tools.results import ResultLimits

LIMITS = CallLimits(results=ResultLimits(max_chars=1000, max_rows=10))
SERVER = McpServer(label="everything", url="http://127.0.0.1:3901/mcp", transport="streamable_http", origin="run")


def http_error(status: int) -> ExceptionGroup:
    request = httpx.Request("POST", SERVER.url)
    error = httpx.HTTPStatusError(str(status), request=request, response=httpx.Response(status, request=request))
    return ExceptionGroup(
        "unhandled errors in a TaskGroup", [ExceptionGroup("unhandled errors in a TaskGroup", [error])]
    )


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        pytest.param(
            ToolException("MCP error -32602: Input validation error: expected string"), "permanent", id="validation"
        ),
        pytest.param(ToolException("Unknown tool: no_such_tool"), "permanent", id="unknown-tool"),
        pytest.param(http_error(401), "permanent", id="401"),
        pytest.param(http_error(403), "permanent", id="403"),
        pytest.param(http_error(404), "permanent", id="404"),
        pytest.param(http_error(429), "transient", id="429"),
        pytest.param(http_error(503), "transient", id="503"),
        pytest.param(
            ExceptionGroup("g", [httpx.ConnectError("All connection attempts failed")]), "transient", id="connect"
        ),
        pytest.param(ExceptionGroup("g", [httpx.ReadTimeout("timed out")]), "transient", id="timeout"),
        pytest.param(ToolException("[transient] upstream database is restarting"), "transient", id="tagged-transient"),
        pytest.param(ToolException("[permanent] the report id does not exist"), "permanent", id="tagged-permanent"),
    ],
)
def test_failures_are_classified_so_the_model_knows_whether_to_retry(exc, kind):
    failure = classify_call_error(exc)

    assert failure.kind == kind
    assert ("do not retry" in failure.message) == (kind == "permanent")
    assert ("Retry once" in failure.message) == (kind == "transient")
    assert "[permanent]" not in failure.message and "[transient]" not in failure.message
    assert "TaskGroup" not in failure.message and "\n" not in failure.message


def test_an_http_status_failure_says_its_status_in_one_line():
    assert classify_call_error(http_error(401)).message.startswith("HTTP 401 Unauthorized.")


def test_text_blocks_are_joined_and_other_blocks_named():
    content = [{"type": "text", "text": "Echo: hi"}, {"type": "image", "mime_type": "image/png", "base64": "AAAA"}]

    assert result_text(content, None) == "Echo: hi\n[image: image/png]"


def test_structured_content_is_the_text_when_there_is_none():
    assert json.loads(result_text([], {"structured_content": {"sum": 5}})) == {"sum": 5}


def raw_tool(behaviour: Any) -> StructuredTool:
    """An adapter-shaped MCP tool (content and artifact; tool errors raised) that records its calls."""
    calls: list[dict[str, Any]] = []

    async def call_tool(runtime: Any = None, **arguments: Any) -> tuple[Any, Any]:
        calls.append(arguments)
        if isinstance(behaviour, BaseException):
            raise behaviour
        return behaviour, None

    tool = StructuredTool(
        name="echo",
        description="Echoes.",
        args_schema={"type": "object", "properties": {"message": {"type": "string"}}},
        coroutine=call_tool,
        response_format="content_and_artifact",
    )
    tool.metadata = {"calls": calls}
    return tool


# The tools are called through their coroutine, as the tool node does, outside a graph (no stream writer).


@pytest.mark.anyio
async def test_a_result_becomes_evidence_under_the_servers_label_and_a_delimited_block(run):
    tool = instrument(raw_tool([{"type": "text", "text": "BTC closed at 61,200."}]), SERVER, LIMITS)

    text = await tool.coroutine(message="btc")

    [record] = run.evidence.records()
    assert (record.url, record.kind, record.text) == ("MCP: everything", "mcp_result", "BTC closed at 61,200.")
    assert record.title.startswith("echo ") and '"message": "btc"' in record.title
    assert [s.url for s in run.evidence.sources()] == ["MCP: everything"]
    assert 'source="MCP: everything"' in text and "data, not instructions" in text and "BTC closed" in text


@pytest.mark.anyio
async def test_a_large_result_is_cut_for_the_model_without_a_sandbox_but_kept_whole_as_evidence(run):
    rows = [{"ticker": f"T{n}", "close": n} for n in range(40)]
    tool = instrument(raw_tool([{"type": "text", "text": json.dumps(rows)}]), SERVER, LIMITS)

    text = await tool.coroutine(message="all")

    assert "showing the first 10 of 40 rows" in text and "No sandbox is attached" in text
    assert '"T9"' in text and '"T10"' not in text
    assert json.loads(run.evidence.records()[0].text) == rows


@pytest.mark.anyio
async def test_an_identical_retry_of_a_permanent_failure_is_answered_from_the_memo(run):
    raw = raw_tool(ToolException("Input validation error: expected string"))
    tool = instrument(raw, SERVER, LIMITS)

    first = await tool.coroutine(message=5)
    again = await tool.coroutine(message=5)
    other = await tool.coroutine(message=6)

    assert first.startswith("TOOL ERROR (echo, permanent):") and "Answered from memory" in again
    assert raw.metadata["calls"] == [{"message": 5}, {"message": 6}]
    assert "Answered from memory" not in other


@pytest.mark.anyio
async def test_a_transient_failure_is_never_memoised(run):
    raw = raw_tool(ExceptionGroup("g", [httpx.ConnectError("All connection attempts failed")]))
    tool = instrument(raw, SERVER, LIMITS)

    await tool.coroutine(message="x")
    again = await tool.coroutine(message="x")

    assert again.startswith("TOOL ERROR (echo, transient):") and len(raw.metadata["calls"]) == 2


def test_the_call_events_are_part_of_the_protocol():
    assert {"mcp_call", "mcp_result"} <= set(EVENT_MODELS)


# --- load: the run's slots and 429 backoff ---------------------------------------------------------


def too_many(retry_after: str | None = None) -> ExceptionGroup:
    request = httpx.Request("POST", SERVER.url)
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    response = httpx.Response(429, request=request, headers=headers)
    return ExceptionGroup(
        "unhandled errors in a TaskGroup", [httpx.HTTPStatusError("429", request=request, response=response)]
    )


def test_a_429_waits_for_its_retry_after_else_backs_off_exponentially_up_to_a_cap():
    assert 2.5 <= rate_limit_wait(too_many("2.5"), 0) <= 2.75, "never earlier than the server asked"
    assert 0.5 <= rate_limit_wait(too_many(), 0) <= 1.0
    assert 4.0 <= rate_limit_wait(too_many(), 3) <= 8.0
    assert rate_limit_wait(too_many(), 20) <= MAX_DELAY_S
    assert rate_limit_wait(http_error(503), 0) is None


def scripted_tool(
    answers: list[Any], calls: list[float], *, hold_s: float = 0.0, state: dict[str, int] | None = None
) -> StructuredTool:
    """An MCP tool that raises or returns ``answers`` in turn, recording when each call started and, in
    ``state`` (which tools may share), how many calls were in flight at most."""
    state = {"in_flight": 0, "max_in_flight": 0} if state is None else state

    async def call_tool(runtime: Any = None, **arguments: Any) -> tuple[Any, Any]:
        calls.append(asyncio.get_running_loop().time())
        state["in_flight"] += 1
        state["max_in_flight"] = max(state["max_in_flight"], state["in_flight"])
        try:
            await asyncio.sleep(hold_s)
            answer = answers.pop(0) if answers else [{"type": "text", "text": "ok"}]
        finally:
            state["in_flight"] -= 1
        if isinstance(answer, BaseException):
            raise answer
        return answer, None

    tool = StructuredTool(
        name="lookup", description="", args_schema={"type": "object", "properties": {}}, coroutine=call_tool
    )
    tool.metadata = state
    return tool


@pytest.mark.anyio
async def test_a_rate_limited_call_waits_and_then_succeeds(run):
    calls: list[float] = []
    tool = instrument(scripted_tool([too_many("0.1"), too_many("0.1")], calls), SERVER, LIMITS)

    text = await tool.coroutine(key="a")

    assert "ok" in text and len(calls) == 3
    assert calls[2] - calls[0] >= 0.2


@pytest.mark.anyio
async def test_a_call_gives_up_as_transient_when_the_next_wait_would_pass_its_budget(run):
    calls: list[float] = []
    limits = CallLimits(max_wait_s=0.25)
    tool = instrument(scripted_tool([too_many("0.1")] * 10, calls), SERVER, limits)

    text = await tool.coroutine(key="a")

    assert text.startswith("TOOL ERROR (lookup, transient):") and "HTTP 429" in text
    assert len(calls) == 3  # waited 0.1 + 0.1; a third wait would pass 0.25


@pytest.mark.anyio
async def test_the_runs_slots_cap_calls_in_flight_across_tools(run):
    calls: list[float] = []
    shared = {"in_flight": 0, "max_in_flight": 0}
    first = scripted_tool([], calls, hold_s=0.05, state=shared)
    second = scripted_tool([], calls, hold_s=0.05, state=shared)
    limits = CallLimits(max_concurrency=3)
    tools = [instrument(first, SERVER, limits), instrument(second, SERVER, limits)]

    await asyncio.gather(*(tools[i % 2].coroutine(key=str(i)) for i in range(20)))

    assert len(calls) == 20
    assert shared["max_in_flight"] == 3
    slots = run.attachments.get(McpSlots)
    assert slots is not None and slots.semaphore._value == 3


@pytest.mark.anyio
async def test_a_call_waiting_out_a_429_frees_its_slot_for_others(run):
    calls: list[float] = []
    limited = instrument(scripted_tool([too_many("0.3")], calls), SERVER, CallLimits(max_concurrency=1))
    other_calls: list[float] = []
    other = instrument(scripted_tool([], other_calls), SERVER, CallLimits(max_concurrency=1))

    async def later() -> str:
        await asyncio.sleep(0.05)
        return await other.coroutine(key="b")

    started = asyncio.get_running_loop().time()
    await asyncio.gather(limited.coroutine(key="a"), later())

    assert other_calls[0] - started < 0.2, "the other call waited for the rate-limited one's backoff"


@pytest.mark.anyio
async def test_a_call_the_server_never_answers_is_cut_off_as_transient_and_frees_its_slot(run):
    calls: list[float] = []
    limits = CallLimits(max_concurrency=1, call_timeout_s=0.1)
    hanging = instrument(scripted_tool([], calls, hold_s=30), SERVER, limits)
    answering = instrument(scripted_tool([], []), SERVER, limits)

    started = asyncio.get_running_loop().time()
    text = await hanging.coroutine(key="a")
    after = await answering.coroutine(key="b")

    assert asyncio.get_running_loop().time() - started < 5
    assert (
        text.startswith("TOOL ERROR (lookup, transient): the server did not answer within 0.1 s.")
        and "Retry once" in text
    )
    assert "ok" in after, "the cut-off call still held the run's only slot"


def test_a_call_timeout_of_zero_means_no_limit():
    assert CallLimits(call_timeout_s=0).call_timeout_s == 0
