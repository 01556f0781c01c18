"""What every search backend is and shares: the ``SearchBackend`` protocol, and one HTTP GET with the bounded
retry every backend's failures go through.

Contract:
- a backend has a ``name`` (``SearchBackendName``), a ``label`` a reader knows it by, ``good_for`` (the few
  words the ``web_search`` description gives it), and ``search(query, max_results)``, which returns
  ``SearchResult``s or raises ``ToolFailure`` (classified, wording the model can act on);
- ``retrying(call, label=...)`` runs ``call`` at most ``ATTEMPTS`` times within ``RETRY_BUDGET_S``, again only
  after a transient failure that was not a timeout, waiting the server's ``Retry-After`` when it gave one
  (else 0.5 s doubling); before each wait after a rate limit (``RateLimited``) it emits a ``rate_limited``
  status naming the backend. A wait longer than the budget hands the failure to the model at once;
- ``HttpApi.get(url, params)`` is one GET of a backend's API through ``retrying``: a non-2xx answer, a
  timeout or a refused connection becomes a ``ToolFailure`` saying what the backend answered and which
  setting points at it.

Why not langchain-community's retrievers: each wraps one API in its own client, result shape and error
handling (some swallow failures), where the tool needs one shape, classified failures and this retry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_before_delay

from ...domain.errors import ToolFailure
from ...domain.retry_after import retry_after_s
from ...domain.search import SearchBackendName, SearchResult
from ...protocol.events import RateLimitedStatus, emit

ATTEMPTS = 3
RETRY_BUDGET_S = 10.0
USER_AGENT = "deep-research-agent/0.1 (research assistant)"
T = TypeVar("T")


class SearchBackend(Protocol):
    name: SearchBackendName
    label: str
    good_for: str

    async def search(self, query: str, max_results: int) -> list[SearchResult]: ...


class RateLimited(ToolFailure):
    """A transient failure because the service answered 429: its waits are announced as ``rate_limited``."""


class TimedOut(ToolFailure):
    """A transient failure because the service did not answer in time: retrying it only doubles the wait."""


def _worth_retrying(exc: BaseException) -> bool:
    return isinstance(exc, ToolFailure) and exc.kind == "transient" and not isinstance(exc, TimedOut)


def _wait(state: RetryCallState) -> float:
    failure = state.outcome.exception() if state.outcome else None
    if isinstance(failure, ToolFailure) and failure.retry_after is not None:
        return failure.retry_after
    return 0.5 * 2 ** (state.attempt_number - 1)


async def retrying(call: Callable[[], Awaitable[T]], *, label: str) -> T:
    """``call`` retried as the module contract says; the last failure is raised."""

    async def announce(state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, RateLimited) and state.next_action is not None:
            wait = state.next_action.sleep
            emit(
                RateLimitedStatus(
                    label=label,
                    wait_s=round(wait, 2),
                    attempt=state.attempt_number,
                    detail=f"{label} answered 429 to a search; waiting {wait:.1f} s.",
                )
            )

    retrier = AsyncRetrying(
        retry=retry_if_exception(_worth_retrying),
        wait=_wait,
        stop=stop_after_attempt(ATTEMPTS) | stop_before_delay(RETRY_BUDGET_S),
        before_sleep=announce,
        reraise=True,
    )
    return await retrier(call)


def status_failure(
    label: str, status: int, headers: Mapping[str, str], *, setting: str, detail: str = ""
) -> ToolFailure:
    """A non-2xx answer of a search API as a failure the model can act on."""
    suffix = f": {detail}" if detail else ""
    if status == 429:
        wait = retry_after_s(headers)
        return RateLimited("transient", f"{label} rate limit reached (429).", retry_after=wait)
    if status >= 500:
        return ToolFailure.transient(f"{label} had a server error ({status}).", retry_after=retry_after_s(headers))
    if status == 400:
        return ToolFailure.permanent(f"{label} rejected the query (400){suffix}. Fix the query before searching again.")
    if status in (401, 403):
        return ToolFailure.permanent(f"{label} refused the request ({status}){suffix}; check {setting}. Do not retry.")
    if status == 404:
        return ToolFailure.permanent(f"{label} has no search API at the configured address (404); check {setting}.")
    return ToolFailure.permanent(f"{label} answered with HTTP {status}{suffix}; do not retry the same call.")


class HttpApi:
    """GETs to one backend's API: its label and setting for error texts, its timeout and User-Agent."""

    def __init__(
        self, label: str, *, setting: str, timeout_s: float, contact: str = "", explain: Mapping[int, str] | None = None
    ) -> None:
        """``explain`` maps an HTTP status to what this service means by it (a permanent failure)."""
        self.label = label
        self.explain = dict(explain or {})
        self.setting = setting
        self.timeout_s = timeout_s
        agent = f"{USER_AGENT[:-1]}; mailto:{contact})" if contact else USER_AGENT
        self.headers = {"User-Agent": agent}

    async def get(self, url: str, params: Mapping[str, Any]) -> httpx.Response:
        """The 2xx answer to ``GET url?params``, after the retries; anything else raises ``ToolFailure``."""

        async def once() -> httpx.Response:
            try:
                async with httpx.AsyncClient(timeout=self.timeout_s, headers=self.headers, trust_env=False) as client:
                    response = await client.get(url, params=dict(params))
            except httpx.TimeoutException:
                raise TimedOut("transient", f"{self.label} did not answer in time.") from None
            except httpx.TransportError as exc:
                raise ToolFailure.transient(
                    f"could not reach {self.label} ({type(exc).__name__}); it may be down, or {self.setting} is wrong."
                ) from None
            if response.status_code in self.explain:
                raise ToolFailure.permanent(self.explain[response.status_code])
            if not response.is_success:
                raise status_failure(
                    self.label, response.status_code, response.headers, setting=self.setting, detail=_detail(response)
                )
            return response

        return await retrying(once, label=self.label)

    def malformed(self, what: str) -> ToolFailure:
        """The answer was not the format the API speaks (a proxy's error page, another service at the URL)."""
        return ToolFailure.permanent(f"{self.label} answered with something that is not {what}; check {self.setting}.")


def _detail(response: httpx.Response) -> str:
    text = " ".join(response.text.split())
    return text[:200] if text and not text.startswith("<") else ""
