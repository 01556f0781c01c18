"""SearXNG: web metasearch at an instance the user runs, through its JSON API (``/search?q=…&format=json``).

Contract: ``SearxngBackend(base_url, timeout_s)`` GETs ``<base>/search`` with ``format=json``; the answer's
``results`` (``url``, ``title``, ``content``, ``publishedDate``) become search results, at most
``max_results`` of them. A query whose language can be told locally (``documents/language.py``) is sent
with it as SearXNG's ``language``, so a French query finds French pages and an English one English pages;
one too short to tell searches every language. SearXNG answers 403 when the instance does not enable the JSON format; that
failure says so.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ...documents.language import detect_language
from ...domain.search import SearchBackendName, SearchResult
from .base import HttpApi

JSON_OFF = (
    "SearXNG refused the JSON format (403): enable json under search.formats in the instance's settings.yml, "
    "or check SEARXNG_URL. Do not retry."
)


def parse_searxng(payload: Any, max_results: int) -> list[SearchResult]:
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), list):
        raise ValueError("no results list")
    hits = []
    for item in payload["results"]:
        url = str(item.get("url") or "").strip() if isinstance(item, dict) else ""
        if not url.startswith(("http://", "https://")):
            continue
        hits.append(
            SearchResult(
                title=" ".join(str(item.get("title") or "").split()),
                url=url,
                snippet=" ".join(str(item.get("content") or "").split()),
                date=str(item.get("publishedDate") or ""),
                backend=SearchBackendName.SEARXNG,
            )
        )
        if len(hits) >= max_results:
            break
    return hits


class SearxngBackend:
    name = SearchBackendName.SEARXNG
    label = "SearXNG"
    good_for = "the web, through your SearXNG"

    def __init__(self, base_url: str, *, timeout_s: float) -> None:
        self._url = f"{base_url}/search"
        self._api = HttpApi(self.label, setting="SEARXNG_URL", timeout_s=timeout_s, explain={403: JSON_OFF})

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        params = {"q": query, "format": "json"}
        # The detector's model loads on first use (about 1.5 s): never on the event loop.
        if language := await asyncio.to_thread(detect_language, query):
            params["language"] = language
        response = await self._api.get(self._url, params)
        try:
            return parse_searxng(response.json(), max_results)
        except ValueError:
            raise self._api.malformed("SearXNG JSON") from None
