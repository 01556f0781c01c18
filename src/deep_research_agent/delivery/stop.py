"""Stop requests: the user asks a running run to finish now with what it has.

Contract (orchestrator only; a request reaches every role through the run's control):
- a client asks by putting an item in the LangGraph store at ``STOP_REQUESTS_NAMESPACE`` with the run id
  as its key (``client.store.put_item(list(STOP_REQUESTS_NAMESPACE), run_id, {"mode": ...})``), through
  any instance of the server: the store is the one every instance shares, so the request reaches the
  run wherever it executes;
- from the run's start (``start_watching``, called by the lifecycle as the run opens, and again by the
  process that resumes a run another one started) the process's poller for that store reads it every
  ``POLL_S``, in every namespace a client's item can land in (``run.owner.client_namespaces``: Aegra
  scopes API store calls by user), deletes each request it reads, and emits ``status: stop_requested``
  with ``reason`` the mode. One poller serves every run the process executes: one batch read per tick
  for all of them, because on a database store a read per run every half second is a query each;
- ``mode: "wrap_up"``: every agent is told at its next model call to deliver now, and no tool call
  starts any more except ``submit_report``; the agents write their findings and the orchestrator its
  report, through the usual gates, so the run normally ends ``done/report_delivered``. The watcher goes
  on watching, for a later request to stop now;
- ``mode: "now"`` (also any other or no mode): the run is halted with reason ``stopped_by_user``: no model
  or tool call starts in any role, and the calls in flight are cut (``BudgetMiddleware`` enforces both);
  sub-agents hand back what they have, marked ``halted: user``, and the run ends ``done/stopped_by_user``
  with a report assembled from the findings so far, marked incomplete (``RunClosingMiddleware``);
- the same poller reads the run's steering messages (``steer.py``) in the same batch: one search per
  namespace of ``steer_namespace(run_id)``; a steering message that asks to finish is served as a wrap-up;
- each run's events are sent in the context the run was watched from, so with several runs on one poller
  each status reaches its own run's stream;
- the watcher stops with the run (its stores are closed at the end and on a cancel); without a store, as
  when the graph runs in-process, there is nothing to watch.

Why not LangGraph's cancel: the server stops a cancelled run mid-step and ends its stream, so a cancelled
run can deliver nothing.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from dataclasses import dataclass

from langgraph.store.base import BaseStore, GetOp, Item, SearchItem, SearchOp

from ..domain.names import StopMode
from ..domain.stops import StopCause
from ..protocol.events import STOP_REQUESTS_NAMESPACE, StopRequestedStatus, emit, steer_namespace
from ..run import Halt, Run, client_namespaces
from .steer import serve_steering

logger = logging.getLogger(__name__)

POLL_S = 0.5
# Steering messages read per run and tick; more wait for the next tick.
_STEER_BATCH = 20


@dataclass(frozen=True)
class StopWatcher:
    """A run's attachment: the task of this process's poller that watches the run, once started."""

    task: asyncio.Task[None]


class StopRequestPoller:
    """Every run one process executes against one store, polled for stop requests in one batch per tick.

    A run is dropped once it is stopped now or closed; the poller's task ends when it watches no run and
    starts again with the next one.
    """

    def __init__(self, store: BaseStore, *, poll_s: float = POLL_S) -> None:
        self.store = store
        self.poll_s = poll_s
        self._watched: dict[str, _Watched] = {}
        self._task: asyncio.Task[None] | None = None

    def watch(self, run: Run, *, owner: str | None = None) -> asyncio.Task[None]:
        """Watch ``run`` (in the namespaces of its ``owner`` too); returns the poller's task."""
        self._watched[run.key] = _Watched(
            run,
            client_namespaces(STOP_REQUESTS_NAMESPACE, owner),
            client_namespaces(steer_namespace(run.key), owner),
            contextvars.copy_context(),
        )
        if self._task is None or self._task.done() or self._task.get_loop() is not asyncio.get_running_loop():
            self._task = asyncio.create_task(self._poll(), name="stop-request-poller")
        return self._task

    async def _poll(self) -> None:
        while True:
            for key, watched in list(self._watched.items()):
                if watched.run.control.closed or watched.run.control.halt is not None:
                    del self._watched[key]
            if not self._watched:
                return
            runs = list(self._watched.values())
            reads: list[GetOp | SearchOp] = []
            for watched in runs:
                reads += [GetOp(namespace, watched.run.key) for namespace in watched.stops]
                reads += [SearchOp(namespace, limit=_STEER_BATCH) for namespace in watched.steers]
            try:
                found: list[Item | list[SearchItem] | None] = await self.store.abatch(reads)
            except Exception:  # a store hiccup must not end any run; the next tick tries again
                logger.warning("could not read stop requests for %d run(s)", len(runs), exc_info=True)
                found = [None] * len(reads)
            answers = iter(found)
            for watched in runs:
                stops = [next(answers) for _ in watched.stops]
                steers = [item for _ in watched.steers for item in next(answers) or ()]
                for message in sorted(steers, key=lambda item: item.created_at):
                    await _forget(self.store, message)
                    if watched.context.run(serve_steering, watched.run, message.value.get("message")):
                        watched.context.run(_wrap_up, watched.run)
                for request in stops:
                    if isinstance(request, Item):
                        await _forget(self.store, request)
                        watched.context.run(_serve, watched.run, request)
            await asyncio.sleep(self.poll_s)


