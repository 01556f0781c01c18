"""Wikipedia: articles through the MediaWiki action API, a search and then the hits' lead sections.

Contract: ``WikipediaBackend(api_url, timeout_s, contact)`` asks ``list=search`` for the best ``max_results``
articles, then ``prop=extracts|info`` (plain-text lead section, ``exintro``) with their URLs for those
page ids, in one request each. A hit's snippet is its lead section, else the search snippet without its
markup; its URL is the article's ``fullurl``. The API reports errors in an ``error`` object with HTTP 200;
that is a permanent failure with its ``info``.
"""

from __future__ import annotations

import html
import re
from typing import Any

from ...domain.errors import ToolFailure
from ...domain.search import SearchBackendName, SearchResult
from .base import HttpApi

_TAG = re.compile(r"<[^>]+>")
_COMMON = {"action": "query", "format": "json", "formatversion": 2}
EXTRACT_CHARS = 2000


def _checked(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise ValueError("not a JSON object")
    if isinstance(payload.get("error"), dict):
        info = payload["error"].get("info") or payload["error"].get("code") or "unknown error"
        raise ToolFailure.permanent(f"Wikipedia rejected the request: {info}. Fix the query before searching again.")
    return payload


def search_hits(payload: Any) -> list[dict[str, Any]]:
    """``list=search``'s hits (title, pageid, snippet, timestamp)."""
    found = _checked(payload).get("query", {}).get("search")
    if not isinstance(found, list):
        raise ValueError("no search list")
    return [hit for hit in found if isinstance(hit, dict) and "pageid" in hit]


def parse_wikipedia(hits: list[dict[str, Any]], pages_payload: Any, wiki_base: str) -> list[SearchResult]:
    """The hits in search order with their pages' lead sections and URLs."""
    pages = _checked(pages_payload).get("query", {}).get("pages") or []
    by_id = {page.get("pageid"): page for page in pages if isinstance(page, dict)}
    results = []
    for hit in hits:
        page = by_id.get(hit["pageid"], {})
        title = str(page.get("title") or hit.get("title") or "")
        extract = " ".join(str(page.get("extract") or "").split())
        snippet = extract[:EXTRACT_CHARS] or " ".join(
            html.unescape(_TAG.sub("", str(hit.get("snippet") or ""))).split()
        )
        url = str(page.get("fullurl") or f"{wiki_base}/wiki/{title.replace(' ', '_')}")
        results.append(
            SearchResult(
                title=title,
                url=url,
                snippet=snippet,
                date=str(hit.get("timestamp") or "")[:10],
                backend=SearchBackendName.WIKIPEDIA,
            )
        )
    return results


class WikipediaBackend:
    name = SearchBackendName.WIKIPEDIA
    label = "Wikipedia"
    good_for = "encyclopedic background and definitions"

    def __init__(self, api_url: str, *, timeout_s: float, contact: str = "") -> None:
        self._url = api_url
        self._wiki_base = api_url.rsplit("/w/api.php", 1)[0]
        self._api = HttpApi(self.label, setting="WIKIPEDIA_API_URL", timeout_s=timeout_s, contact=contact)

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        params = {**_COMMON, "list": "search", "srsearch": query, "srlimit": max_results, "srprop": "snippet|timestamp"}
        try:
            hits = search_hits((await self._api.get(self._url, params)).json())
            if not hits:
                return []
            ids = "|".join(str(hit["pageid"]) for hit in hits)
            pages = {
                **_COMMON,
                "prop": "extracts|info",
                "exintro": 1,
                "explaintext": 1,
                "exlimit": "max",
                "inprop": "url",
                "pageids": ids,
            }
            return parse_wikipedia(hits, (await self._api.get(self._url, pages)).json(), self._wiki_base)
        except ValueError:
            raise self._api.malformed("MediaWiki JSON") from None
