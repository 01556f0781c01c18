"""Specification of the prompt's date: each model call's system prompt carries the date of that call.

A compiled graph is cached and serves every run with its settings for the server's lifetime, so the date
cannot be part of what is compiled: a server running past midnight would tell the model yesterday's date.
"""

from __future__ import annotations

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from deep_research_agent import prompts
from deep_research_agent.graph import build_graph
from deep_research_agent.modelcalls.prompt_date import PromptDateMiddleware
from deep_research_agent.settings import ResearchConfig
from testkit.scenarios import (
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher_reads,
    scenario,
    submit,
    system_text,
)
from testkit.web import ARTICLES

pytestmark = pytest.mark.anyio

YESTERDAY, TODAY = "2031-03-04", "2031-03-05"


def clock_reads(monkeypatch: pytest.MonkeyPatch, day: str) -> None:
    monkeypatch.setattr(prompts, "today", lambda: day)


async def system_prompt_sent(system: SystemMessage | None) -> SystemMessage | None:
    sent: list[ModelRequest] = []

    async def model(request: ModelRequest) -> ModelResponse:
        sent.append(request)
        return ModelResponse(result=[AIMessage("ok")])

    request = ModelRequest(model=None, messages=[HumanMessage("q")], system_message=system, state={})
    await PromptDateMiddleware(role="orchestrator").awrap_model_call(request, model)
    return sent[0].system_message


async def test_every_today_placeholder_in_the_system_prompt_becomes_the_date_of_the_call(monkeypatch):
    clock_reads(monkeypatch, TODAY)

    sent = await system_prompt_sent(SystemMessage("Today's date is {today}. Cite sources dated before {today}."))

    assert sent.content == f"Today's date is {TODAY}. Cite sources dated before {TODAY}."


async def test_a_system_prompt_without_the_placeholder_and_a_request_without_one_pass_unchanged():
    plain = SystemMessage("No date here.")

    assert await system_prompt_sent(plain) is plain
    assert await system_prompt_sent(None) is None


async def test_a_graph_built_yesterday_tells_todays_run_todays_date_in_every_agent(scripted, web, monkeypatch):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the energy density"),
                submit(f"# Sodium-glass cells\n\nThey reach 412 Wh/kg [1].\n\n## Sources\n[1] Halvorsen — {url}\n"),
            ),
            researcher_reads(url, query="sodium glass battery", finding="412 Wh/kg", quote="412 Wh/kg"),
        )
    )
    environ = {
        "OPENAI_BASE_URL": scripted.base_url,
        "OPENAI_API_KEY": "sk-test-0000",
        "DRA_MAX_RETRIES": "0",
        "TAVILY_API_BASE_URL": web.base_url,
        "DRA_FETCH_ALLOW_HOSTS": web.allow_host,
    }
    clock_reads(monkeypatch, YESTERDAY)
    graph = build_graph(ResearchConfig.resolve({}, environ=environ))

    clock_reads(monkeypatch, TODAY)
    state = await graph.ainvoke(
        {"messages": [{"role": "user", "content": "How dense are sodium-glass cells?"}]},
        {"configurable": {"thread_id": "prompt-date", "run_id": "prompt-date-run"}},
    )

    assert "412 Wh/kg" in state["final_report"]

    for agent in ("orchestrator", "research-subagent"):
        prompts_sent = [system_text(request["body"]) for request in requests_of(scripted, agent)]
        assert prompts_sent, f"the {agent} was never called"
        for prompt in prompts_sent:
            assert f"Today's date is {TODAY}." in prompt
            assert YESTERDAY not in prompt and prompts.TODAY not in prompt
