"""Classified tool failures: what went wrong, whether retrying can help, and when.

Contract: a tool never raises out to the agent. It catches its own failure as a ``ToolFailure`` and hands
the model ``failure.as_model_text(tool)`` as the tool result, for example::

    ERROR [permanent] web_search: Tavily rejected the API key (401). Fix TAVILY_API_KEY (or configurable
    apiKeys.TAVILY_API_KEY); do not retry.

``permanent`` means the same call will fail again; ``transient`` means it may succeed later, after
``retry_after`` seconds when the upstream said so. Messages are scrubbed of secrets.
"""

from __future__ import annotations

import math
from typing import Literal

from ..protocol.secrets import redact

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
        text = f"ERROR [{self.kind}] {tool}: {self.message}"
        if self.kind == "transient" and self.retry_after is not None:
            text += f" Retry in about {max(math.ceil(self.retry_after), 1)} s, or continue with what you have."
        return text
