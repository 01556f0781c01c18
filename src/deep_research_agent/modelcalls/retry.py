"""Model-call resilience: transient provider errors are retried with visible, bounded waits.

Contract (one instance per agent graph, orchestrator and every sub-agent; the chat client itself is built
with ``max_retries=0`` so no hidden retry hides a wait or doubles it):
- retryable: 429, 408, 409 and 5xx answers, timeouts and connection errors. Anything else (401, 400,
  403, 404, ...) is raised at once, for the lifecycle to word what to fix;
- each wait honours the provider's ``Retry-After`` (``retry-after-ms`` first) with a little jitter on top,
  and otherwise backs off exponentially with jitter; every wait sends ``status: rate_limited`` with the
  role, model, ``wait_s`` and attempt number before it starts;
- it gives up after ``max_retries`` retries, or when the next wait would take the call's total waiting
  past ``max_wait_s``; it then sends ``status: model_unavailable`` and raises the provider's error;
- a reply with nothing in it (no tool call, no text once reasoning is stripped), whether the model stopped
  or was cut off at the output cap (``finish_reason`` ``length``), is asked for once more, after a
  ``status: warning`` (reason ``empty_reply``); the second reply stands whatever it holds. A cut-off reply
  that has text is the runaway guard's (``guards/runaway.py``).

langchain's ``ModelRetryMiddleware`` cannot read ``Retry-After`` nor report its waits, hence this class.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import openai
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from ..domain.knobs import KnobError, callable_knob, not_negative
from ..domain.names import ModelFailure, WarningReason
from ..domain.per_role import PerRoleMiddleware
from ..domain.retry_after import backoff_s, retry_after_s
from ..domain.secrets import redact
from ..protocol.events import ModelUnavailableStatus, RateLimitedStatus, WarningStatus, emit
from .tool_text import strip_reasoning

_RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500
    # TimeoutError: langchain-openai's wait for the next streamed chunk ran out (StreamChunkTimeoutError).
    return isinstance(exc, openai.APIConnectionError | httpx.TimeoutException | httpx.TransportError | TimeoutError)


def provider_retry_after_s(exc: BaseException) -> float | None:
    """The wait the provider asked for in the headers of the answer behind ``exc``; None for no answer."""
    response = getattr(exc, "response", None)
    return retry_after_s(getattr(response, "headers", None))


def empty_reply(response: ModelResponse) -> str:
    """How the model's reply came back with nothing usable ("empty", or "cut off at the output cap"); "" when
    it holds a tool call or text."""
    reply = response.result[-1] if response.result else None
    if not isinstance(reply, AIMessage) or reply.tool_calls or strip_reasoning(reply.text).strip():
        return ""
    return "cut off at the output cap" if reply.response_metadata.get("finish_reason") == "length" else "empty"


def describe_failure(exc: BaseException) -> ModelFailure | str:
    """What the model endpoint answered to a retryable call: a ``ModelFailure``, or ``HTTP 5xx`` for a server error."""
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}" if exc.status_code >= 500 else ModelFailure(f"HTTP {exc.status_code}")
    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException | TimeoutError):
        return ModelFailure.TIMEOUT
    return ModelFailure.CONNECTION_ERROR


class ModelCallRetryMiddleware(PerRoleMiddleware):
    """Retries transient model errors within a retry count and a waiting budget, reporting every wait."""

    label = "ModelCallRetry"

    def __init__(
        self,
        *,
        role: str,
        model: str,
        max_retries: int,
        max_wait_s: float,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        """``max_retries``: retries per model call (0: none); ``max_wait_s``: the seconds of waiting they may
        add up to. A negative or non-finite one is refused."""
        owner = type(self).__name__
        if isinstance(max_retries, bool) or not isinstance(max_retries, int):
            raise KnobError(owner, "max_retries", max_retries, "a whole number of 0 or more")
        not_negative(owner, "max_retries", max_retries)
        not_negative(owner, "max_wait_s", max_wait_s)
        callable_knob(owner, "sleep", sleep)
        callable_knob(owner, "jitter", jitter)
        super().__init__(role=role)
        self.model = model
        self.max_retries = max_retries
        self.max_wait_s = float(max_wait_s)
        self.sleep = sleep
        self.jitter = jitter

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        response = await self._call(request, handler)
        if isinstance(response, ModelResponse) and (how := empty_reply(response)):
            emit(
                WarningStatus(
                    reason=WarningReason.EMPTY_REPLY,
                    detail=f"The model {self.model} sent a reply with nothing in it ({how}); asking it once more.",
                )
            )
            response = await self._call(request, handler)
        return response

    async def _call(self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
        """One model call, its transient errors retried."""
        waited = 0.0
        retry = 0
        while True:
            try:
                return await handler(request)
            except Exception as exc:
                if not is_retryable(exc):
                    raise
                retry += 1
                wait = backoff_s(retry, provider_retry_after_s(exc), self.jitter())
                if retry > self.max_retries or waited + wait > self.max_wait_s:
                    self._give_up(exc, attempts=retry, waited=waited)
                    raise
                emit(
                    RateLimitedStatus(
                        model=self.model,
                        wait_s=round(wait, 3),
                        attempt=retry,
                        reason=describe_failure(exc),
                        detail=f"The model endpoint answered {describe_failure(exc)}; retrying in {wait:.1f} s.",
                    )
                )
                await self.sleep(wait)
                waited += wait

    def _give_up(self, exc: BaseException, *, attempts: int, waited: float) -> None:
        emit(
            ModelUnavailableStatus(
                model=self.model,
                attempt=attempts,
                reason=describe_failure(exc),
                detail=redact(
                    f"The model endpoint still answered {describe_failure(exc)} after {attempts} attempt"
                    f"{'s' if attempts != 1 else ''} and {waited:.1f} s of waiting; giving up on this call."
                ),
            )
        )
