"""Tool errors reach the model as classified text; a failing tool never fails the run.

Built on langchain's ``ToolErrorMiddleware``: ``ToolFailure`` keeps its own classification, and any other
exception becomes an ``[unknown]`` error that names only its type, so internals and secrets stay out of
the model's context. One instance per agent graph (the name carries the role).
"""

from __future__ import annotations

import logging

from langchain.agents.middleware import ToolErrorMiddleware
from langgraph.prebuilt.tool_node import ToolCallRequest

from .errors import ToolFailure

logger = logging.getLogger(__name__)


def classify_tool_error(exc: Exception, request: ToolCallRequest) -> str:
    tool = request.tool_call["name"]
    if isinstance(exc, ToolFailure):
        return exc.as_model_text(tool)
    logger.warning("tool %s raised %r", tool, exc)
    return (
        f"ERROR [unknown] {tool}: the tool failed unexpectedly ({type(exc).__name__}). "
        "Retry once with different arguments, or continue without it."
    )


class ClassifiedToolErrorsMiddleware(ToolErrorMiddleware):
    """``ToolErrorMiddleware`` with this product's classifier, named per role."""

    def __init__(self, *, role: str) -> None:
        super().__init__(on_error=classify_tool_error)
        self.role = role

    @property
    def name(self) -> str:
        return f"ClassifiedToolErrors[{self.role}]"
