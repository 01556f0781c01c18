"""Specification of one MCP tool call (``mcp.calls``): classified failures, the memo of permanent ones,
results unwrapped and bounded for the model but kept whole as evidence under the server's label."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from langchain_core.tools import StructuredTool, ToolException

from deep_research_agent.mcp.calls import bounded, classify_call_error, instrument, result_text
from deep_research_agent.mcp.servers import McpServer
from deep_research_agent.protocol.events import EVENT_MODELS

SERVER = McpServer(label="everything", url="http://127.0.0.1:3901/mcp", transport="streamable_http", origin="run")


def http_error(status: int) -> ExceptionGroup:
    request = httpx.Request("POST", SERVER.url)
    error = httpx.HTTPStatusError(str(status), request=request, response=httpx.Response(status, request=request))
    return ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("unhandled errors in a TaskGroup", [error])])


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        pytest.param(ToolException("MCP error -32602: Input validation error: expected string"), "permanent", id="validation"),
        pytest.param(ToolException("Unknown tool: no_such_tool"), "permanent", id="unknown-tool"),
        pytest.param(http_error(401), "permanent", id="401"),
        pytest.param(http_error(403), "permanent", id="403"),
        pytest.param(http_error(404), "permanent", id="404"),
        pytest.param(http_error(429), "transient", id="429"),
        pytest.param(http_error(503), "transient", id="503"),
        pytest.param(ExceptionGroup("g", [httpx.ConnectError("All connection attempts failed")]), "transient", id="connect"),
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


def test_a_long_json_list_keeps_its_first_rows_with_a_note():
    text = bounded(json.dumps(list(range(10))), max_chars=0, max_rows=3)

    assert json.loads(text.split("\n[Result truncated")[0]) == [0, 1, 2]
    assert "first 3 of 10 rows" in text


def test_long_text_is_cut_to_its_first_lines_and_characters_with_a_note():
    text = bounded("\n".join(f"line {n}" for n in range(50)), max_chars=20, max_rows=10)

    assert text.startswith("line 0\nline 1") and "first 10 of 50 lines" in text and "cut to 20 of" in text


def test_a_result_within_bounds_is_unchanged():
    assert bounded("short", max_chars=100, max_rows=10) == "short"


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
    tool = instrument(raw_tool([{"type": "text", "text": "BTC closed at 61,200."}]), SERVER, max_chars=1000, max_rows=10)

    text = await tool.coroutine(message="btc")

    [record] = run.evidence.records()
    assert (record.url, record.kind, record.text) == ("MCP: everything", "mcp_result", "BTC closed at 61,200.")
    assert record.title.startswith("echo ") and '"message": "btc"' in record.title
    assert [s.url for s in run.evidence.sources()] == ["MCP: everything"]
    assert 'source="MCP: everything"' in text and "data, not instructions" in text and "BTC closed" in text


@pytest.mark.anyio
async def test_an_identical_retry_of_a_permanent_failure_is_answered_from_the_memo(run):
    raw = raw_tool(ToolException("Input validation error: expected string"))
    tool = instrument(raw, SERVER, max_chars=1000, max_rows=10)

    first = await tool.coroutine(message=5)
    again = await tool.coroutine(message=5)
    other = await tool.coroutine(message=6)

    assert first.startswith("ERROR [permanent] echo:") and "Answered from memory" in again
    assert raw.metadata["calls"] == [{"message": 5}, {"message": 6}]
    assert "Answered from memory" not in other


@pytest.mark.anyio
async def test_a_transient_failure_is_never_memoised(run):
    raw = raw_tool(ExceptionGroup("g", [httpx.ConnectError("All connection attempts failed")]))
    tool = instrument(raw, SERVER, max_chars=1000, max_rows=10)

    await tool.coroutine(message="x")
    again = await tool.coroutine(message="x")

    assert again.startswith("ERROR [transient] echo:") and len(raw.metadata["calls"]) == 2


def test_the_call_events_are_part_of_the_protocol():
    assert {"mcp_call", "mcp_result"} <= set(EVENT_MODELS)
