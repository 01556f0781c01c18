"""arXiv: preprints through the arXiv API, whose answer is an Atom feed.

Contract: ``ArxivBackend(api_url, timeout_s, contact)`` GETs ``<api_url>?search_query=…&max_results=N``. A
query that already uses arXiv's field prefixes (``ti:``, ``au:``, ``abs:``, ``cat:``, ``all:``…) is sent
as it is; otherwise each word must appear (``all:w1 AND all:w2``). Each ``entry`` becomes a paper: its
abstract page (``link rel=alternate``) as the URL, the PDF link, authors, ``published`` year, the
journal reference as venue (else "arXiv"), and the DOI the entry names, else arXiv's own DataCite DOI
(``10.48550/arXiv.<id>``). arXiv reports a bad query as a feed with one error entry; that is a
permanent failure with arXiv's message.

The stdlib parser reads the feed (expat refuses external entities and bounds expansion): feedparser is
not a dependency and would drop arXiv's own namespace (DOI, journal reference).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ...domain.errors import ToolFailure
from ...domain.search import Paper, SearchBackendName, SearchResult, bare_doi
from .base import HttpApi

_NS = {"a": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom"}
_FIELD_QUERY = re.compile(r"\b(?:ti|au|abs|co|jr|cat|rn|id|all):", re.IGNORECASE)
_WORD = re.compile(r"[\w.\-]+")


def arxiv_query(query: str) -> str:
    if _FIELD_QUERY.search(query):
        return query
    return " AND ".join(f"all:{word}" for word in _WORD.findall(query)) or query


def _text(element: ET.Element | None) -> str:
    return " ".join((element.text or "").split()) if element is not None else ""


def parse_arxiv(xml: bytes) -> list[SearchResult]:
    """The feed's entries as papers; raises ``ValueError`` for a feed that is not Atom, ``ToolFailure`` for
    arXiv's error entry."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(str(exc)) from None
    if root.tag != f"{{{_NS['a']}}}feed":
        raise ValueError("not an Atom feed")
    hits = []
    for entry in root.findall("a:entry", _NS):
        entry_id = _text(entry.find("a:id", _NS))
        if "/api/errors" in entry_id:
            message = _text(entry.find("a:summary", _NS)) or "arXiv reported an error"
            raise ToolFailure.permanent(f"arXiv rejected the query: {message}. Fix the query before searching again.")
        links = entry.findall("a:link", _NS)
        page = next((link.get("href", "") for link in links if link.get("rel") == "alternate"), "") or entry_id
        pdf = next((link.get("href", "") for link in links if link.get("title") == "pdf"), "")
        published = _text(entry.find("a:published", _NS))
        short_id = re.sub(r"v\d+$", "", entry_id.rsplit("/abs/", 1)[-1])
        doi = bare_doi(_text(entry.find("arxiv:doi", _NS))) or (f"10.48550/arXiv.{short_id}" if short_id else "")
        abstract = _text(entry.find("a:summary", _NS))
        paper = Paper(
            authors=tuple(_text(a.find("a:name", _NS)) for a in entry.findall("a:author", _NS)),
            venue=_text(entry.find("arxiv:journal_ref", _NS)) or "arXiv",
            year=int(published[:4]) if published[:4].isdigit() else None,
            doi=doi,
            abstract=abstract,
            full_text_url=pdf,
        )
        hits.append(
            SearchResult(
                title=_text(entry.find("a:title", _NS)),
                url=page,
                snippet=abstract,
                date=published[:10],
                backend=SearchBackendName.ARXIV,
                paper=paper,
            )
        )
    return hits


class ArxivBackend:
    name = SearchBackendName.ARXIV
    label = "arXiv"
    good_for = "preprints: physics, maths, CS, quantitative biology"

    def __init__(self, api_url: str, *, timeout_s: float, contact: str = "") -> None:
        self._url = api_url
        self._api = HttpApi(self.label, setting="ARXIV_API_URL", timeout_s=timeout_s, contact=contact)

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        params = {"search_query": arxiv_query(query), "start": 0, "max_results": max_results}
        response = await self._api.get(self._url, params)
        try:
            return parse_arxiv(response.content)
        except ValueError:
            raise self._api.malformed("an arXiv Atom feed") from None
