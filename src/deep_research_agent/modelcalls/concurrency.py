"""Caps on concurrent model calls: per model server (all runs and agents of this process together), and per run
(the orchestrator and all its sub-agents together).

Contract (one instance per agent, in its guard chain just outside the retries, so a call waiting for a
slot is not yet a call and a retry keeps its slot): every model call of every agent whose endpoint is
``server`` waits for one of ``limit`` slots shared by everyone calling that server, and, first, for one of
``run_limit`` slots shared by the agents of its own run; a limit of 0 means no cap. A local server has few
slots (llama-server splits its context across ``--parallel`` slots), and a request past them queues inside
the server anyway, where no timeout of ours can see why; the run's cap keeps one run's parallel research
units from taking every slot of a server that serves several runs. The run's slot is taken first, so a
call queued behind its own run holds none of the server's.

Not langchain's ``InMemoryRateLimiter``: it paces requests per second, not how many are in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse

from ..domain.knobs import KnobError, not_negative
from ..domain.per_role import PerRoleMiddleware
from ..run import Run, run_hook

_SLOTS: dict[tuple[str, int], asyncio.Semaphore] = {}


def server_slots(server: str, limit: int) -> asyncio.Semaphore:
    """The one semaphore of ``server`` at ``limit`` in this process."""
    return _SLOTS.setdefault((server, limit), asyncio.Semaphore(limit))


@dataclass(frozen=True)
class RunModelSlots:
    """The model-call slots of one run, kept as its attachment."""

    semaphore: asyncio.Semaphore


def run_slots(run: Run, limit: int) -> asyncio.Semaphore:
    """The one semaphore of ``run``'s model calls (made at the ``limit`` of its first call)."""
    return run.attachments.setdefault(RunModelSlots, lambda: RunModelSlots(asyncio.Semaphore(limit))).semaphore


def _whole_number(owner: str, knob: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise KnobError(owner, knob, value, "a whole number of 0 or more")
    not_negative(owner, knob, value)


class ModelConcurrencyMiddleware(PerRoleMiddleware):
    """Holds each model call until its run and its server have a free slot."""

    label = "ModelConcurrency"

    def __init__(self, *, role: str, server: str, limit: int, run_limit: int = 0) -> None:
        """``server``: the endpoint's URL (slots are shared per URL); ``limit``: calls in flight at once to it
        (0: any); ``run_limit``: calls in flight at once for one run, all its agents together (0: any)."""
        _whole_number(type(self).__name__, "limit", limit)
        _whole_number(type(self).__name__, "run_limit", run_limit)
        super().__init__(role=role)
        self.server = server
        self.limit = limit
        self.run_limit = run_limit

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> Any:
        async with contextlib.AsyncExitStack() as slots:
            if self.run_limit:
                await slots.enter_async_context(run_slots(run, self.run_limit))
            if self.limit:
                await slots.enter_async_context(server_slots(self.server, self.limit))
            return await handler(request)
