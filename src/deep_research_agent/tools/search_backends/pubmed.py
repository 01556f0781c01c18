"""PubMed: biomedical literature through NCBI's E-utilities, ``esearch`` (JSON) for the ids, then ``efetch``
(PubMed XML) for each article's title, authors, journal, year, DOI and abstract.

Contract: ``PubmedBackend(api_url, timeout_s, contact)`` sends ``tool`` and, when set, ``email`` (NCBI asks
for both). A hit's URL is its PubMed page (``https://pubmed.ncbi.nlm.nih.gov/<PMID>/``), its full text the
PubMed Central article when efetch names one. ``esearch`` reports a bad term in ``esearchresult.ERROR``
with HTTP 200; that is a permanent failure. efetch's XML is read with the stdlib parser.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from ...domain.errors import ToolFailure
from ...domain.search import Paper, SearchBackendName, SearchResult, bare_doi
from .base import HttpApi

PUBMED_PAGE = "https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
PMC_PAGE = "https://pmc.ncbi.nlm.nih.gov/articles/{pmc}/"
TOOL = "deep-research-agent"


def esearch_ids(payload: Any) -> list[str]:
    result = payload.get("esearchresult") if isinstance(payload, dict) else None
    if not isinstance(result, dict):
        raise ValueError("no esearchresult")
    if result.get("ERROR"):
        raise ToolFailure.permanent(
            f"PubMed rejected the query: {result['ERROR']}. Fix the query before searching again."
        )
    return [str(pmid) for pmid in result.get("idlist") or []]


def _all_text(element: ET.Element | None) -> str:
    return " ".join("".join(element.itertext()).split()) if element is not None else ""


def _author(author: ET.Element) -> str:
    collective = _all_text(author.find("CollectiveName"))
    if collective:
        return collective
    return " ".join(p for p in (_all_text(author.find("ForeName")), _all_text(author.find("LastName"))) if p)


def _year(article: ET.Element) -> int | None:
    for path in ("Journal/JournalIssue/PubDate/Year", "ArticleDate/Year"):
        text = _all_text(article.find(path))
        if text.isdigit():
            return int(text)
    medline = _all_text(article.find("Journal/JournalIssue/PubDate/MedlineDate"))
    return int(medline[:4]) if medline[:4].isdigit() else None


def parse_efetch(xml: bytes, order: list[str]) -> list[SearchResult]:
    """efetch's ``PubmedArticleSet`` as papers, in ``order`` (esearch's ranking)."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(str(exc)) from None
    if root.tag != "PubmedArticleSet":
        raise ValueError("not a PubmedArticleSet")
    found: dict[str, SearchResult] = {}
    for item in root.findall("PubmedArticle"):
        pmid = _all_text(item.find("MedlineCitation/PMID"))
        article = item.find("MedlineCitation/Article")
        if not pmid or article is None:
            continue
        ids = {
            (node.get("IdType") or ""): _all_text(node) for node in item.findall("PubmedData/ArticleIdList/ArticleId")
        }
        sections = []
        for part in article.findall("Abstract/AbstractText"):
            text = _all_text(part)
            label = part.get("Label")
            sections.append(f"{label}: {text}" if label and text else text)
        abstract = " ".join(s for s in sections if s)
        year = _year(article)
        paper = Paper(
            authors=tuple(name for a in article.findall("AuthorList/Author") if (name := _author(a))),
            venue=_all_text(article.find("Journal/Title")) or _all_text(article.find("Journal/ISOAbbreviation")),
            year=year,
            doi=bare_doi(ids.get("doi", ""))
            or next((bare_doi(_all_text(e)) for e in article.findall("ELocationID") if e.get("EIdType") == "doi"), ""),
            abstract=abstract,
            full_text_url=PMC_PAGE.format(pmc=ids["pmc"]) if ids.get("pmc") else "",
        )
        found[pmid] = SearchResult(
            title=_all_text(article.find("ArticleTitle")),
            url=PUBMED_PAGE.format(pmid=pmid),
            snippet=abstract,
            date=str(year or ""),
            backend=SearchBackendName.PUBMED,
            paper=paper,
        )
    return [found[pmid] for pmid in order if pmid in found]


class PubmedBackend:
    name = SearchBackendName.PUBMED
    label = "PubMed"
    good_for = "biomedical and life-science papers"

    def __init__(self, api_url: str, *, timeout_s: float, contact: str = "") -> None:
        self._base = api_url
        self._identity = {"tool": TOOL, **({"email": contact} if contact else {})}
        self._api = HttpApi(self.label, setting="PUBMED_API_URL", timeout_s=timeout_s, contact=contact)

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        term = {"db": "pubmed", "term": query, "retmax": max_results, "retmode": "json", **self._identity}
        try:
            ids = esearch_ids((await self._api.get(f"{self._base}/esearch.fcgi", term)).json())
            if not ids:
                return []
            fetch = {"db": "pubmed", "id": ",".join(ids), "retmode": "xml", **self._identity}
            return parse_efetch((await self._api.get(f"{self._base}/efetch.fcgi", fetch)).content, ids)
        except ValueError:
            raise self._api.malformed("E-utilities JSON and PubMed XML") from None
