"""Specification of the scripted chat-completions server, driven through the real client.

Every test talks to the server exactly as the product does: langchain-openai's
``ChatOpenAI`` on the chat-completions API over real HTTP.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI

from deep_research_agent.domain.conversation import harness_message
from deep_research_agent.modelcalls.models import AGENT_HEADER
from testkit.scripted_model import ScenarioError, ScriptedModelServer, agent, call, error, scenario, turn

API_KEY = "sk-test-never-logged-1234"

WEB_SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "web_search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}},
            "required": ["query"],
        },
    },
}
FETCH_TOOL = {
    "type": "function",
    "function": {
        "name": "fetch_url",
        "description": "Fetch a page.",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
    },
}

ORCHESTRATOR_PROMPT = "You are the research orchestrator. Plan, delegate, and write the report."
RESEARCHER_PROMPT = "You are a focused researcher sub-agent. Search and summarise findings."


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def chat(server: ScriptedModelServer, *, role: str | None = None, streaming: bool = False, **kwargs: Any) -> ChatOpenAI:
    """A client of the server; ``role`` goes in every request's ``X-DRA-Agent`` header, as the product sends it."""
    return ChatOpenAI(
        model="test/model",
        base_url=server.base_url,
        api_key=API_KEY,
        use_responses_api=False,
        streaming=streaming,
        default_headers={AGENT_HEADER: role} if role is not None else None,
        **kwargs,
    )


@asynccontextmanager
async def async_chat(server: ScriptedModelServer, **kwargs: Any) -> AsyncIterator[ChatOpenAI]:
    """A model for async tests.

    langchain-openai caches its default async HTTP client per base_url, and
    anyio gives every test a fresh event loop, so a shared client would be
    bound to a closed loop from the second async test on.
    """
    async with openai.DefaultAsyncHttpxClient() as http_client:
        yield chat(server, http_async_client=http_client, **kwargs)


def conversation(system: str, *rest: BaseMessage) -> list[BaseMessage]:
    return [SystemMessage(system), HumanMessage("Research quantum batteries."), *rest]


def stream_all(model: Any, messages: list[BaseMessage]) -> tuple[AIMessageChunk, int]:
    """Stream a reply; return the reassembled message and the number of chunks seen."""
    total: AIMessageChunk | None = None
    count = 0
    for chunk in model.stream(messages):
        count += 1
        total = chunk if total is None else total + chunk
    assert total is not None
    return total, count


# --------------------------------------------------------------------------
# Text replies and usage
# --------------------------------------------------------------------------


def test_non_streaming_text_reply_reports_estimated_usage(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(agent("orchestrator", turn("Here is the plan."))))

    reply = chat(server, role="orchestrator").invoke(conversation(ORCHESTRATOR_PROMPT))

    assert reply.content == "Here is the plan."
    assert reply.response_metadata["finish_reason"] == "stop"
    # Prompt tokens are estimated from the request the server actually received.
    body = server.requests()[0]["body"]
    expected_prompt = len(json.dumps({"messages": body["messages"], "tools": []})) // 4
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] == expected_prompt
    assert reply.usage_metadata["output_tokens"] == len("Here is the plan.") // 4
    assert reply.usage_metadata["total_tokens"] == expected_prompt + len("Here is the plan.") // 4


def test_turn_can_override_usage_including_cached_tokens(server: ScriptedModelServer) -> None:
    server.set_scenario(
        scenario(default=turn("ok", usage={"prompt_tokens": 1000, "completion_tokens": 7, "cached_tokens": 800}))
    )

    reply = chat(server).invoke("hi")

    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] == 1000
    assert reply.usage_metadata["output_tokens"] == 7
    assert reply.usage_metadata["total_tokens"] == 1007
    assert reply.usage_metadata.get("input_token_details", {}).get("cache_read") == 800


