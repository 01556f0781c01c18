"""Where the lifecycle's parts find their run, and the one state key they share.

langchain calls the lifecycle's hooks with its own arguments, never with a run of ours, and the lifecycle
needs the call's LangGraph config besides (its thread, its user), so its parts look the run up here, once
per hook or call, rather than through ``run/boundary.py``'s ``@run_hook``.

Contract:
- ``hook_call()`` is the run and config of a node hook (``before_agent``, ``after_agent``); outside a
  graph run it raises ``RuntimeError`` (LangGraph's, for a missing config);
- ``this_call()`` is the run and config of a model or tool call, or None outside a graph run (a unit test
  calls a wrapper directly), where there is nothing to take over, save or drop;
- ``drop_run(call)`` closes a run whose end hook will never run (cancelled, or paused for the user): its
  stores hold every page it read;
- ``LifecycleState.run_error`` is what ended the run early (a config problem, a refused admission, a
  failed model call, an internal error); the closing reads it to name the end status.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, cast

from langchain.agents.middleware import AgentState
from langchain.agents.middleware.types import PrivateStateAttr
from langgraph.channels import UntrackedValue
from langgraph.config import get_config

from ..domain.stops import RunError
from ..run import NoRunError, Run, close_run, current_run

# The run of one hook or call of the orchestrator, and the call's LangGraph config.
RunCall = tuple[Run, dict[str, Any]]


class LifecycleState(AgentState):
    run_error: NotRequired[Annotated[RunError | None, PrivateStateAttr, UntrackedValue]]


def hook_call() -> RunCall:
    """The run of this node hook with the hook's config."""
    config = cast(dict[str, Any], get_config())
    return current_run(config), config


def this_call() -> RunCall | None:
    """The run of this model or tool call with the call's config; None outside a graph run."""
    try:
        return hook_call()
    except (RuntimeError, NoRunError):
        return None


def thread_of(config: dict[str, Any]) -> str | None:
    """The thread id of a call's config."""
    return (config.get("configurable") or {}).get("thread_id")


def drop_run(call: RunCall | None) -> None:
    """Close the run of ``call`` now: its end hook never runs, and its stores hold every page it read."""
    if call is not None:
        close_run(call[0].key)
