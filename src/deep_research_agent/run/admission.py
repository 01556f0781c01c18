"""Runs in progress per user, held to a limit across every server instance that shares the LangGraph store.

Contract (the lifecycle calls it when the run opens, only when ``max_runs_per_user`` is above 0):
- each run in progress holds a *slot*: an item under ``(*ACTIVE_RUNS_NAMESPACE, <owner digest>)`` keyed
  by the run id, with the time it queued (``queued_at``) and its last heartbeat (``beat_at``);
- ``admit`` puts the run's slot, waits ``SETTLE_S`` so every slot put before it is visible whichever
  instance wrote it, then ranks the owner's live slots by ``(queued_at, run id)``, an order every instance
  sees the same: the first ``limit`` are admitted. A refused run deletes its slot and learns how many runs
  are ahead of it. So a burst never admits more than the limit; a racing refused run may at worst refuse
  one that would have fit (never the reverse);
- ``keep_slot`` renews the slot every ``HEARTBEAT_S`` from the process executing the run (also one that
  resumed a run another process started) and deletes it when the run closes; a slot whose heartbeat is
  older than ``STALE_AFTER_S`` (its process died) no longer counts and is deleted by the next ``admit``;
- ``release_slot`` deletes it at once, when the run ends;
- slots live in the graph's store, out of reach of API clients on Aegra (which scopes their store calls
  under ``("users", <identity>)``); the owner is named by a digest, since a store namespace label cannot
  hold every identity (no periods).

Why not a lock: ``BaseStore`` has no compare-and-set, and the same code must hold under ``langgraph dev``
(in-memory store) and Aegra (Postgres store). Times are the instances' clocks, so keep them in sync (NTP);
a skew only shifts which run of a burst is first, never how many are admitted.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from langgraph.store.base import BaseStore, Item, PutOp

from .owner import ANONYMOUS_USER

if TYPE_CHECKING:
    from .registry import Run

logger = logging.getLogger(__name__)

ACTIVE_RUNS_NAMESPACE = ("deep_research_agent", "active_runs")
# The owner of runs the server named nobody for (langgraph dev without auth): one user, the operator.
HEARTBEAT_S = 10.0
STALE_AFTER_S = 45.0
SETTLE_S = 0.3
_PAGE = 100


@dataclass(frozen=True)
class RunSlot:
    """A run's slot: whose it is (owner digest), and when it queued; attached to the run that holds it."""

    owner_key: str
    run_id: str
    queued_at: float

    @property
    def namespace(self) -> tuple[str, ...]:
        return (*ACTIVE_RUNS_NAMESPACE, self.owner_key)

    def value(self, beat_at: float) -> dict[str, float | str]:
        return {"run_id": self.run_id, "queued_at": self.queued_at, "beat_at": beat_at}


@dataclass(frozen=True)
class Admission:
    """``admitted``, or refused with ``ahead`` live runs of the same user before this one."""

    admitted: bool
    ahead: int
    limit: int
    slot: RunSlot


# Strong references: the event loop keeps only weak ones to its tasks.
_keepers: set[asyncio.Task[None]] = set()


def owner_key(owner: str | None) -> str:
    return hashlib.sha256((owner or ANONYMOUS_USER).encode()).hexdigest()[:32]


def start_keeping(store: BaseStore, run: Run, slot: RunSlot) -> None:
    """Hold ``slot`` for ``run`` from this process until the run closes (``keep_slot``); the run keeps it as
    an attachment (``run.attachments.get(RunSlot)``)."""
    run.attachments.attach(slot)
    keeper = asyncio.create_task(keep_slot(store, run, slot), name=f"run-slot-{run.key}")
    _keepers.add(keeper)
    keeper.add_done_callback(_keepers.discard)


async def admit(
    store: BaseStore,
    *,
    owner: str | None,
    run_id: str,
    limit: int,
    clock: Callable[[], float] = time.time,
    settle_s: float = SETTLE_S,
) -> Admission:
    """Take a slot for ``run_id`` among ``owner``'s runs in progress, or refuse it past ``limit``."""
    if limit < 1:
        raise ValueError("a run limit is at least 1")
    now = clock()
    slot = RunSlot(owner_key=owner_key(owner), run_id=run_id, queued_at=now)
    await store.aput(slot.namespace, run_id, slot.value(now), index=False)
    await asyncio.sleep(settle_s)
    items = await _slots(store, slot.namespace)
    fresh_after = clock() - STALE_AFTER_S
    stale = [item for item in items if _number(item, "beat_at") < fresh_after and item.key != run_id]
    if stale:
        await _delete(store, stale)
    stale_keys = {item.key for item in stale}
    live = sorted(
        (item for item in items if item.key not in stale_keys), key=lambda item: (_number(item, "queued_at"), item.key)
    )
    ahead = next((index for index, item in enumerate(live) if item.key == run_id), len(live))
    if ahead < limit:
        return Admission(admitted=True, ahead=ahead, limit=limit, slot=slot)
    await release_slot(store, slot)
    return Admission(admitted=False, ahead=ahead, limit=limit, slot=slot)


async def keep_slot(
    store: BaseStore,
    run: Run,
    slot: RunSlot,
    *,
    heartbeat_s: float = HEARTBEAT_S,
    clock: Callable[[], float] = time.time,
) -> None:
    """Renew ``slot`` while ``run`` is open in this process; delete it once the run closes."""
    try:
        while not run.control.closed:
            try:
                await store.aput(slot.namespace, slot.run_id, slot.value(clock()), index=False)
            except Exception:  # a missed beat is no failure of the run; the slot lives STALE_AFTER_S
                logger.warning("could not renew the run slot of run %s", slot.run_id, exc_info=True)
            await _sleep_until_closed(run, heartbeat_s)
    finally:
        await release_slot(store, slot)


async def release_slot(store: BaseStore, slot: RunSlot) -> None:
    try:
        await store.adelete(slot.namespace, slot.run_id)
    except Exception:  # the slot goes stale on its own
        logger.warning("could not release the run slot of run %s", slot.run_id, exc_info=True)


async def _sleep_until_closed(run: Run, seconds: float, *, tick_s: float = 0.25) -> None:
    # The run's end releases its slot itself; this only bounds how long a cancelled run's slot lingers.
    deadline = time.monotonic() + seconds
    while not run.control.closed and time.monotonic() < deadline:
        await asyncio.sleep(min(tick_s, max(0.0, deadline - time.monotonic())))


async def _slots(store: BaseStore, namespace: tuple[str, ...]) -> list[Item]:
    items: list[Item] = []
    while True:
        page = await store.asearch(namespace, limit=_PAGE, offset=len(items))
        items += page
        if len(page) < _PAGE:
            return [item for item in items if item.namespace == namespace]


async def _delete(store: BaseStore, items: list[Item]) -> None:
    try:
        await store.abatch([PutOp(item.namespace, item.key, None) for item in items])
    except Exception:
        logger.warning("could not delete stale run slots", exc_info=True)


def _number(item: Item, name: str) -> float:
    value = item.value.get(name)
    return float(value) if isinstance(value, (int, float)) else 0.0