def test_streaming_text_reply_arrives_in_word_chunks_and_reassembles(server: ScriptedModelServer) -> None:
    text = "Quantum batteries  charge faster\nas they grow larger."
    server.set_scenario(scenario(default=turn(text, usage={"prompt_tokens": 50, "completion_tokens": 12})))

    reply, chunks = stream_all(chat(server, streaming=True, stream_usage=True), conversation(ORCHESTRATOR_PROMPT))

    assert reply.content == text
    assert chunks >= len(text.split())
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] == 50
    assert reply.usage_metadata["output_tokens"] == 12
    logged = server.requests()[0]
    assert logged["stream"] is True
    assert logged["body"]["stream_options"] == {"include_usage": True}


def test_finish_reason_can_be_overridden(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(default=turn("truncated mid-sen", finish_reason="length")))

    reply = chat(server).invoke("hi")

    assert reply.response_metadata["finish_reason"] == "length"


# --------------------------------------------------------------------------
# Tool calls
# --------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
def test_tool_call_reply_is_parsed_by_the_client(server: ScriptedModelServer, streaming: bool) -> None:
    server.set_scenario(
        scenario(default=turn(tool_calls=[call("web_search", query="quantum battery 2025", max_results=5)]))
    )
    model = chat(server, streaming=streaming).bind_tools([WEB_SEARCH_TOOL])

    reply = stream_all(model, conversation(RESEARCHER_PROMPT))[0] if streaming else model.invoke("go")

    assert len(reply.tool_calls) == 1
    tool_call = reply.tool_calls[0]
    assert tool_call["name"] == "web_search"
    assert tool_call["args"] == {"query": "quantum battery 2025", "max_results": 5}
    assert tool_call["id"] is not None and tool_call["id"].startswith("call_")
    assert reply.response_metadata["finish_reason"] == "tool_calls"
    assert server.requests()[0]["body"]["tools"][0]["function"]["name"] == "web_search"


@pytest.mark.parametrize("streaming", [False, True], ids=["json", "sse"])
def test_parallel_tool_calls_keep_order_and_distinct_ids(server: ScriptedModelServer, streaming: bool) -> None:
    server.set_scenario(
        scenario(
            default=turn(
                "Looking into it.",
                tool_calls=[
                    call("web_search", query="solid-state batteries"),
                    call("fetch_url", url="https://example.org/a"),
                    call("web_search", query="sodium-ion batteries"),
                ],
            )
        )
    )
    model = chat(server, streaming=streaming).bind_tools([WEB_SEARCH_TOOL, FETCH_TOOL])

    reply = stream_all(model, conversation(RESEARCHER_PROMPT))[0] if streaming else model.invoke("go")

    assert reply.content == "Looking into it."
    assert [(tc["name"], tc["args"]) for tc in reply.tool_calls] == [
        ("web_search", {"query": "solid-state batteries"}),
        ("fetch_url", {"url": "https://example.org/a"}),
        ("web_search", {"query": "sodium-ion batteries"}),
    ]
    assert len({tc["id"] for tc in reply.tool_calls}) == 3


def test_placeholders_are_substituted_in_content_and_tool_args(server: ScriptedModelServer) -> None:
    server.set_scenario(
        scenario(
            default=turn(
                "You asked: {last_user}",
                tool_calls=[call("web_search", query="{last_user}", extra={"nested": ["about {last_user}"]})],
            )
        )
    )

    reply = chat(server).invoke([HumanMessage("earlier"), AIMessage("ok"), HumanMessage("lithium")])

    assert reply.content == "You asked: lithium"
    assert reply.tool_calls[0]["args"] == {"query": "lithium", "extra": {"nested": ["about lithium"]}}


def test_last_user_is_the_last_message_the_harness_did_not_write(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(default=turn(tool_calls=[call("web_fetch", url="{last_user}")])))
    hint = harness_message("Start with a `web_search` call.")

    reply = chat(server).invoke([HumanMessage("https://example.org/brief"), hint])

    assert reply.tool_calls[0]["args"] == {"url": "https://example.org/brief"}


