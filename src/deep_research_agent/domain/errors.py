"""A tool call that failed in a way the model can act on, and the one wording every failed call is shown in.

Contract: a tool never raises out to the agent. It catches its own failure as a ``ToolFailure`` and hands
the model ``failure.as_model_text(tool)`` as the tool result, for example::

    TOOL ERROR (web_search, permanent): Tavily rejected the API key (401). Fix TAVILY_API_KEY (or configurable
    apiKeys.TAVILY_API_KEY); do not retry.

``permanent`` means the same call will fail again; ``transient`` means it may succeed later, after
``retry_after`` seconds when the upstream said so. Messages are scrubbed of secrets. ``describe_tool_error``
turns any other exception into an ``unknown`` error that names only its type.
"""

from __future__ import annotations

import logging
import math
from typing import Literal

from .names import ToolErrorClass
from .secrets import redact

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


# How every failed tool call's text starts (``tool_error_text``), by which a reader tells one from a result.
TOOL_ERROR_PREFIX = "TOOL ERROR ("


def tool_error_text(tool: str, error_class: FailureKind | ToolErrorClass, message: str) -> str:
    """The one wording of a failed tool call, ``TOOL ERROR (tool, class): message``, for every tool and
    harness refusal, so the model (and the prompts that explain it) learn a single form."""
    return f"{TOOL_ERROR_PREFIX}{tool}, {ToolErrorClass(error_class).value}): {message}"


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
