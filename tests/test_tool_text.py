"""Tool calls written as text are read in every shape real models were measured to write them, and run when\ntheir arguments fit the tool."""

from __future__ import annotations

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse, TodoListMiddleware
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from deep_research_agent.assist import one_item_list
from deep_research_agent.modelcalls import text_tool_calls
from deep_research_agent.modelcalls.text_tool_calls import TEXT_TOOL_CALLS_KEY, TextToolCallsMiddleware, validate_call
from deep_research_agent.modelcalls.tool_text import TextToolCall, parse_text_tool_calls, strip_reasoning
from testkit.guard_calls import capture_events

SEARCH = TextToolCall("web_search", {"query": "lighthouse of alexandria"})

TODO = "The Lighthouse of Alexandria is a well-known archaeological artifact."
REAL_TODO_ITEM = '{"name": "write_todos", "arguments": [{"content": "' + TODO + '", "status": "pending"}]}'

SHAPES = [
    ("bare object", '{"name": "web_search", "arguments": {"query": "lighthouse of alexandria"}}', [SEARCH]),
    (
        "fenced json",
        'I will search.\n```json\n{"name": "web_search", "arguments": {"query": "lighthouse of alexandria"}}\n```',
        [SEARCH],
    ),
    (
        "arguments as a JSON string",
        '{"name": "web_search", "arguments": "{\\"query\\": \\"lighthouse of alexandria\\"}"}',
        [SEARCH],
    ),
    (
        "arguments as a one-element list",
        '```json\n{"name": "web_search", "arguments": [{"query": "lighthouse of alexandria"}]}\n```',
        [SEARCH],
    ),
    ("parameters", '{"name": "web_search", "parameters": {"query": "lighthouse of alexandria"}}', [SEARCH]),
    (
        "the tool's schema echoed with a stray brace",
        '{"name": "web_search", "description": "Search the web.", "parameters": {"query": "lighthouse of alexandria"}, '
        '"required": ["query"], "type": "object"}}',
        [SEARCH],
    ),
    (
        "several objects one per line, then runaway prose",
        '{"name": "web_search", "arguments": {"query": "lighthouse of alexandria"}}\n'
        '{"name": "web_fetch", "arguments": {"url": "http://example.org/pharos"}}\n'
        "The lighthouse was tall. The lighthouse was tall. The lighthouse was tall.",
        [SEARCH, TextToolCall("web_fetch", {"url": "http://example.org/pharos"})],
    ),
    (
        "hermes tool_call tags",
        '<tool_call>\n{"name": "web_search", "arguments": {"query": "lighthouse of alexandria"}}\n</tool_call>',
        [SEARCH],
    ),
    (
        "mistral TOOL_CALLS list",
        '[TOOL_CALLS] [{"name": "web_search", "arguments": {"query": "lighthouse of alexandria"}}]',
        [SEARCH],
    ),
    (
        "mistral named TOOL_CALLS",
        '[TOOL_CALLS]web_search[ARGS]{"query": "lighthouse of alexandria"}',
        [SEARCH],
    ),
    (
        "llama python_tag, two calls",
        '<|python_tag|>{"name": "web_search", "parameters": {"query": "lighthouse of alexandria"}}; '
        '{"name": "web_search", "parameters": {"query": "pharos height"}}<|eom_id|>',
        [SEARCH, TextToolCall("web_search", {"query": "pharos height"})],
    ),
    (
        "openai function shape",
        '{"type": "function", "function": {"name": "web_search", "arguments": "{\\"query\\": \\"lighthouse of alexandria\\"}"}}',
        [SEARCH],
    ),
    (
        "a think block before the call",
        '<think>{"name": "web_fetch", "arguments": {"url": "x"}} maybe</think>\n'
        '{"name": "web_search", "arguments": {"query": "lighthouse of alexandria"}}',
        [SEARCH],
    ),
    ("no arguments at all", '{"name": "write_todos"}', [TextToolCall("write_todos", {})]),
    (
        # Qwen2.5-Coder-0.5B on llama-server, nudged to plan: the todo itself as the arguments (validate_call wraps it).
        "one item of the tool's list as its arguments",
        REAL_TODO_ITEM,
        [TextToolCall("write_todos", {"content": TODO, "status": "pending"})],
    ),
    (
        "one item of the tool's list, a stray brace after it",
        '{"name": "write_todos", "arguments": [{"content": "' + TODO + '"}]}}',
        [TextToolCall("write_todos", {"content": TODO})],
    ),
]


