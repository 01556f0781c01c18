"""The per-user limit on runs in progress, through a LangGraph store as every server instance shares it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from langgraph.store.memory import InMemoryStore

from deep_research_agent.run import ACTIVE_RUNS_NAMESPACE, Run, admit, keep_slot, owner_key, run_owner
from deep_research_agent.run.admission import STALE_AFTER_S

pytestmark = pytest.mark.anyio


async def slots_of(store: InMemoryStore, owner: str) -> list[str]:
    return sorted(item.key for item in await store.asearch((*ACTIVE_RUNS_NAMESPACE, owner_key(owner))))


async def test_a_burst_of_starts_admits_exactly_the_limit_and_tells_the_others_how_many_are_ahead():
    store = InMemoryStore()

    admissions = await asyncio.gather(
        *(admit(store, owner="alice", run_id=f"run-{n}", limit=3, settle_s=0.05) for n in range(5))
    )

    admitted = [a for a in admissions if a.admitted]
    refused = [a for a in admissions if not a.admitted]
    assert len(admitted) == 3 and len(refused) == 2
    assert all(a.ahead >= 3 for a in refused)
    assert await slots_of(store, "alice") == sorted(a.slot.run_id for a in admitted), "a refused run kept its slot"


async def test_each_user_has_a_limit_of_their_own():
    store = InMemoryStore()
    for n in range(2):
        assert (await admit(store, owner="alice", run_id=f"a{n}", limit=2, settle_s=0)).admitted

    assert not (await admit(store, owner="alice", run_id="a2", limit=2, settle_s=0)).admitted
    assert (await admit(store, owner="bob", run_id="b0", limit=2, settle_s=0)).admitted


async def test_a_slot_whose_process_stopped_beating_no_longer_counts_and_is_cleared():
    store = InMemoryStore()
    now = 1_000_000.0
    await admit(store, owner="alice", run_id="crashed", limit=1, settle_s=0, clock=lambda: now)

    later = await admit(store, owner="alice", run_id="next", limit=1, settle_s=0, clock=lambda: now + STALE_AFTER_S + 1)

    assert later.admitted
    assert await slots_of(store, "alice") == ["next"]


async def test_a_held_slot_is_renewed_while_the_run_is_open_and_freed_when_it_closes():
    store = InMemoryStore()
    admission = await admit(store, owner="alice", run_id="r1", limit=1, settle_s=0)
    run = Run(key="r1")
    beats = iter(range(1, 1000))
    keeper = asyncio.create_task(
        keep_slot(store, run, admission.slot, heartbeat_s=0.02, clock=lambda: float(next(beats)))
    )
    await asyncio.sleep(0.1)
    [item] = await store.asearch(admission.slot.namespace)
    assert item.value["beat_at"] > 1 and item.value["queued_at"] == admission.slot.queued_at

    run.control.close()
    await asyncio.wait_for(keeper, timeout=2)

    assert await slots_of(store, "alice") == []
    assert (await admit(store, owner="alice", run_id="r2", limit=1, settle_s=0)).admitted


async def test_the_limit_must_admit_at_least_one_run():
    with pytest.raises(ValueError, match="at least 1"):
        await admit(InMemoryStore(), owner="alice", run_id="r", limit=0)


@pytest.mark.parametrize(
    "configurable, owner",
    [
        ({"langgraph_auth_user": SimpleNamespace(identity="alice")}, "alice"),  # Aegra's User
        ({"langgraph_auth_user": {"identity": "bob"}}, "bob"),
        ({"langgraph_auth_user_id": "carol"}, "carol"),  # langgraph-api
        ({"user_id": "mallory"}, None),  # a client may set this key itself
        ({}, None),
    ],
)
def test_a_runs_owner_is_the_identity_the_server_authenticated(configurable, owner):
    assert run_owner({"configurable": configurable}) == owner
