"""Model-call resilience: transient provider errors are retried with visible, bounded waits.

Contract (one instance per agent graph, orchestrator and every sub-agent; the chat client itself is built
with ``max_retries=0`` so no hidden retry hides a wait or doubles it):
- retryable: 429, 408, 409 and 5xx answers, timeouts and connection errors. Anything else (401, 400,
  403, 404, ...) is raised at once, for the lifecycle to word what to fix;
- each wait honours the provider's ``Retry-After`` (``retry-after-ms`` first) with a little jitter on top,
  and otherwise backs off exponentially with jitter; every wait sends ``status: rate_limited`` with the
  role, model, ``wait_s`` and attempt number before it starts;
- it gives up after ``max_retries`` retries, or when the next wait would take the call's total waiting
  past ``max_wait_s``; it then sends ``status: model_unavailable`` and raises the provider's error.

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

from ..domain.knobs import KnobError, callable_knob, not_negative
from ..domain.names import ModelFailure
from ..domain.per_role import PerRoleMiddleware
from ..domain.retry_after import backoff_s, retry_after_s
from ..domain.secrets import redact
from ..protocol.events import ModelUnavailableStatus, RateLimitedStatus, emit

_RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500
    return isinstance(exc, openai.APIConnectionError | httpx.TimeoutException | httpx.TransportError)


def provider_retry_after_s(exc: BaseException) -> float | None:
    """The wait the provider asked for in the headers of the answer behind ``exc``; None for no answer."""
    response = getattr(exc, "response", None)
    return retry_after_s(getattr(response, "headers", None))


def describe_failure(exc: BaseException) -> ModelFailure | str:
    """What the model endpoint answered to a retryable call: a ``ModelFailure``, or ``HTTP 5xx`` for a server error."""
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}" if exc.status_code >= 500 else ModelFailure(f"HTTP {exc.status_code}")
    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
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
