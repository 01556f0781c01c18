"""Stop requests: the user asks a running run to finish now with what it has.

Contract (orchestrator only; a request reaches every role through the run's control):
- a client asks by putting an item in the LangGraph store at ``STOP_REQUESTS_NAMESPACE`` with the run id
  as its key (``client.store.put_item(list(STOP_REQUESTS_NAMESPACE), run_id, {"mode": ...})``), through
  any instance of the server: the store is the one every instance shares, so the request reaches the
  run wherever it executes;
- from the run's start (``start_watching``, called by the lifecycle as the run opens, and again by the
  process that resumes a run another one started) a watcher polls for it every ``POLL_S``, in every
  namespace a client's item can land in (``run.owner.client_namespaces``: Aegra scopes API store calls
  by user), deletes each request it reads, and emits ``status: stop_requested`` with ``reason`` the mode;
- ``mode: "wrap_up"``: every agent is told at its next model call to deliver now, and no tool call
  starts any more except ``submit_report``; the agents write their findings and the orchestrator its
  report, through the usual gates, so the run normally ends ``done/report_delivered``. The watcher goes
  on watching, for a later request to stop now;
- ``mode: "now"`` (also any other or no mode): the run is halted with reason ``stopped_by_user``: no model
  or tool call starts in any role, and the calls in flight are cut (``BudgetMiddleware`` enforces both);
  sub-agents hand back what they have, marked ``halted: user``, and the run ends ``done/stopped_by_user``
  with a report assembled from the findings so far, marked incomplete (``RunLifecycleMiddleware``);
- the watcher stops with the run (its stores are closed at the end and on a cancel); without a store, as
  when the graph runs in-process, there is nothing to watch.

Why not LangGraph's cancel: the server stops a cancelled run mid-step and ends its stream, so a cancelled
run can deliver nothing.
"""

from __future__ import annotations

import asyncio
import logging

from langgraph.store.base import BaseStore, GetOp, Item

from ..names import EndReason, StatusState, StopMode
from ..protocol.events import STOP_REQUESTS_NAMESPACE, emit
from ..run import Halt, Run, client_namespaces

logger = logging.getLogger(__name__)

POLL_S = 0.5
# Strong references: the event loop keeps only weak ones to its tasks.
_watchers: set[asyncio.Task[None]] = set()


def start_watching(store: BaseStore | None, run: Run, *, owner: str | None = None) -> None:
    """Start the run's stop-request watcher in this process, once; no store, no watcher. ``owner`` is the
    run's server-authenticated user, whose scoped namespace is watched too."""
    if store is None or run.stop_watcher is not None:
        return
    watcher = asyncio.create_task(watch_for_stop_request(store, run, owner=owner), name=f"stop-watch-{run.key}")
    run.stop_watcher = watcher
    _watchers.add(watcher)
    watcher.add_done_callback(_watchers.discard)


async def watch_for_stop_request(store: BaseStore, run: Run, *, owner: str | None = None, poll_s: float = POLL_S) -> None:
    """Poll the store for this run's stop requests until it is stopped now or the run ends."""
    namespaces = client_namespaces(STOP_REQUESTS_NAMESPACE, owner)
    while not run.control.closed and run.control.halt is None:
        try:
            found: list[Item | None] = await store.abatch([GetOp(namespace, run.key) for namespace in namespaces])
        except Exception:  # a store hiccup must not end the run; the next poll tries again
            logger.warning("could not read stop requests for run %s", run.key, exc_info=True)
            found = []
        for request in (item for item in found if item is not None):
            await _forget(store, request)
            if request.value.get("mode") == StopMode.WRAP_UP:
                _wrap_up(run)
            else:
                _stop_now(run)
                return
        await asyncio.sleep(poll_s)


def _wrap_up(run: Run) -> None:
    if run.control.request_wrap_up():
        emit(
            "status",
            state=StatusState.STOP_REQUESTED,
            reason=StopMode.WRAP_UP,
            detail="Wrapping up: every agent delivers what it has and the report is written; no new research starts.",
        )


def _stop_now(run: Run) -> None:
    halt = Halt(reason=EndReason.STOPPED_BY_USER, detail="the user asked the run to stop and report what it found")
    if run.control.request_stop(halt):
        emit(
            "status",
            state=StatusState.STOP_REQUESTED,
            reason=StopMode.NOW,
            detail="Stopping: every agent hands back what it has, then the report is assembled.",
        )


async def _forget(store: BaseStore, request: Item) -> None:
    try:
        await store.adelete(request.namespace, request.key)
    except Exception:  # a leftover request would be read again: harmless, each mode acts once
        logger.warning("could not delete the stop request of run %s", request.key, exc_info=True)
