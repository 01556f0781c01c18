"""The run's ledger kept current: what a run holds outside its checkpoint is saved after every orchestrator call.

Contract (inside ``ContainedCallsMiddleware`` and ``RunOpeningMiddleware``, which takes a resumed run over
before its first call here):
- every orchestrator model and tool call that succeeds ends by saving the run's ledger to the store
  (``run/ledger.py``: a save that would change nothing writes nothing), before its result reaches the
  checkpoint: a run resumed by another process from that checkpoint counts the call (its usage, its
  sources, hand-overs and texts); a call that fails saves nothing, since the run ends on it;
- a run that pauses for the user (an interrupt of an orchestrator tool call: the plan review) is closed
  there: what it spent is kept under its thread for the run that resumes it (its usage event counts it),
  its stores are dropped and its slot is freed as it closes, so a paused run holds none of its user's runs
  in progress; the interrupt passes on.

Outside a graph run (a unit test calling a wrapper directly) there is no run, and nothing is saved.

Example:
    ```python
    agent = create_agent(model, middleware=[contained, opening, RunLedgerMiddleware(), closing, ...])
    ```

Raises:
    Nothing of its own: a store that fails is logged by ``run/ledger.py`` and the run goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphInterrupt
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..run import keep_paused_usage, save_ledger
from .run_call import RunCall, drop_run, this_call, thread_of


class RunLedgerMiddleware(AgentMiddleware):
    """Saves the run's ledger after each orchestrator call, and closes a run that pauses for the user."""

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        response = await handler(request)
        await _save(request.runtime, this_call())
        return response

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
    ) -> ToolMessage | Command[Any]:
        try:
            result = await handler(request)
        except GraphInterrupt:
            # The resume is a run of its own: this one keeps nothing but what it spent.
            if (call := this_call()) is not None:
                run, config = call
                store = getattr(request.runtime, "store", None)
                await keep_paused_usage(store, run, thread_id=thread_of(config))
                drop_run(call)
            raise
        await _save(request.runtime, this_call())
        return result


async def _save(runtime: Any, call: RunCall | None) -> None:
    if call is not None:
        run, config = call
        await save_ledger(getattr(runtime, "store", None), run, thread_id=thread_of(config))
