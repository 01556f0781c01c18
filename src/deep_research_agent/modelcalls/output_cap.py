"""An output cap that fits the model's context: no model call asks for more tokens than its window has left.

Contract (one instance per agent, in its guard chain): each model call's ``max_tokens`` is the smaller of
``max_output_tokens`` (0: no cap of its own) and the model's ``context_window`` less the request's prompt
(its messages, system prompt and tool schemas, counted approximately) and a safety margin for the count's
error, but never under ``MIN_OUTPUT_TOKENS``. A local server's window is small (llama-server splits ``-c``
across its slots): a 16,000-token cap against a 16 k window the prompt already half fills is a runaway
reply that runs for many minutes, or a request the server refuses.

langchain has no middleware that sizes ``max_tokens`` to the prompt (its summarization middleware shrinks
the prompt instead, which compaction does here), hence this one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages.utils import count_tokens_approximately

from ..domain.knobs import KnobError, not_negative, positive
from ..domain.per_role import PerRoleMiddleware

MIN_OUTPUT_TOKENS = 256
# The approximate count (4 characters a token) is off by up to a few percent on prose and more on code.
_MARGIN_SHARE = 0.05


def fitted_output_cap(max_output_tokens: int, context_window: int, prompt_tokens: int) -> int:
    """The ``max_tokens`` of a call whose prompt counts ``prompt_tokens`` on a model of ``context_window``."""
    room = context_window - prompt_tokens - max(MIN_OUTPUT_TOKENS, int(context_window * _MARGIN_SHARE))
    fitted = max(room, MIN_OUTPUT_TOKENS)
    return min(max_output_tokens, fitted) if max_output_tokens else fitted


class OutputCapMiddleware(PerRoleMiddleware):
    """Sets each model call's ``max_tokens`` to what the model's context has left after the prompt."""

    label = "OutputCap"

    def __init__(self, *, role: str, context_window: int, max_output_tokens: int) -> None:
        """``context_window``: the model's window in tokens; ``max_output_tokens``: the configured cap (0: none)."""
        owner = type(self).__name__
        for knob, value in (("context_window", context_window), ("max_output_tokens", max_output_tokens)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise KnobError(owner, knob, value, "a whole number of 0 or more")
            not_negative(owner, knob, value)
        positive(owner, "context_window", context_window)
        super().__init__(role=role)
        self.context_window = context_window
        self.max_output_tokens = max_output_tokens

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        system = [request.system_message] if request.system_message else []
        prompt = count_tokens_approximately([*system, *request.messages], tools=list(request.tools) or None)
        cap = fitted_output_cap(self.max_output_tokens, self.context_window, prompt)
        return await handler(request.override(model_settings={**request.model_settings, "max_tokens": cap}))
