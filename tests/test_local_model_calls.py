"""The model-call plumbing for small local servers, in-process: which replies count as empty, the output cap
fitted to the context window, the run's and the server's model-call slots, and arguments that do not fit a tool."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain.agents.middleware import ModelResponse, TodoListMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.modelcalls.concurrency import ModelConcurrencyMiddleware
from deep_research_agent.modelcalls.output_cap import MIN_OUTPUT_TOKENS, OutputCapMiddleware, fitted_output_cap
from deep_research_agent.modelcalls.retry import empty_reply
from deep_research_agent.run import bound_run
from deep_research_agent.tools.arguments import argument_problem, example_call, tool_schema

pytestmark = pytest.mark.anyio


def reply(content: str = "", *, finish: str = "stop", calls: bool = False) -> ModelResponse:
    tool_calls = [{"name": "web_search", "args": {"query": "q"}, "id": "c1"}] if calls else []
    message = AIMessage(content=content, tool_calls=tool_calls, response_metadata={"finish_reason": finish})
    return ModelResponse(result=[message])


@pytest.mark.parametrize(
    ("response", "how"),
    [
        (reply(""), "empty"),
        (reply("   \n"), "empty"),
        (reply("<think>The user wants numbers.</think>"), "empty"),
        (reply("", finish="length"), "cut off at the output cap"),
        (reply("<think>Still thinking when the cap hit", finish="length"), "cut off at the output cap"),
        (reply("The Pharos was 100 m tall."), ""),
        (reply("The Pharos was", finish="length"), ""),  # text cut off is the runaway guard's
        (reply("", calls=True), ""),
        (reply('```json\n{"name": "web_search", "arguments": {"query": "q"}}\n```'), ""),
    ],
)
def test_a_reply_is_empty_only_when_it_holds_neither_a_tool_call_nor_text(response, how):
    assert empty_reply(response) == how


@pytest.mark.parametrize(
    ("cap", "window", "prompt", "expected"),
    [
        (16_000, 1_048_576, 3_000, 16_000),  # a hosted model's window leaves the configured cap standing
        (16_000, 16_384, 3_000, 16_384 - 3_000 - 819),  # a local window: what the prompt leaves, less a margin
        (1_024, 16_384, 3_000, 1_024),
        (0, 16_384, 3_000, 16_384 - 3_000 - 819),  # no cap of its own: only the window bounds it
        (16_000, 4_096, 4_000, MIN_OUTPUT_TOKENS),  # a full window still asks for a little output
    ],
)
def test_the_output_cap_is_what_the_context_window_leaves_after_the_prompt(cap, window, prompt, expected):
    assert fitted_output_cap(cap, window, prompt) == expected


@pytest.mark.parametrize(("knob", "value"), [("context_window", 0), ("context_window", -1), ("max_output_tokens", -5)])
def test_the_output_cap_refuses_a_window_or_cap_it_cannot_use(knob, value):
    knobs = {"context_window": 16_384, "max_output_tokens": 1_024, knob: value}
    with pytest.raises(KnobError):
        OutputCapMiddleware(role="orchestrator", **knobs)


@pytest.mark.parametrize(("knob", "value"), [("limit", -1), ("run_limit", -1), ("run_limit", 1.5), ("run_limit", True)])
def test_the_model_call_slots_refuse_a_limit_that_is_not_a_whole_number(knob, value):
    knobs = {"limit": 0, "run_limit": 0, knob: value}
    with pytest.raises(KnobError):
        ModelConcurrencyMiddleware(role="orchestrator", server="http://model.test/v1", **knobs)


async def test_one_runs_agents_share_its_slots_and_another_run_has_its_own():
    in_flight = {"first": 0, "second": 0}
    peak = {"first": 0, "second": 0, "both": 0}

    def handler_for(name: str):
        async def handler(_request):
            in_flight[name] += 1
            peak[name] = max(peak[name], in_flight[name])
            peak["both"] = max(peak["both"], sum(in_flight.values()))
            await asyncio.sleep(0.02)
            in_flight[name] -= 1
            return reply("ok")

        return handler

    agents = [
        ModelConcurrencyMiddleware(role=role, server="http://model.test/v1", limit=0, run_limit=2)
        for role in ("orchestrator", "research-subagent", "research-subagent")
    ]

    async def one_run(name: str) -> None:
        with bound_run():
            await asyncio.gather(
                *(agent.awrap_model_call(None, handler_for(name)) for agent in agents for _ in range(3))
            )

    await asyncio.gather(one_run("first"), one_run("second"))
    assert peak == {"first": 2, "second": 2, "both": 4}


def test_arguments_that_do_not_fit_a_tool_say_what_is_wrong_and_an_example_shows_the_right_form():
    @tool
    def web_search(query: str, max_results: int = 5) -> str:
        """Search the web."""
        return query

    assert argument_problem(web_search, {"query": "pharos"}) == ""
    assert argument_problem(web_search, {"q": ["pharos"]}) == "web_search needs query"
    assert argument_problem(web_search, {"query": ["pharos"]}) == "web_search: query: Input should be a valid string"
    assert example_call(*tool_schema(web_search)) == '{"name": "web_search", "arguments": {"query": "<query>"}}'


def test_the_example_call_shows_one_filled_in_item_of_a_list_so_a_small_model_sees_its_shape():
    # Qwen2.5-Coder-0.5B, shown ``{"todos": []}``, wrote ``"arguments": [{"content": …}]``: one bare todo, no status.
    [write_todos] = TodoListMiddleware().tools

    assert json.loads(example_call(*tool_schema(write_todos))) == {
        "name": "write_todos",
        "arguments": {"todos": [{"content": "<content>", "status": "pending"}]},
    }
