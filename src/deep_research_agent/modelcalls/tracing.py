"""LangSmith's span bookkeeping run inline while tracing is off, instead of on a worker thread per span.

langchain wraps every middleware's ``awrap_model_call`` and ``awrap_tool_call`` in LangSmith's
``traceable``, traced or not. Each wrapped call then sets its span up and closes it through
``aio_to_thread`` (a thread-pool round trip each, under the GIL's contention with the event loop) and runs
the layer in a task of its own. With a dozen layers per agent that was about a tenth of a server's CPU per
run (``bench/aegra_profile.py``). With tracing off both steps only find that there is nothing to record,
so ``inline_untraced_spans`` has them run on the event loop, in the context LangSmith gives them; with
tracing on (``LANGSMITH_TRACING``, or a ``tracing_context``) LangSmith's own thread hop is used.
LangSmith's runtime override is process-wide; once set, LangSmith also runs each layer in the caller's
task (inside its ``tracing_context``) rather than a new one.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any

import langsmith
from langsmith.utils import tracing_is_enabled

DefaultToThread = Callable[..., Awaitable[Any]]


async def _inline_when_untraced(
    default: DefaultToThread, ctx: contextvars.Context, func: Callable[..., Any], /, *args: Any, **kwargs: Any
) -> Any:
    if ctx.run(tracing_is_enabled):
        return await default(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def inline_untraced_spans() -> None:
    """Install the override for this process (idempotent)."""
    langsmith.set_runtime_overrides(aio_to_thread=_inline_when_untraced)
