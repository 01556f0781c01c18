"""Steering in-process: the watcher takes each message once, in order, and the orchestrator reads them all; a
message that drops a topic stops the running units about it, which hand back what they found."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from deep_research_agent.delivery import steer, stop
from deep_research_agent.delivery.steer import SteeringMiddleware, asks_to_finish, dropped_topics, units_to_drop
from deep_research_agent.delivery.stop import watch_for_stop_request
from deep_research_agent.domain.conversation import is_harness_message
from deep_research_agent.domain.names import Role
from deep_research_agent.graph import budget_limits
from deep_research_agent.guards.budget import BudgetMiddleware
from deep_research_agent.handover.contract import parse_findings
from deep_research_agent.protocol.events import MAX_STEER_CHARS, STOP_REQUESTS_NAMESPACE, steer_namespace
from deep_research_agent.protocol.sender import Sender, current_sender
from deep_research_agent.run import Run
from deep_research_agent.settings import ResearchConfig
from testkit.guard_calls import capture_events

pytestmark = pytest.mark.anyio


@pytest.fixture
def events(monkeypatch):
    sent = capture_events(monkeypatch, steer)
    monkeypatch.setattr(stop, "emit", lambda event: sent.append(event.model_dump(mode="json")))
    return sent


async def watch_until(run: Run, store: InMemoryStore, done, *, owner: str | None = None) -> None:
    watcher = asyncio.create_task(watch_for_stop_request(store, run, owner=owner, poll_s=0.01))
    try:
        async with asyncio.timeout(2):
            while not done():
                await asyncio.sleep(0.01)
    finally:
        run.control.close()
        await asyncio.wait_for(watcher, timeout=2)


async def test_two_messages_sent_between_polls_both_arrive_in_order_and_are_deleted(run, events):
    store = InMemoryStore()
    await store.aput(steer_namespace(run.key), "b", {"message": "also cover sodium cell lifetimes"})
    await asyncio.sleep(0.01)
    await store.aput(steer_namespace(run.key), "a", {"message": "  drop the price history  "})
    await store.aput(steer_namespace("another-run"), "c", {"message": "not for this run"})

    await watch_until(run, store, lambda: len(run.control.steering) == 2)

    assert run.control.steering == ("also cover sodium cell lifetimes", "drop the price history")
    assert [(e["state"], e["message"]) for e in events] == [
        ("steer_received", "also cover sodium cell lifetimes"),
        ("steer_received", "drop the price history"),
    ]
    assert not await store.asearch(steer_namespace(run.key)), "a served steering message was left in the store"
    assert await store.asearch(steer_namespace("another-run")), "another run's message was taken"
    assert run.control.halt is None and not run.control.wrap_up_requested


async def test_a_message_asking_to_finish_also_wraps_the_run_up(run, events):
    store = InMemoryStore()
    await store.aput(steer_namespace(run.key), "a", {"message": "Finish now, please."})

    await watch_until(run, store, lambda: run.control.wrap_up_requested)

    assert run.control.steering == ("Finish now, please.",)
    assert [e["state"] for e in events] == ["steer_received", "stop_requested"]
    assert events[1]["reason"] == "wrap_up"


async def test_a_message_put_through_aegra_lands_in_the_owners_scope_and_is_read_there(run, events):
    store = InMemoryStore()
    await store.aput(("users", "mallory", *steer_namespace(run.key)), "m", {"message": "drop everything"})
    await store.aput(("users", "alice", *steer_namespace(run.key)), "a", {"message": "go deeper on prices"})

    await watch_until(run, store, lambda: bool(run.control.steering), owner="alice")

    assert run.control.steering == ("go deeper on prices",)


async def test_a_message_without_text_is_dropped_and_a_long_one_is_cut(run, events):
    store = InMemoryStore()
    await store.aput(steer_namespace(run.key), "a", {"message": "   "})
    await store.aput(steer_namespace(run.key), "b", {"text": "wrong field"})
    await store.aput(steer_namespace(run.key), "c", {"message": "x" * (MAX_STEER_CHARS + 50)})

    await watch_until(run, store, lambda: bool(run.control.steering))

    assert run.control.steering == ("x" * MAX_STEER_CHARS,)
    assert not await store.asearch(steer_namespace(run.key))
    assert not await store.asearch(STOP_REQUESTS_NAMESPACE)


@pytest.mark.parametrize(
    ("message", "finishes"),
    [
        ("finish now", True),
        ("Finish now!", True),
        ("wrap up with what you have", True),
        ("That's enough, stop and report", True),
        ("also cover X", False),
        ("finish the section on prices first", False),
        ("go deeper on wrap-up costs", False),
    ],
)
def test_only_a_message_that_starts_by_asking_to_finish_ends_the_research(message, finishes):
    assert asks_to_finish(message) is finishes


async def test_the_orchestrator_reads_every_steering_message_at_each_call_without_it_entering_state(run):
    middleware = SteeringMiddleware(role=Role.ORCHESTRATOR)
    sent: list[list] = []

    async def model(request: ModelRequest) -> ModelResponse:
        sent.append(list(request.messages))
        return ModelResponse(result=[AIMessage(content="ok")])

    question = HumanMessage(content="How dense are sodium cells?")
    request = ModelRequest(model=None, messages=[question], system_message=None, tools=[], state={}, runtime=None)
    await middleware.awrap_model_call(request, model)
    run.control.add_steering("also cover lifetimes")
    run.control.add_steering("drop prices")
    response = await middleware.awrap_model_call(request, model)

    assert sent[0] == [question], "a call before any steering is sent unchanged"
    *kept, steering = sent[1]
    assert kept == [question] and is_harness_message(steering)
    assert '1. "also cover lifetimes"\n2. "drop prices"' in steering.text
    assert response.result == [AIMessage(content="ok")], "the steering text is persisted nowhere"


def test_steering_messages_survive_a_resume_in_another_process():
    first, second = Run("run-1"), Run("run-1")
    first.control.add_steering("also cover lifetimes")
    second.control.restore(first.control.snapshot())
    assert second.control.steering == ("also cover lifetimes",)


RUNNING = {
    "norway": "Find 2025 kelp farm output in Norway",
    "scotland": "Find 2025 kelp farm output in Scotland",
    "prices": "Find sodium battery price history since 2015",
}


@pytest.mark.parametrize(
    ("message", "dropped"),
    [
        ("drop Scotland", ["scotland"]),
        ("Drop the Scotland part, keep Norway", ["scotland"]),
        ("skip Norway and Scotland", ["norway", "scotland"]),
        ("Forget about price histories", ["prices"]),
        ("no need for the battery prices", ["prices"]),
        ("Leave out Norway; go deeper on Scotland", ["norway"]),
        ("Please ignore batteries", ["prices"]),
        ("Don’t cover Norway but also cover Denmark", ["norway"]),
        ("never mind Scotland", ["scotland"]),
        # Nothing to drop: no drop request, a negated one, "drop" inside a sentence, a pronoun.
        ("also cover Denmark", []),
        ("please don't skip Scotland", []),
        ("also cover the price drop in 2024", []),
        ("drop it", []),
        ("finish now", []),
        # What it cannot match: a synonym, a word the brief does not hold.
        ("drop the Nordic one", []),
        ("skip Scottish kelp", []),
    ],
)
def test_a_drop_stops_the_running_units_whose_brief_holds_every_word_of_its_topic(message, dropped):
    assert units_to_drop(message, RUNNING) == dropped


@pytest.mark.parametrize(
    ("message", "topics"),
    [
        ("drop Scotland", ("scotland",)),
        ("skip the price history, and Norway", ("price history", "norway")),
        ("drop it", ()),
        ("go deeper on prices", ()),
    ],
)
def test_a_dropped_topic_is_its_content_words_stemmed(message, topics):
    assert dropped_topics(message) == topics


def test_a_drop_message_stops_the_matching_running_unit_and_its_ack_names_it(run, events):
    for task_id, brief in RUNNING.items():
        run.control.unit_started(task_id, brief)

    steer.serve_steering(run, "drop Scotland")

    assert run.control.dropped_by("scotland") == "drop Scotland"
    assert run.control.dropped_by("norway") is None and run.control.dropped_by("prices") is None
    [ack] = events
    assert ack["dropped_units"] == ["scotland"]
    assert 'it stops 1 running unit it drops ("Find 2025 kelp farm output in Scotland")' in ack["detail"]
    assert run.control.steering == ("drop Scotland",), "the orchestrator still reads the message"


def test_a_drop_no_running_unit_matches_stops_nothing_and_the_ack_says_so(run, events):
    run.control.unit_started("norway", RUNNING["norway"])

    steer.serve_steering(run, "skip Denmark")

    assert run.control.dropped_by("norway") is None
    [ack] = events
    assert ack.get("dropped_units", []) == []
    assert 'no running research unit matches "denmark", so none is stopped' in ack["detail"]
    assert run.control.steering == ("skip Denmark",)


def test_a_unit_that_ended_is_not_dropped(run, events):
    run.control.unit_started("scotland", RUNNING["scotland"])
    run.control.unit_ended("scotland")

    steer.serve_steering(run, "drop Scotland")

    assert run.control.dropped_by("scotland") is None
    assert "no running research unit matches" in events[0]["detail"]


async def test_a_dropped_unit_hands_back_what_it_found_at_its_next_model_call_which_is_not_made(run):
    found = '{"summary": "Scotland landed 2,000 t.", "findings": [], "gaps": []}'
    messages = [HumanMessage(RUNNING["scotland"]), AIMessage(found)]
    asked: list[str] = []

    async def model(request: ModelRequest) -> ModelResponse:
        asked.append(current_sender.get().task_id or "")
        return ModelResponse(result=[AIMessage("went on")])

    settings = ResearchConfig.resolve({}, environ={"OPENAI_API_KEY": "sk-test"})
    guard = BudgetMiddleware(budget_limits(settings), role=Role.RESEARCH_SUBAGENT)
    for task_id in ("norway", "scotland"):
        run.control.unit_started(task_id, RUNNING[task_id])
    run.control.drop_units(["scotland"], "drop Scotland")

    replies = {}
    for task_id in ("norway", "scotland"):
        token = current_sender.set(Sender(role=Role.RESEARCH_SUBAGENT, task_id=task_id))
        try:
            request = ModelRequest(model=None, messages=messages, state={"messages": messages})  # type: ignore[arg-type]
            replies[task_id] = (await guard.awrap_model_call(request, model)).result  # type: ignore[union-attr]
        finally:
            current_sender.reset(token)

    assert asked == ["norway"], "the dropped unit's model call was made"
    [hand_back] = replies["scotland"]
    handed = parse_findings(hand_back.text)
    assert handed is not None and handed.summary == "Scotland landed 2,000 t.", "what it found was lost"
    assert any('steering message "drop Scotland"' in gap for gap in handed.gaps)
    assert run.control.halted_by("scotland") == "user" and run.control.halted_by("norway") is None
