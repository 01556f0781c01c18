"""Specification of the assist's line that starts a research unit's research: "Start with a `web_search` call."

It follows the brief on the unit's first model call only, names the first call of the order the research
sub-agent's prompt gives (the knowledge base, the corpus or MCP server the brief names, the corpora, the web)
among the unit's own tools, and is never kept in the unit's conversation.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool

from deep_research_agent.assist import FirstStepMiddleware
from deep_research_agent.domain.conversation import harness_message, is_harness_message
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.tools.start import ResearchSources

BRIEF = HumanMessage(content="Who built the Pharos of Alexandria, and how tall was it?")
SOURCES = ResearchSources(corpora=(("manuals", "Engine manuals"),), mcp=(("prices", ("price_history", "tariffs")),))


def offered(*names: str) -> list[StructuredTool]:
    def run(query: str) -> str:
        return query

    return [StructuredTool.from_function(run, name=name, description=f"the {name} tool") for name in names]


async def sent(
    messages: list[AnyMessage], tools: list[StructuredTool], sources: ResearchSources = SOURCES
) -> list[AnyMessage]:
    """The messages the model is sent for one call through the middleware."""
    seen: list[list[AnyMessage]] = []

    async def model(request: ModelRequest) -> ModelResponse:
        seen.append(list(request.messages))
        return ModelResponse(result=[AIMessage(content="ok")])

    state: Any = {"messages": messages}
    await FirstStepMiddleware(role="research-subagent", sources=sources).awrap_model_call(
        ModelRequest(model=None, messages=messages, state=state, tools=tools), model
    )
    [messages_sent] = seen
    return messages_sent


async def first_line(brief: str, *tools: str) -> str:
    messages = await sent([HumanMessage(content=brief)], offered(*tools))
    return messages[-1].text if len(messages) > 1 else ""


@pytest.mark.anyio
async def test_the_first_call_ends_with_the_line_naming_the_web_search() -> None:
    messages = await sent([BRIEF], offered("read_file", "web_search", "web_fetch"))

    assert messages[:-1] == [BRIEF]
    assert is_harness_message(messages[-1]) and messages[-1].text == "Start with a `web_search` call."


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("brief", "tools", "line"),
    [
        ("Who built the Pharos?", ("web_search", "web_fetch", "query", "remember"), "Start with a `query` call."),
        (
            "Torque specs, from the engine manuals",
            ("web_search", "web_fetch", "corpus_search", "corpus_read"),
            "Start with a `corpus_search` call.",
        ),
        (
            "Torque specs, in the Manuals corpus",
            ("web_search", "web_fetch", "corpus_search", "query"),
            "Start with a `query` call.",
        ),
        (
            "Tariffs for 2024, from the prices server",
            ("web_search", "price_history", "tariffs"),
            "Start with a `price_history` call.",
        ),
        ("Who built the Pharos?", ("web_search", "web_fetch", "corpus_search"), "Start with a `corpus_search` call."),
        ("Who built the Pharos?", ("corpus_search", "corpus_read"), "Start with a `corpus_search` call."),
        ("Who built the Pharos?", ("price_history", "tariffs"), ""),
        # "pricesX" is no mention of the MCP server "prices".
        ("Tariffs from the pricesX feed", ("web_search", "price_history"), "Start with a `web_search` call."),
        (
            "Tariffs from the prices feed, and the manuals",
            ("price_history", "corpus_search"),
            "Start with a `corpus_search` call.",
        ),
    ],
    ids=[
        "knowledge base first",
        "brief names a corpus by title",
        "knowledge base before a named corpus",
        "brief names an MCP server",
        "corpora before the web",
        "corpora only",
        "MCP tools only, none named",
        "a word that only contains a server's label",
        "a named corpus before a named server",
    ],
)
async def test_the_line_names_the_first_call_of_the_prompts_order(
    brief: str, tools: tuple[str, ...], line: str
) -> None:
    assert await first_line(brief, *tools) == line


@pytest.mark.anyio
async def test_a_unit_offered_no_search_gets_no_line() -> None:
    assert await sent([BRIEF], offered("pricing_db_query"), ResearchSources()) == [BRIEF]


@pytest.mark.anyio
async def test_once_the_unit_has_called_a_tool_no_line_is_added() -> None:
    searched = AIMessage(content="", tool_calls=[{"name": "web_search", "args": {"query": "pharos"}, "id": "c1"}])
    conversation = [BRIEF, searched, ToolMessage(content="<search_results/>", tool_call_id="c1")]

    assert await sent(conversation, offered("web_search")) == conversation


@pytest.mark.anyio
async def test_a_re_ask_that_ends_on_the_harness_own_words_gets_no_second_line() -> None:
    bounce = harness_message("You called no tool in this unit. Start with a web_search call, like this: {...}")
    conversation = [BRIEF, AIMessage(content='{"summary": "from memory"}'), bounce]

    assert await sent(conversation, offered("web_search")) == conversation


def test_sources_that_are_not_a_research_sources_record_are_refused() -> None:
    with pytest.raises(KnobError, match="sources"):
        FirstStepMiddleware(role="research-subagent", sources={"corpora": []})  # type: ignore[arg-type]
