"""Stop requests: the user asks a running run to stop researching and report what it found.

Contract (orchestrator only; the request reaches every role through the run ledger):
- a client asks by putting any item in the LangGraph store at ``STOP_REQUESTS_NAMESPACE`` with the run id
  as its key (``client.store.put_item(list(STOP_REQUESTS_NAMESPACE), run_id, {...})``);
- from the run's start a watcher polls for it every ``POLL_S``; on finding it, the watcher deletes the
  item, emits one ``status: stop_requested`` and halts the run with reason ``stopped_by_user``;
- from then on no model or tool call starts in any role, and the calls in flight are cut
  (``BudgetMiddleware`` enforces every halt and races calls against the request); sub-agents hand back
  what they have, marked ``halted: user``;
- the run ends ``done/stopped_by_user`` with a report assembled from the findings so far, marked
  incomplete (``RunLifecycleMiddleware``);
- the watcher stops with the run (its ledger is closed at the end and on a cancel); without a store, as
  when the graph runs in-process, there is nothing to watch.

Why not LangGraph's cancel: the server stops a cancelled run mid-step and ends its stream, so a cancelled
run can deliver nothing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from ..events import STOP_REQUESTS_NAMESPACE, emit
from ..ledger import Halt, RunLedger, current_ledger
from .containment import contain_hook_failures

logger = logging.getLogger(__name__)

POLL_S = 0.5
STOPPED_BY_USER = "stopped_by_user"
# Strong references: the event loop keeps only weak ones to its tasks.
_watchers: set[asyncio.Task[None]] = set()


class StopRequestMiddleware(AgentMiddleware):
    """Starts the run's stop-request watcher when the run opens."""

    @hook_config(can_jump_to=["end"])
    @contain_hook_failures
    async def abefore_agent(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        if runtime.store is None:
            return None
        ledger = current_ledger(get_config())
        watcher = asyncio.create_task(watch_for_stop_request(runtime.store, ledger), name=f"stop-watch-{ledger.run_key}")
        _watchers.add(watcher)
        watcher.add_done_callback(_watchers.discard)
        return None


async def watch_for_stop_request(store: BaseStore, ledger: RunLedger, *, poll_s: float = POLL_S) -> None:
    """Poll the store for this run's stop request until it arrives or the run ends."""
    while not ledger.closed and ledger.halt is None:
        try:
            request = await store.aget(STOP_REQUESTS_NAMESPACE, ledger.run_key)
        except Exception:  # a store hiccup must not end the run; the next poll tries again
            logger.warning("could not read stop requests for run %s", ledger.run_key, exc_info=True)
            request = None
        if request is not None:
            await _stop(store, ledger)
            return
        await asyncio.sleep(poll_s)


async def _stop(store: BaseStore, ledger: RunLedger) -> None:
    halt = Halt(reason=STOPPED_BY_USER, detail="the user asked the run to stop and report what it found")
    if ledger.request_stop(halt):
        emit("status", state="stop_requested", detail="Stopping: every agent hands back what it has, then the report is assembled.")
    try:
        await store.adelete(STOP_REQUESTS_NAMESPACE, ledger.run_key)
    except Exception:  # the request is served; a leftover item only wastes a little space
        logger.warning("could not delete the stop request of run %s", ledger.run_key, exc_info=True)