def test_last_harness_is_the_last_message_the_harness_wrote(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(default=turn("Noted: {last_harness}")))

    reply = chat(server).invoke([HumanMessage("brief"), harness_message("LOOP DETECTED: change approach.")])

    assert reply.content == "Noted: LOOP DETECTED: change approach."


def test_echo_last_tool_result_quotes_what_the_tool_returned(server: ScriptedModelServer) -> None:
    server.set_scenario(
        scenario(
            agent(
                "research-subagent",
                turn(tool_calls=[call("web_search", query="x")]),
                turn("Findings:", echo_last_tool_result=True),
            )
        )
    )
    history = conversation(
        RESEARCHER_PROMPT,
        AIMessage("", tool_calls=[{"name": "web_search", "args": {"query": "x"}, "id": "call_1"}]),
        ToolMessage("Result: batteries are 40% denser.", tool_call_id="call_1"),
    )

    reply = chat(server, role="research-subagent").invoke(history)

    assert reply.content == "Findings:\n\nResult: batteries are 40% denser."


# --------------------------------------------------------------------------
# Agent and turn selection
# --------------------------------------------------------------------------


def test_turn_index_is_the_number_of_assistant_messages(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(agent("orchestrator", turn("first"), turn("second"), turn("third"))))
    model = chat(server, role="orchestrator")

    fresh = model.invoke(conversation(ORCHESTRATOR_PROMPT))
    after_one = model.invoke(conversation(ORCHESTRATOR_PROMPT, AIMessage("first"), HumanMessage("more")))
    after_tool_round = model.invoke(
        conversation(
            ORCHESTRATOR_PROMPT,
            AIMessage("first"),
            HumanMessage("more"),
            AIMessage("", tool_calls=[{"name": "web_search", "args": {"query": "q"}, "id": "call_1"}]),
            ToolMessage("tool output", tool_call_id="call_1"),
        )
    )

    assert [fresh.content, after_one.content, after_tool_round.content] == ["first", "second", "third"]
    assert [(r["agent"], r["turn"]) for r in server.requests()] == [
        ("orchestrator", 0),
        ("orchestrator", 1),
        ("orchestrator", 2),
    ]


@pytest.mark.anyio
async def test_parallel_conversations_of_one_agent_each_get_their_own_turn(server: ScriptedModelServer) -> None:
    server.set_scenario(
        scenario(
            agent(
                "research-subagent",
                turn(tool_calls=[call("web_search", query="{last_user}")], delay_s=0.1),
                turn("done"),
            )
        )
    )
    replies: dict[str, AIMessage] = {}

    async with async_chat(server, role="research-subagent") as model:
        with_tools = model.bind_tools([WEB_SEARCH_TOOL])

        async def research(topic: str) -> None:
            replies[topic] = await with_tools.ainvoke([SystemMessage(RESEARCHER_PROMPT), HumanMessage(topic)])

        async with anyio.create_task_group() as tg:
            for topic in ("anodes", "cathodes", "electrolytes"):
                tg.start_soon(research, topic)

    assert {topic: r.tool_calls[0]["args"]["query"] for topic, r in replies.items()} == {
        "anodes": "anodes",
        "cathodes": "cathodes",
        "electrolytes": "electrolytes",
    }
    assert [r["turn"] for r in server.requests()] == [0, 0, 0]


def test_agent_is_chosen_by_the_role_its_request_names_in_the_agent_header(server: ScriptedModelServer) -> None:
    server.set_scenario(
        scenario(
            agent("orchestrator", turn("orchestrating")),
            agent("research-subagent", turn("researching")),
        )
    )

    # The researcher's request carries the orchestrator's prompt: the header alone decides who answers.
    assert chat(server, role="orchestrator").invoke(conversation(ORCHESTRATOR_PROMPT)).content == "orchestrating"
    assert chat(server, role="research-subagent").invoke(conversation(ORCHESTRATOR_PROMPT)).content == "researching"
    assert [r["agent"] for r in server.requests()] == ["orchestrator", "research-subagent"]


