"""Containment of internal failures: a bug in the harness ends the run with an end status, never a traceback.

Contract:
- ``INTERNAL_ERROR`` is the ``run_error`` every contained failure records; the lifecycle's closing
  (``RunClosingMiddleware``) ends the run with ``error/internal_error`` and still delivers what the research
  found, marked incomplete;
- the lifecycle (``ContainedCallsMiddleware``) wraps every model and tool call of the orchestrator. Node
  hooks (``before_agent``, ``before_model``, ``after_model``) run as graph steps of their own, outside those
  wrappers, so each of the harness's hooks is decorated with ``contain_hook_failures``: an unexpected
  exception is logged and the orchestrator jumps to its end, where the lifecycle closes the run. The decorated hook must declare
  ``@hook_config(can_jump_to=["end"])``;
- in a sub-agent the exception propagates: its ``task`` call turns it into ``status: subagent_failed`` and
  the run goes on. Interrupts and other LangGraph control flow always propagate.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langgraph.errors import GraphBubbleUp

from ..domain.names import EndReason, Role
from ..domain.stops import RunError

logger = logging.getLogger(__name__)

INTERNAL_ERROR = RunError(
    reason=EndReason.INTERNAL_ERROR.value,
    detail="The run stopped on an internal error; the details are in the server log",
)

M = TypeVar("M")
Hook = Callable[[M, Any, Any], Awaitable[dict[str, Any] | None]]


def contain_hook_failures(hook: Hook[M]) -> Hook[M]:
    """Turn an unexpected exception in an orchestrator's node hook into the run's internal error."""

    @functools.wraps(hook)
    async def contained(middleware: M, state: Any, runtime: Any) -> dict[str, Any] | None:
        try:
            return await hook(middleware, state, runtime)
        except GraphBubbleUp:
            raise
        except Exception:
            if getattr(middleware, "role", Role.ORCHESTRATOR) != Role.ORCHESTRATOR:
                raise
            logger.exception("internal error in %s", hook.__qualname__)
            return {"run_error": INTERNAL_ERROR, "jump_to": "end"}

    return contained
