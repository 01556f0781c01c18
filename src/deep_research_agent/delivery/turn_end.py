"""Turn end: once the run's deliverable is out, the turn ends before the next model call.

Contract (orchestrator only): after ``submit_report`` delivered a report or ``request_clarification`` asked
its questions, the agent stops before calling the model again, whether or not the model would have stopped.
One hook serves both deliverables because every ``before_model`` hook is a graph step on every model turn.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langgraph.runtime import Runtime

from ..lifecycle.containment import contain_hook_failures
from ..run import current_run


class TurnEndMiddleware(AgentMiddleware):
    """Jumps to the end of the turn once a report is delivered or the user has been asked."""

    @hook_config(can_jump_to=["end"])
    @contain_hook_failures
    async def abefore_model(self, state: AgentState, runtime: Runtime) -> dict[str, Any] | None:
        control = current_run().control
        if control.report_delivered or control.clarification_requested:
            return {"jump_to": "end"}
        return None
