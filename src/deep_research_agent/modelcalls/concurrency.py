"""A cap on concurrent model calls to one model server, all runs and agents of this process together.

Contract (one instance per agent, in its guard chain just outside the retries, so a call waiting for a
slot is not yet a call and a retry keeps its slot): every model call of every agent whose endpoint is
``server`` waits for one of ``limit`` slots shared by everyone calling that server; ``limit`` 0 means no
cap. A local server has few slots (llama-server splits its context across ``--parallel`` slots), and a
request past them queues inside the server anyway, where no timeout of ours can see why.

Not langchain's ``InMemoryRateLimiter``: it paces requests per second, not how many are in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse

from ..domain.knobs import KnobError, not_negative
from ..domain.per_role import PerRoleMiddleware

_SLOTS: dict[tuple[str, int], asyncio.Semaphore] = {}


def server_slots(server: str, limit: int) -> asyncio.Semaphore:
    """The one semaphore of ``server`` at ``limit`` in this process."""
    return _SLOTS.setdefault((server, limit), asyncio.Semaphore(limit))


class ModelConcurrencyMiddleware(PerRoleMiddleware):
    """Holds each model call until its server has a free slot."""

    label = "ModelConcurrency"

    def __init__(self, *, role: str, server: str, limit: int) -> None:
        """``server``: the endpoint's URL (slots are shared per URL); ``limit``: calls in flight at once (0: any)."""
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise KnobError(type(self).__name__, "limit", limit, "a whole number of 0 or more")
        not_negative(type(self).__name__, "limit", limit)
        super().__init__(role=role)
        self.server = server
        self.limit = limit

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        if not self.limit:
            return await handler(request)
        async with server_slots(self.server, self.limit):
            return await handler(request)
