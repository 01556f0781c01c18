"""Classified tool failures in a run: retrieval failures kept for the outcome, and the per-agent error middleware.

The failure type and its wording are ``domain/errors.py``'s.

A retrieval tool (search, fetch, MCP, corpus) hands its failure over through ``retrieval_failure_text``,
which also keeps it in the run's failures (``run/failures.py``, passed in by the tool), and reports a later
success on the same target through ``retrieval_answered``: the run's outcome is ``partial_retrieval`` while
any stays unanswered.

``ClassifiedToolErrorsMiddleware`` is langchain's ``ToolErrorMiddleware`` with this classifier: a
``ToolFailure`` keeps its own classification, and any other exception becomes an ``[unknown]`` error that
names only its type, so internals and secrets stay out of the model's context. One instance per agent
graph (the name carries the role).
"""

from __future__ import annotations

import logging

from langchain.agents.middleware import ToolErrorMiddleware
from langgraph.prebuilt.tool_node import ToolCallRequest

from ..domain.errors import ToolFailure, describe_tool_error
from ..run.failures import RunFailures

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