def test_a_reworded_system_prompt_is_still_answered_by_its_role(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(agent("orchestrator", turn("planned"))))
    reworded = "Act as the lead of an investigation: split the question into units and assign them."

    reply = chat(server, role="orchestrator").invoke(conversation(reworded))

    assert reply.content == "planned"
    assert server.requests()[0]["agent"] == "orchestrator"


def test_default_turn_answers_unmatched_and_exhausted_requests(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(agent("research-subagent", turn("only turn")), default=turn("fallback")))

    unmatched = chat(server, role="critic").invoke([SystemMessage("Some other agent"), HumanMessage("hi")])
    exhausted = chat(server, role="research-subagent").invoke(
        conversation(RESEARCHER_PROMPT, AIMessage("only turn"), HumanMessage("again"))
    )

    assert (unmatched.content, exhausted.content) == ("fallback", "fallback")
    assert [(r["agent"], r["turn"]) for r in server.requests()] == [(None, 0), ("research-subagent", 1)]


def test_repeat_last_reuses_the_final_turn_forever(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(agent("orchestrator", turn("start"), turn("again and again"), repeat_last=True)))
    history = conversation(ORCHESTRATOR_PROMPT, *[AIMessage(f"reply {i}") for i in range(5)])

    assert chat(server, role="orchestrator").invoke(history).content == "again and again"


def test_an_unknown_role_without_default_is_a_500_naming_the_role_it_came_with(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(agent("research-subagent", turn("x"))))

    resp = httpx.post(
        f"{server.base_url}/chat/completions",
        headers={AGENT_HEADER: "critic"},
        json={"model": "m", "messages": [{"role": "system", "content": "You are a critic agent."}]},
    )

    assert resp.status_code == 500
    err = resp.json()["error"]
    assert err["code"] == "unmatched_request"
    assert "no agent answers this request" in err["message"]
    assert f"its {AGENT_HEADER} header is 'critic'" in err["message"]
    assert "['research-subagent']" in err["message"]
    assert "You are a critic agent." in err["message"]
    # The product's client sees it as a provider server error carrying the same message.
    with pytest.raises(openai.InternalServerError, match="header is 'critic'"):
        chat(server, role="critic", max_retries=0).invoke(
            [SystemMessage("You are a critic agent."), HumanMessage("hi")]
        )


def test_a_request_without_the_agent_header_is_a_500_saying_so(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(agent("research-subagent", turn("x"))))

    with pytest.raises(openai.InternalServerError, match=f"it has no {AGENT_HEADER} header"):
        chat(server, max_retries=0).invoke(conversation(RESEARCHER_PROMPT))


def test_exhausted_agent_without_default_is_a_500_naming_the_agent(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(agent("research-subagent", turn("x"))))

    with pytest.raises(openai.InternalServerError, match="'research-subagent' has no turn 1"):
        chat(server, role="research-subagent", max_retries=0).invoke(
            conversation(RESEARCHER_PROMPT, AIMessage("x"), HumanMessage("more"))
        )


# --------------------------------------------------------------------------
# Errors and latency
# --------------------------------------------------------------------------


def test_401_surfaces_as_authentication_error(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(default=turn(error=error(401, "Incorrect API key provided"))))

    with pytest.raises(openai.AuthenticationError, match="Incorrect API key provided"):
        chat(server, max_retries=0).invoke("hi")


def test_an_error_can_echo_the_key_the_request_carried_as_providers_do(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(default=turn(error=error(401, "Incorrect API key provided: {api_key}"))))

    with pytest.raises(openai.AuthenticationError, match=f"Incorrect API key provided: {API_KEY}"):
        chat(server, max_retries=0).invoke("hi")
    assert API_KEY not in json.dumps(server.requests()), "the request log stores the key"


