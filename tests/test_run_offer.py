"""What a run is offered: the run-time capabilities decided once per run, and the tools and prompt each
agent's model is shown for them."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool
from langgraph.store.memory import InMemoryStore

from deep_research_agent.knowledge import knowledge_namespace
from deep_research_agent.lifecycle.offer import OfferMiddleware, Roster, RunOffer, decide_offer
from deep_research_agent.run import Run, bound_run, restore_ledger, save_ledger

pytestmark = pytest.mark.anyio

USER = "ada"
CONFIG: dict[str, Any] = {"configurable": {"user_id": USER}}


class BrokenStore(InMemoryStore):
    async def asearch(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("store is down")


async def offer_for(
    store: Any = None, config: dict[str, Any] = CONFIG, *, knowledge_base: bool = True, remember: bool = False
) -> RunOffer:
    return await decide_offer(
        store,
        Run(key="r"),
        config,
        knowledge_base=knowledge_base,
        remember_findings=remember,
        dataset="main",
        follow_up=False,
    )


async def store_with_an_entry() -> InMemoryStore:
    store = InMemoryStore()
    await store.aput(knowledge_namespace(USER, "main"), "kb-1", {"text": "t", "source": "s"}, index=False)
    return store


async def test_a_run_is_offered_the_decision_tools_only_when_it_names_a_usable_task():
    assert (await offer_for(config={"configurable": {"task": "grid storage"}})).task
    assert not (await offer_for()).task
    assert not (await offer_for(config={"configurable": {"task": "x" * 500}})).task


async def test_the_knowledge_base_is_offered_with_entries_or_remembering_and_never_when_it_is_off():
    assert not (await offer_for(InMemoryStore())).knowledge, "an empty dataset"
    assert not (await offer_for(None)).knowledge, "no store"
    assert (await offer_for(await store_with_an_entry())).knowledge
    assert (await offer_for(InMemoryStore(), remember=True)).knowledge
    assert not (await offer_for(await store_with_an_entry(), knowledge_base=False, remember=True)).knowledge
    other_user = {"configurable": {"user_id": "grace"}}
    assert not (await offer_for(await store_with_an_entry(), other_user)).knowledge


async def test_a_store_that_cannot_answer_offers_the_knowledge_base_rather_than_hide_the_users_entries():
    assert (await offer_for(BrokenStore())).knowledge


async def test_an_offer_is_decided_once_and_a_resumed_run_gets_the_same_from_its_ledger():
    store, run = InMemoryStore(), Run(key="r")
    config = {"configurable": {"user_id": USER, "task": "grid"}}
    first = await decide_offer(
        store, run, config, knowledge_base=True, remember_findings=True, dataset="main", follow_up=True
    )
    again = await decide_offer(
        store, run, CONFIG, knowledge_base=False, remember_findings=False, dataset="main", follow_up=False
    )
    assert again is first and (again.task, again.knowledge, again.follow_up) == (True, True, True)

    await save_ledger(store, run, thread_id="t")
    resumed = Run(key="r")
    assert await restore_ledger(store, resumed, thread_id="t")
    offer = await decide_offer(
        store, resumed, CONFIG, knowledge_base=False, remember_findings=False, dataset="main", follow_up=False
    )
    assert (offer.task, offer.knowledge, offer.follow_up) == (True, True, True)


def test_the_roster_lists_each_roles_tools_without_those_the_offer_lacks():
    roster = Roster()
    names = {
        "orchestrator": ("task", "record_decision", "search_decisions", "submit_report"),
        "research-subagent": ("web_search", "remember", "query"),
    }
    for role, tools in names.items():
        roster.add(role, [tool(name) for name in tools], lambda offer: "knowledge" * offer.knowledge)

    assert roster.offered(RunOffer()) == {
        "orchestrator": ["task", "submit_report"],
        "research-subagent": ["web_search"],
    }
    assert roster.offered(RunOffer(task=True, knowledge=True)) == {role: list(tools) for role, tools in names.items()}
    lean, full = roster.shown_chars(RunOffer()), roster.shown_chars(RunOffer(task=True, knowledge=True))
    assert lean["orchestrator"][0] == 0 and full["research-subagent"][0] == len("knowledge")
    assert all(lean[role][1] < full[role][1] for role in names), "withheld tools' schemas are not counted"


def tool(name: str) -> StructuredTool:
    return StructuredTool.from_function(func=lambda: name, name=name, description=name)


async def shown(offer: RunOffer | None) -> ModelRequest:
    """The request the model is shown by an OfferMiddleware, in a run offered ``offer`` (None: no offer)."""
    seen: list[ModelRequest] = []

    async def handler(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return ModelResponse(result=[AIMessage(content="ok")])

    middleware = OfferMiddleware(
        role="research-subagent", prompt_for=lambda o: f"prompt task={o.task} knowledge={o.knowledge}"
    )
    request = ModelRequest(
        model=None,  # type: ignore[arg-type]
        messages=[HumanMessage(content="go")],
        system_message=SystemMessage(content="the full prompt"),
        tools=[tool("web_search"), tool("remember"), tool("query"), tool("record_decision")],
    )
    with bound_run() as run:
        if offer is not None:
            run.attachments.attach(offer)
        await middleware.awrap_model_call(request, handler)
    return seen[0]


async def test_the_model_is_shown_only_the_offered_tools_and_the_prompt_of_the_offer():
    lean = await shown(RunOffer(decided=True))
    assert [t.name for t in lean.tools] == ["web_search"]
    assert lean.system_message.text == "prompt task=False knowledge=False"

    full = await shown(RunOffer(task=True, knowledge=True, decided=True))
    assert [t.name for t in full.tools] == ["web_search", "remember", "query", "record_decision"]
    assert full.system_message.text == "prompt task=True knowledge=True"


async def test_a_call_in_a_run_offered_nothing_yet_is_passed_on_unchanged():
    request = await shown(None)
    assert len(request.tools) == 4 and request.system_message.text == "the full prompt"