@dataclass(frozen=True)
class _Watched:
    """One watched run: where its stop requests and steering messages land, and the context its events go from."""

    run: Run
    stops: tuple[tuple[str, ...], ...]
    steers: tuple[tuple[str, ...], ...]
    context: contextvars.Context


_pollers: dict[int, StopRequestPoller] = {}


def start_watching(store: BaseStore | None, run: Run, *, owner: str | None = None) -> None:
    """Have this process's poller for ``store`` watch the run, once; no store, nothing to watch. ``owner`` is
    the run's server-authenticated user, whose scoped namespace is read too."""
    if store is None or run.attachments.get(StopWatcher) is not None:
        return
    poller = _pollers.get(id(store))
    if poller is None or poller.store is not store:
        poller = _pollers[id(store)] = StopRequestPoller(store)
    run.attachments.attach(StopWatcher(poller.watch(run, owner=owner)))


async def watch_for_stop_request(
    store: BaseStore, run: Run, *, owner: str | None = None, poll_s: float = POLL_S
) -> None:
    """Watch one run on a poller of its own until it is stopped now or ends (for code outside a server)."""
    await StopRequestPoller(store, poll_s=poll_s).watch(run, owner=owner)


def _serve(run: Run, request: Item) -> None:
    if request.value.get("mode") == StopMode.WRAP_UP:
        _wrap_up(run)
    else:
        _stop_now(run)


def _wrap_up(run: Run) -> None:
    if run.control.request_wrap_up():
        emit(
            StopRequestedStatus(
                reason=StopMode.WRAP_UP,
                detail="Wrapping up: every agent delivers what it has and the report is written; no new research starts.",
            )
        )


def _stop_now(run: Run) -> None:
    halt = Halt(cause=StopCause.USER, detail="the user asked the run to stop and report what it found")
    if run.control.request_stop(halt):
        emit(
            StopRequestedStatus(
                reason=StopMode.NOW,
                detail="Stopping: every agent hands back what it has, then the report is assembled.",
            )
        )


async def _forget(store: BaseStore, request: Item) -> None:
    try:
        await store.adelete(request.namespace, request.key)
    except Exception:  # a leftover stop request is read again, harmless (each mode acts once); a steer, twice
        logger.warning("could not delete the request %s in %s", request.key, request.namespace, exc_info=True)
