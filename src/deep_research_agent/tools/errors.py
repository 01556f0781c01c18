"""Classified tool failures: what went wrong, whether retrying can help, and when.

Contract: a tool never raises out to the agent. It catches its own failure as a ``ToolFailure`` and hands
the model ``failure.as_model_text(tool)`` as the tool result, for example::

    TOOL ERROR (web_search, permanent): Tavily rejected the API key (401). Fix TAVILY_API_KEY (or configurable
    apiKeys.TAVILY_API_KEY); do not retry.

``permanent`` means the same call will fail again; ``transient`` means it may succeed later, after
``retry_after`` seconds when the upstream said so. Messages are scrubbed of secrets.

A retrieval tool (search, fetch, MCP, corpus) hands its failure over through ``retrieval_failure_text``,
which also keeps it in the run's failures (``run/failures.py``), and reports a later success on the same
target through ``retrieval_answered``: the run's outcome is ``partial_retrieval`` while any stays unanswered.

``ClassifiedToolErrorsMiddleware`` is langchain's ``ToolErrorMiddleware`` with this classifier: a
``ToolFailure`` keeps its own classification, and any other exception becomes an ``[unknown]`` error that
names only its type, so internals and secrets stay out of the model's context. One instance per agent
graph (the name carries the role).
"""

from __future__ import annotations

import logging
import math
from typing import Literal

from langchain.agents.middleware import ToolErrorMiddleware
from langgraph.prebuilt.tool_node import ToolCallRequest

from ..names import ToolErrorClass
from ..protocol.secrets import redact
from ..run import NoRunError, current_run

logger = logging.getLogger(__name__)

FailureKind = Literal["permanent", "transient"]


class ToolFailure(Exception):
    """A tool call that failed in a way the model can act on."""

    def __init__(self, kind: FailureKind, message: str, *, retry_after: float | None = None) -> None:
        self.kind: FailureKind = kind
        self.message = redact(message)
        self.retry_after = retry_after
        super().__init__(self.message)

    @classmethod
    def permanent(cls, message: str) -> ToolFailure:
        return cls("permanent", message)

    @classmethod
    def transient(cls, message: str, *, retry_after: float | None = None) -> ToolFailure:
        return cls("transient", message, retry_after=retry_after)

    def as_model_text(self, tool: str) -> str:
        """The tool result the model reads in place of data."""
        text = tool_error_text(tool, self.kind, self.message)
        if self.kind == "transient" and self.retry_after is not None:
            text += f" Retry in about {max(math.ceil(self.retry_after), 1)} s, or continue with what you have."
        return text


def tool_error_text(tool: str, error_class: FailureKind | ToolErrorClass, message: str) -> str:
    """The one wording of a failed tool call, ``TOOL ERROR (tool, class): message``, for every tool and
    harness refusal, so the model (and the prompts that explain it) learn a single form."""
    return f"TOOL ERROR ({tool}, {ToolErrorClass(error_class).value}): {message}"


def retrieval_failure_text(tool: str, target: str, failure: ToolFailure) -> str:
    """The model's text for a failed retrieval call on ``target`` (a query, URL or call), kept in the run's failures."""
    try:
        current_run().failures.retrieval_failed(tool, target, failure.message)
    except NoRunError:  # a tool called outside a run, e.g. in a unit test
        pass
    return failure.as_model_text(tool)


def retrieval_answered(tool: str, target: str) -> None:
    """A retrieval call on ``target`` succeeded, so an earlier failure on it no longer leaves a gap."""
    try:
        current_run().failures.retrieval_succeeded(tool, target)
    except NoRunError:
        pass


def describe_tool_error(exc: Exception, tool: str) -> tuple[ToolErrorClass, str]:
    """The class of a tool's failure and the text the model reads; anything but a ``ToolFailure`` is
    ``unknown`` and named only by its type, so internals and secrets stay out of the model's context."""
    if isinstance(exc, ToolFailure):
        return ToolErrorClass(exc.kind), exc.as_model_text(tool)
    logger.warning("tool %s raised %r", tool, exc)
    return ToolErrorClass.UNKNOWN, tool_error_text(
        tool,
        ToolErrorClass.UNKNOWN,
        f"the tool failed unexpectedly ({type(exc).__name__}). Retry once with different arguments, or continue without it.",
    )


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
