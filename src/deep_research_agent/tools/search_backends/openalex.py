"""OpenAlex: scholarly works of every field through its ``/works`` search, with DOI, venue and abstract.

Contract: ``OpenalexBackend(api_url, timeout_s, contact)`` GETs ``<api_url>/works?search=…&per-page=N``,
with ``mailto`` when a contact is set (OpenAlex's polite pool). A work's URL is its DOI link, else its
landing page, else its OpenAlex id; its abstract is rebuilt from ``abstract_inverted_index`` (each word
at its positions); its full text is the open-access PDF or URL when there is one.
"""

from __future__ import annotations

from typing import Any

from ...domain.search import Paper, SearchBackendName, SearchResult, bare_doi
from .base import HttpApi


def abstract_text(inverted: Any) -> str:
    """The abstract an ``abstract_inverted_index`` ({word: [positions]}) encodes."""
    if not isinstance(inverted, dict):
        return ""
    at: dict[int, str] = {}
    for word, positions in inverted.items():
        for position in positions if isinstance(positions, list) else ():
            if isinstance(position, int):
                at[position] = str(word)
    return " ".join(at[i] for i in sorted(at))


def _get(mapping: Any, *path: str) -> Any:
    for key in path:
        mapping = mapping.get(key) if isinstance(mapping, dict) else None
    return mapping


def parse_openalex(payload: Any) -> list[SearchResult]:
    results = _get(payload, "results")
    if not isinstance(results, list):
        raise ValueError("no results list")
    hits = []
    for work in results:
        if not isinstance(work, dict):
            continue
        doi = bare_doi(str(work.get("doi") or ""))
        url = (f"https://doi.org/{doi}" if doi else "") or str(
            _get(work, "primary_location", "landing_page_url") or work.get("id") or ""
        )
        if not url:
            continue
        abstract = abstract_text(work.get("abstract_inverted_index"))
        year = work.get("publication_year")
        paper = Paper(
            authors=tuple(
                str(name)
                for authorship in work.get("authorships") or []
                if (name := _get(authorship, "author", "display_name"))
            ),
            venue=str(_get(work, "primary_location", "source", "display_name") or ""),
            year=year if isinstance(year, int) else None,
            doi=doi,
            abstract=abstract,
            full_text_url=str(_get(work, "best_oa_location", "pdf_url") or _get(work, "open_access", "oa_url") or ""),
        )
        hits.append(
            SearchResult(
                title=" ".join(str(work.get("display_name") or work.get("title") or "").split()),
                url=url,
                snippet=abstract,
                date=str(work.get("publication_date") or year or ""),
                backend=SearchBackendName.OPENALEX,
                paper=paper,
            )
        )
    return hits


class OpenalexBackend:
    name = SearchBackendName.OPENALEX
    label = "OpenAlex"
    good_for = "scholarly works of every field, with DOI"

    def __init__(self, api_url: str, *, timeout_s: float, contact: str = "") -> None:
        self._url = f"{api_url}/works"
        self._mailto = {"mailto": contact} if contact else {}
        self._api = HttpApi(self.label, setting="OPENALEX_API_URL", timeout_s=timeout_s, contact=contact)

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        params = {"search": query, "per-page": max_results, **self._mailto}
        try:
            return parse_openalex((await self._api.get(self._url, params)).json())
        except ValueError:
            raise self._api.malformed("OpenAlex JSON") from None
