"""Where a run's calls enter this product's code: the middleware hooks and the tools langchain calls.

langchain calls a middleware hook or a tool with its own arguments only, never with a run of ours. An
entry point marked here looks the run of the call it serves up once (``current_run``: the run its
LangGraph config names, or the one ``bound_run`` opened) and receives it as an argument. What it calls
takes the run, or the one store it needs (``run.usage``, ``run.evidence``, ``run.failures``,
``run.control``, ``run.recording``, ``run.attachments``), as a parameter, and never looks it up again.

Contract:
- ``@run_hook`` on an async middleware hook (``awrap_model_call``, ``awrap_tool_call``, ``abefore_model``,
  ...): the hook is called with langchain's arguments and ``run=`` the run;
- ``run_tool(body)`` is a tool's function (for ``@tool`` or ``StructuredTool``, sync or async) whose
  ``body`` takes the run as its first argument; the function's signature, which langchain reads for the
  tool's arguments and the values it injects (``ToolRuntime``, the tool call id), is ``body``'s without it;
- outside a graph run and outside ``bound_run`` either raises ``NoRunError``, as ``current_run`` does.

The other places that look a run up are the lifecycle (it opens and closes the run), the graph factory
(which sees the run before any hook runs) and the sandbox backend (which deepagents' file tools call with
no run); ``tests/test_run_handle.py`` keeps that list short.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .registry import current_run

T = TypeVar("T")


def run_hook(hook: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """``hook`` (a middleware method taking ``run`` as a keyword) as langchain calls it: without the run."""

    @functools.wraps(hook)
    async def hook_with_its_run(self: object, *args: Any, **kwargs: Any) -> T:
        return await hook(self, *args, run=current_run(), **kwargs)

    signature = inspect.signature(hook)
    hook_with_its_run.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for name, p in signature.parameters.items() if name != "run"]
    )
    return hook_with_its_run


def run_tool(body: Callable[..., T]) -> Callable[..., T]:
    """A tool function calling ``body(run, *args, **kwargs)`` with the run of the tool call."""
    tool_with_its_run: Callable[..., Any]
    if inspect.iscoroutinefunction(body):

        @functools.wraps(body)
        async def tool_with_its_run(*args: Any, **kwargs: Any) -> Any:
            return await body(current_run(), *args, **kwargs)

    else:

        @functools.wraps(body)
        def tool_with_its_run(*args: Any, **kwargs: Any) -> Any:
            return body(current_run(), *args, **kwargs)

    signature = inspect.signature(body)
    tool_with_its_run.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[1:]
    )
    return tool_with_its_run
