"""Specification of the line that starts a research unit's research: "Start with a `web_search` call."

It follows the brief on the unit's first model call only, names the unit's own search, and is never kept
in the unit's conversation.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool

from deep_research_agent.domain.conversation import harness_message, is_harness_message
from deep_research_agent.handover import FirstSearchMiddleware

BRIEF = HumanMessage(content="Who built the Pharos of Alexandria, and how tall was it?")


def offered(*names: str) -> list[StructuredTool]:
    def run(query: str) -> str:
        return query

    return [StructuredTool.from_function(run, name=name, description=f"the {name} tool") for name in names]


async def sent(messages: list[AnyMessage], tools: list[StructuredTool]) -> list[AnyMessage]:
    """The messages the model is sent for one call through the middleware."""
    seen: list[list[AnyMessage]] = []

    async def model(request: ModelRequest) -> ModelResponse:
        seen.append(list(request.messages))
        return ModelResponse(result=[AIMessage(content="ok")])

    state: Any = {"messages": messages}
    await FirstSearchMiddleware().awrap_model_call(
        ModelRequest(model=None, messages=messages, state=state, tools=tools), model
    )
    [messages_sent] = seen
    return messages_sent


@pytest.mark.anyio
async def test_the_first_call_ends_with_the_line_naming_the_web_search() -> None:
    messages = await sent([BRIEF], offered("read_file", "web_search", "web_fetch"))

    assert messages[:-1] == [BRIEF]
    assert is_harness_message(messages[-1]) and messages[-1].text == "Start with a `web_search` call."


@pytest.mark.anyio
async def test_a_unit_with_only_corpora_is_told_to_start_with_the_corpus_search() -> None:
    messages = await sent([BRIEF], offered("corpus_search", "corpus_read"))

    assert messages[-1].text == "Start with a `corpus_search` call."


@pytest.mark.anyio
async def test_a_unit_offered_no_search_gets_no_line() -> None:
    assert await sent([BRIEF], offered("pricing_db_query")) == [BRIEF]


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