@pytest.mark.parametrize(("shape", "text", "expected"), SHAPES, ids=[shape for shape, _, _ in SHAPES])
def test_a_tool_call_written_as_text_is_read(shape: str, text: str, expected: list[TextToolCall]) -> None:
    assert parse_text_tool_calls(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The Lighthouse of Alexandria was about 100 m tall.",
        '{"query": "no name, so no call"}',
        '{"name": "web_search", "arguments": "not json"}',
        '{"name": "web_search", "arguments": ["two", "items"]}',
        "{ broken json",
        "",
    ],
)
def test_text_that_is_no_tool_call_gives_none(text: str) -> None:
    assert parse_text_tool_calls(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>plan it</think>The answer.", "The answer."),
        ("Reasoning first.</think>The answer.", "The answer."),
        ("<THINK>\nunfinished", ""),
        ("No reasoning here.", "No reasoning here."),
    ],
)
def test_reasoning_blocks_are_stripped(text: str, expected: str) -> None:
    assert strip_reasoning(text) == expected


def test_an_object_that_merely_has_a_name_is_no_tool_call() -> None:
    assert parse_text_tool_calls('[{"name": "Sostratus of Cnidus", "role": "architect"}]') == []


def test_with_the_assists_repair_one_item_written_as_the_arguments_of_a_list_tool_runs_as_that_list() -> None:
    [write_todos] = TodoListMiddleware().tools
    [call] = parse_text_tool_calls(REAL_TODO_ITEM)

    assert validate_call(call, write_todos, one_item_list) == ({"todos": [{"content": TODO, "status": "pending"}]}, "")


def test_without_the_repair_one_item_for_a_list_is_refused_with_what_the_tool_needs() -> None:
    [write_todos] = TodoListMiddleware().tools
    [call] = parse_text_tool_calls(REAL_TODO_ITEM)

    assert validate_call(call, write_todos) == (None, "write_todos needs todos")


def test_an_item_that_does_not_fit_the_list_either_is_refused_with_what_the_tool_needs() -> None:
    [write_todos] = TodoListMiddleware().tools
    [call] = parse_text_tool_calls('{"name": "write_todos", "arguments": [{"content": "' + TODO + '"}]}}')

    assert validate_call(call, write_todos, one_item_list) == (None, "write_todos needs todos")


@pytest.mark.anyio
async def test_calls_read_from_a_capped_reply_run_once_each_and_are_marked_as_read_from_text(monkeypatch, run) -> None:
    # The 0.5B model's reply as a research unit: a search, then the same fetches over and over until the cap.
    events = capture_events(monkeypatch, text_tool_calls)
    fetch = '{"name": "web_fetch", "arguments": {"url": "http://127.0.0.1:34093/articles/pharos-lighthouse"}}'
    text = '{"name": "web_search", "arguments": {"query": "pharos"}}\n' + f"{fetch}\n" * 3 + '{"name": "web_fe'
    capped = AIMessage(text, response_metadata={"finish_reason": "length"})

    async def model(request: ModelRequest) -> ModelResponse:
        return ModelResponse(result=[capped])

    request = ModelRequest(model=None, messages=[HumanMessage("Who built the Pharos?")], tools=[web_search, web_fetch])
    result = await TextToolCallsMiddleware(role="research-subagent").awrap_model_call(request, model)

    [reply] = result.result if isinstance(result, ModelResponse) else result.model_response.result
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("web_search", {"query": "pharos"}),
        ("web_fetch", {"url": "http://127.0.0.1:34093/articles/pharos-lighthouse"}),
    ]
    assert reply.response_metadata[TEXT_TOOL_CALLS_KEY] is True and reply.text == ""
    assert [e["reason"] for e in events] == ["text_tool_calls"]


@tool
def web_search(query: str) -> str:
    """Search the web."""
    return query


@tool
def web_fetch(url: str) -> str:
    """Read a page."""
    return url
