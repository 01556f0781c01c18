"""Classified tool failures in a run: retrieval failures kept for the outcome, and the per-agent error middleware.

The failure type and its wording are ``domain/errors.py``'s.

A retrieval tool (search, fetch, MCP, corpus) hands its failure over through ``retrieval_failure_text``,
which also keeps it in the run's failures (``run/failures.py``, passed in by the tool), and reports a later
success on the same target through ``retrieval_answered``: the run's outcome is ``partial_retrieval`` while
any stays unanswered.

``ClassifiedToolErrorsMiddleware`` is langchain's ``ToolErrorMiddleware`` with this classifier: a
``ToolFailure`` keeps its own classification, and any other exception becomes an ``[unknown]`` error that
names only its type, so internals and secrets stay out of the model's context. A call whose arguments do
not fit the tool's schema (``ToolNode`` answers those itself, before the tool runs, in LangChain's own
wording) reaches the model as ``TOOL ERROR (tool, permanent)`` with what does not fit and a one-line example
call (``tools/arguments.py``). One instance per agent graph (the name carries the role).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.errors import ToolFailure, describe_tool_error, tool_error_text
from ..domain.names import ToolErrorClass
from ..run.failures import RunFailures
from .arguments import argument_problem, example_call, tool_schema

logger = logging.getLogger(__name__)


def retrieval_failure_text(failures: RunFailures, tool: str, target: str, failure: ToolFailure) -> str:
    """The model's text for a failed retrieval call on ``target`` (a query, URL or call), kept in the run's ``failures``."""
    failures.retrieval_failed(tool, target, failure.message)
    return failure.as_model_text(tool)


def retrieval_answered(failures: RunFailures, tool: str, target: str) -> None:
    """A retrieval call on ``target`` succeeded, so an earlier failure on it no longer leaves a gap."""
    failures.retrieval_succeeded(tool, target)


def classify_tool_error(exc: Exception, request: ToolCallRequest) -> str:
    return describe_tool_error(exc, request.tool_call["name"])[1]


class ClassifiedToolErrorsMiddleware(ToolErrorMiddleware):
    """``ToolErrorMiddleware`` with this product's classifier, named per role."""

    def __init__(self, *, role: str) -> None:
        super().__init__(on_error=classify_tool_error)
        self.role = role

    @property
    def name(self) -> str:
        return f"ClassifiedToolErrors[{self.role}]"

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        return _explain_invalid_arguments(request, super().wrap_tool_call(request, handler))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
    ) -> ToolMessage | Command[Any]:
        return _explain_invalid_arguments(request, await super().awrap_tool_call(request, handler))


def _explain_invalid_arguments(
    request: ToolCallRequest, result: ToolMessage | Command[Any]
) -> ToolMessage | Command[Any]:
    """``result`` in the ``TOOL ERROR`` form with an example call when the call failed because its arguments
    do not fit the tool; any other result unchanged. Only a failed call is checked, so a tool whose own
    parsing accepts more than its schema says never loses a call that ran."""
    if not isinstance(result, ToolMessage) or result.status != "error" or request.tool is None:
        return result
    problem = argument_problem(request.tool, dict(request.tool_call.get("args") or {}))
    if not problem:
        return result
    text = tool_error_text(
        request.tool.name,
        ToolErrorClass.PERMANENT,
        f"the arguments do not fit the tool ({problem}). Call it again with arguments like this: "
        f"{example_call(*tool_schema(request.tool))}",
    )
    return result.model_copy(update={"content": text})