def test_error_times_gives_a_burst_of_errors_then_the_normal_reply(server: ScriptedModelServer) -> None:
    server.set_scenario(
        scenario(
            agent(
                "orchestrator",
                turn("finally", error=error(429, "Rate limit reached", retry_after=0.01), error_times=4),
            )
        )
    )

    reply = chat(server, role="orchestrator", max_retries=4).invoke(conversation(ORCHESTRATOR_PROMPT))

    assert reply.content == "finally"
    assert [r["status"] for r in server.requests()] == [429, 429, 429, 429, 200]


def test_error_reply_is_openai_shaped_with_retry_after(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(default=turn(error=error(429, "slow down", retry_after=2))))

    resp = httpx.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": []})

    assert resp.status_code == 429
    assert resp.headers["retry-after"] == "2"
    assert resp.json() == {"error": {"message": "slow down", "type": "rate_limit_error", "code": None}}


def test_error_counters_reset_with_a_new_scenario(server: ScriptedModelServer) -> None:
    burst = scenario(default=turn("ok", error=error(500, "boom"), error_times=1))
    model = chat(server, max_retries=0)

    server.set_scenario(burst)
    with pytest.raises(openai.InternalServerError):
        model.invoke("hi")
    assert model.invoke("hi").content == "ok"

    server.set_scenario(burst)
    with pytest.raises(openai.InternalServerError):
        model.invoke("hi")


@pytest.mark.anyio
async def test_delay_s_slows_the_reply_without_blocking_other_requests(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(default=turn("slow", delay_s=0.3)))

    async with async_chat(server) as model:
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(model.ainvoke, "hi")
        elapsed = time.monotonic() - started

    # Serialized replies would need at least 3 * 0.3s.
    assert 0.3 <= elapsed < 0.9


# --------------------------------------------------------------------------
# Request log and admin surface
# --------------------------------------------------------------------------


def test_request_log_records_raw_body_size_and_auth_presence_but_never_the_key(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(default=turn("ok")))
    raw = json.dumps({"model": "m", "messages": [{"role": "user", "content": "héllo"}]}, ensure_ascii=False).encode()

    chat(server).invoke("hi")
    httpx.post(f"{server.base_url}/chat/completions", content=raw, headers={"content-type": "application/json"})

    via_client, anonymous = server.requests()
    assert via_client["auth_present"] is True
    assert anonymous["auth_present"] is False
    assert anonymous["body_chars"] == len(raw)
    assert anonymous["body"]["messages"][0]["content"] == "héllo"
    assert via_client["body"]["model"] == "test/model"
    assert via_client["stream"] is False
    assert API_KEY not in json.dumps(server.requests())


def test_new_scenario_and_reset_clear_the_log(server: ScriptedModelServer) -> None:
    server.set_scenario(scenario(default=turn("ok")))
    chat(server).invoke("hi")
    assert len(server.requests()) == 1

    server.set_scenario(scenario(default=turn("ok")))
    assert server.requests() == []

    chat(server).invoke("hi")
    server.reset()
    assert server.requests() == []
    with pytest.raises(openai.InternalServerError, match="no agent answers this request"):
        chat(server, max_retries=0).invoke("hi")


def test_malformed_scenario_is_rejected(server: ScriptedModelServer) -> None:
    with pytest.raises(ScenarioError, match="unknown turn keys"):
        server.set_scenario(scenario(default={"contnet": "typo"}))
    with pytest.raises(ScenarioError, match="needs a string 'name'"):
        server.set_scenario({"agents": [{"turns": []}]})
    with pytest.raises(ScenarioError, match=r"unknown agent keys \['match'\]"):
        server.set_scenario({"agents": [{"name": "x", "match": "You are", "turns": []}]})
    with pytest.raises(ScenarioError, match="a second agent named 'x' would never answer"):
        server.set_scenario(scenario(agent("x", turn("one")), agent("x", turn("two"))))


def test_models_endpoint_lists_a_model(server: ScriptedModelServer) -> None:
    resp = httpx.get(f"{server.base_url}/models")

    assert resp.status_code == 200
    assert resp.json()["data"][0]["object"] == "model"
