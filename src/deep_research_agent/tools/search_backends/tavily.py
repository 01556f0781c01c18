"""Tavily: web search through tavily-python, with the run's key as the Bearer token or keyless without one.

Contract: ``TavilyBackend(api_key, base_url, timeout_s)``; ``keyless`` is True without a key (Tavily's
rate-limited keyless mode; the tool says so once per run). Failures are classified by
``classify_search_error``: a rejected key (401) and a refused plan (403, 432, 433) name the key's setting,
a rate limit (429; keyless gets its own wording) and server errors are transient with Tavily's wait.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import httpx
from tavily import AsyncTavilyClient
from tavily.errors import TavilyKeylessLimitError
from tavily.errors import TimeoutError as TavilyTimeoutError

from ...domain.errors import ToolFailure
from ...domain.retry_after import retry_after_s
from ...domain.search import SearchBackendName, SearchResult
from .base import RateLimited, TimedOut, retrying

_KEY_FIX = "Fix TAVILY_API_KEY (or configurable apiKeys.TAVILY_API_KEY)"
_MAX_CLIENTS_PER_LOOP = 32


class TavilyHTTPError(Exception):
    """A non-2xx Tavily answer; the library's own exception is the ``__cause__``."""

    def __init__(self, status: int, retry_after: float | None, detail: str) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.retry_after = retry_after
        self.detail = detail


class _TavilyClient(AsyncTavilyClient):
    """tavily-python maps HTTP errors to exceptions but drops the status and ``Retry-After``; keep them.

    This overrides a private hook of tavily-python 0.8 (pinned below 0.9 in pyproject for that reason).
    """

    def _handle_error_response(self, response: httpx.Response, body_override: Any = None) -> None:
        try:
            super()._handle_error_response(response, body_override)
        except Exception as exc:
            raise TavilyHTTPError(response.status_code, _retry_after(response, exc), str(exc)) from exc


def _retry_after(response: httpx.Response, exc: Exception) -> float | None:
    """Tavily's keyless limit puts the wait in its error body; any other answer says it in the headers."""
    if isinstance(exc, TavilyKeylessLimitError) and exc.retry_after_seconds is not None:
        return float(exc.retry_after_seconds)
    return retry_after_s(response.headers)


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, OrderedDict[tuple[str, str], _TavilyClient]] = (
    weakref.WeakKeyDictionary()
)
_clients_lock = threading.Lock()


def _client_for(api_key: str, base_url: str) -> _TavilyClient:
    """A cached client per (key digest, base URL), per event loop: httpx pools belong to the loop that opened them."""
    loop = asyncio.get_running_loop()
    cache_key = (hashlib.sha256(api_key.encode()).hexdigest() if api_key else "", base_url)
    with _clients_lock:
        per_loop = _clients.setdefault(loop, OrderedDict())
        client = per_loop.get(cache_key)
        if client is None:
            # "" rather than None: tavily-python would otherwise read TAVILY_API_KEY itself, behind the settings.
            client = per_loop[cache_key] = _TavilyClient(api_key=api_key, api_base_url=base_url or None)
            while len(per_loop) > _MAX_CLIENTS_PER_LOOP:
                per_loop.popitem(last=False)
        else:
            per_loop.move_to_end(cache_key)
        return client


def classify_search_error(exc: BaseException) -> ToolFailure:
    """Turn what the Tavily client raised into a failure the model can act on."""
    if isinstance(exc, TavilyHTTPError):
        return _classify_status(exc)
    if isinstance(exc, (TavilyTimeoutError, httpx.TimeoutException)):
        return TimedOut("transient", "Tavily did not answer in time.")
    if isinstance(exc, httpx.TransportError):
        return ToolFailure.transient(f"could not reach Tavily ({type(exc).__name__}).")
    return ToolFailure.permanent(
        f"search failed unexpectedly ({type(exc).__name__}: {exc}); do not retry the same call."
    )


def _classify_status(exc: TavilyHTTPError) -> ToolFailure:
    status, detail = exc.status, exc.detail.strip()
    suffix = f": {detail}" if detail else ""
    if status == 401:
        return ToolFailure.permanent(f"Tavily rejected the API key (401). {_KEY_FIX}; do not retry.")
    if status == 429:
        if isinstance(exc.__cause__, TavilyKeylessLimitError):
            return RateLimited(
                "transient",
                "keyless Tavily search hit its rate limit (429). Set TAVILY_API_KEY for higher limits.",
                retry_after=exc.retry_after,
            )
        return RateLimited("transient", "Tavily rate limit reached (429).", retry_after=exc.retry_after)
    if status in (403, 432, 433):
        return ToolFailure.permanent(
            f"Tavily refused the request ({status}){suffix}. The key's plan or usage limit does not allow it: "
            "check the plan behind TAVILY_API_KEY (or configurable apiKeys.TAVILY_API_KEY); do not retry."
        )
    if status == 400:
        return ToolFailure.permanent(f"Tavily rejected the query (400){suffix}. Fix the query before searching again.")
    if status >= 500:
        return ToolFailure.transient(f"Tavily had a server error ({status}).", retry_after=exc.retry_after)
    return ToolFailure.permanent(f"Tavily answered with HTTP {status}{suffix}; do not retry the same call.")


def parse_tavily(response: Mapping[str, Any]) -> list[SearchResult]:
    """Tavily's ``results`` as search results; a hit without a URL is dropped."""
    hits = []
    for item in response.get("results") or ():
        url = str(item.get("url") or "").strip()
        if not url:
            continue
        hits.append(
            SearchResult(
                title=" ".join(str(item.get("title") or "").split()),
                url=url,
                snippet=str(item.get("content") or "").strip(),
                date=str(item.get("published_date") or ""),
                backend=SearchBackendName.TAVILY,
            )
        )
    return hits


class TavilyBackend:
    name = SearchBackendName.TAVILY
    label = "Tavily"
    good_for = "the web"

    def __init__(self, api_key: str, base_url: str, *, timeout_s: float) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._timeout_s = timeout_s

    @property
    def keyless(self) -> bool:
        return not self._api_key

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        client = _client_for(self._api_key, self._base_url)

        async def once() -> Mapping[str, Any]:
            try:
                return await client.search(query, max_results=max_results, timeout=self._timeout_s)
            except Exception as exc:
                raise classify_search_error(exc) from exc

        return parse_tavily(await retrying(once, label=self.label))
