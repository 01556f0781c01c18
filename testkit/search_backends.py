"""Stand-ins for the search backends beside Tavily, served by the web stand-in (``testkit/web.py``) on the
same loopback server and speaking each API's real wire format.

Routes (``base`` is the web stand-in's root URL; ``WebStandIn.backend_url(name)`` gives each setting's value):

``GET /searxng/search?q=…&format=json`` (``SEARXNG_URL`` = ``base/searxng``)
    SearXNG's JSON answer ``{query, number_of_results, results: [{url, title, content, engine, engines,
    publishedDate, score, category}], answers, corrections, infoboxes, suggestions, unresponsive_engines}``
    over the web stand-in's articles; 403 (as SearXNG sends it) without ``format=json``.
``GET /arxiv/api/query?search_query=…&start=0&max_results=N`` (``ARXIV_API_URL``)
    An Atom feed (opensearch totals, one ``entry`` per matching paper with ``id``, ``updated``,
    ``published``, ``title``, ``summary``, ``author/name``, ``arxiv:doi``, ``arxiv:journal_ref``, links to
    the abstract page and the PDF, ``arxiv:primary_category``); a query without a field prefix gets
    arXiv's error entry. ``GET /arxiv/abs/{id}`` is the abstract page (HTML), ``GET /arxiv/pdf/{id}`` the
    paper as a PDF holding its abstract.
``GET /wikipedia/w/api.php`` (``WIKIPEDIA_API_URL``)
    ``action=query&list=search`` → ``{batchcomplete, query: {searchinfo, search: [{ns, title, pageid,
    size, wordcount, snippet, timestamp}]}}`` (the snippet with ``<span class="searchmatch">``);
    ``prop=extracts|info&pageids=…`` → ``{query: {pages: [{pageid, ns, title, extract, fullurl, …}]}}``;
    the pages are the web stand-in's articles, their ``fullurl`` the article's URL.
``GET /pubmed/esearch.fcgi`` and ``GET /pubmed/efetch.fcgi`` (``PUBMED_API_URL`` = ``base/pubmed``)
    esearch's JSON ``{header, esearchresult: {count, retmax, retstart, idlist, translationset, querytranslation}}``
    and efetch's ``PubmedArticleSet`` XML (structured abstract, author list, journal, ArticleIdList).
``GET /openalex/works?search=…&per-page=N`` (``OPENALEX_API_URL`` = ``base/openalex``)
    ``{meta: {count, db_response_time_ms, page, per_page}, results: [work]}``, each work with ``id``,
    ``doi`` (a doi.org URL), ``display_name``, ``publication_year``, ``publication_date``, ``authorships``,
    ``primary_location.source.display_name``, ``best_oa_location`` and ``abstract_inverted_index``.

Switches: ``POST /_search/config`` ``{backend: {"replies": [REPLY, ...], "always": REPLY | null}}`` as
Tavily's (``REPLY`` is ``{"status": int, "retry_after": number | null}``; 429 and 503 carry ``Retry-After``);
``GET /_search/requests`` lists ``{backend, path, query}`` per API request; the web stand-in's reset clears both.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from html import escape
from typing import Any
from xml.sax.saxutils import escape as xml_escape

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

BACKEND_PATHS = {
    "searxng": "/searxng",
    "arxiv": "/arxiv/api/query",
    "wikipedia": "/wikipedia/w/api.php",
    "pubmed": "/pubmed",
    "openalex": "/openalex",
}


@dataclass(frozen=True)
class StandInPaper:
    key: str
    title: str
    authors: tuple[str, ...]
    year: int
    venue: str
    doi: str
    abstract: tuple[tuple[str, str], ...]  # (label, text) sections; an empty label for unstructured ones
    keywords: tuple[str, ...]
    arxiv_id: str = ""
    pmid: str = ""
    pmc: str = ""

    @property
    def abstract_text(self) -> str:
        return " ".join(f"{label}: {text}" if label else text for label, text in self.abstract)


PAPERS: dict[str, StandInPaper] = {
    p.key: p
    for p in (
        StandInPaper(
            key="ntb7",
            title="NTB-7: a sodium thioborate glass electrolyte for solid-state sodium cells",
            authors=("Sigrid Halvorsen", "Mira Okonkwo", "Lars Eide", "Ingrid Moe"),
            year=2024,
            venue="Solid State Ionics 412 (2024) 116512",
            doi="10.1016/j.ssi.2024.116512",
            abstract=(
                (
                    "",
                    "We report NTB-7, a sodium thioborate glass that conducts sodium ions at 3.1 mS/cm at room "
                    "temperature. Pouch cells built with it kept 80 percent of their capacity after 1,850 full "
                    "cycles at 25 degrees Celsius and reached 412 Wh/kg at the cell level.",
                ),
            ),
            keywords=("sodium", "glass", "electrolyte", "thioborate", "battery", "batteries", "solid-state", "ionic"),
            arxiv_id="2403.01234",
        ),
        StandInPaper(
            key="kelp",
            title="Audited carbon removal by a Baltic sugar kelp farm",
            authors=("Tomas Lindqvist", "Freja Holm"),
            year=2023,
            venue="Nature Climate Change",
            doi="10.1038/s41558-023-01811-4",
            abstract=(
                (
                    "",
                    "The 38-hectare Norre Bay farm sequestered 1,240 tonnes of carbon dioxide in 2023, as audited "
                    "by the Baltic Carbon Registry. Half of the harvest was sunk at 420 metres.",
                ),
            ),
            keywords=("kelp", "carbon", "seaweed", "sequestration", "removal", "ocean", "climate"),
        ),
        StandInPaper(
            key="statin",
            title="Low-dose statins and first cardiovascular events in adults over 75",
            authors=("Aino Virtanen", "Rahul Mehta", "Chen Wei", "Sara Lund", "Omar Haddad"),
            year=2023,
            venue="The Lancet",
            doi="10.1016/S0140-6736(23)01234-5",
            abstract=(
                ("BACKGROUND", "Whether statins prevent first events in the oldest adults is uncertain."),
                ("RESULTS", "Among 18,240 adults, low-dose statins cut first cardiovascular events by 21 percent."),
            ),
            keywords=("statin", "statins", "cardiovascular", "cholesterol", "elderly", "prevention"),
            pmid="38012345",
            pmc="PMC10701234",
        ),
    )
}


def matching(query: str, keywords_of: Any, items: Any) -> list[Any]:
    """``items`` with at least one query word among their keywords or title words, best first."""
    words = set(re.findall(r"[a-z0-9\-]+", query.lower()))
    scored = []
    for item in items:
        vocabulary = set(keywords_of(item))
        hits = len(words & vocabulary)
        if hits:
            scored.append((hits, item))
    scored.sort(key=lambda pair: -pair[0])
    return [item for _, item in scored]


def _paper_words(paper: StandInPaper) -> set[str]:
    return set(paper.keywords) | set(re.findall(r"[a-z0-9\-]+", paper.title.lower()))


@dataclass
class SearchState:
    config: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.config.clear()
            self.requests.clear()

    def reply(self, backend: str, request: Request) -> Response | None:
        """The configured failure for this request, or None for a normal answer; logs the request."""
        with self.lock:
            self.requests.append({"backend": backend, "path": request.url.path, "query": dict(request.query_params)})
            switch = self.config.get(backend) or {}
            replies = switch.get("replies") or []
            reply = replies.pop(0) if replies else dict(switch.get("always") or {})
        status = int(reply.get("status", 200))
        if status == 200:
            return None
        retry_after = reply.get("retry_after")
        headers = {"Retry-After": str(retry_after)} if status in (429, 503) and retry_after is not None else {}
        return Response(f"stand-in {backend} error {status}", status_code=status, headers=headers)


def _articles() -> list[Any]:
    from testkit.web import ARTICLES

    return [a for a in ARTICLES.values() if a.slug != "long"]


def _article_words(article: Any) -> set[str]:
    return set(article.keywords) | set(re.findall(r"[a-z0-9]+", article.title.lower()))


def _root(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}"


# --- SearXNG ------------------------------------------------------------------------------------------------


def _searxng(state: SearchState) -> Route:
    async def search(request: Request) -> Response:
        if failure := state.reply("searxng", request):
            return failure
        if request.query_params.get("format") != "json":
            return HTMLResponse("<h1>403 Forbidden</h1>", status_code=403)
        query = request.query_params.get("q", "")
        found = matching(query, _article_words, _articles())
        results = [
            {
                "url": _root(request) + article.path,
                "title": article.title,
                "content": article.snippet,
                "engine": "duckduckgo",
                "engines": ["duckduckgo", "brave"],
                "positions": [n],
                "publishedDate": f"{article.date}T00:00:00",
                "score": round(2.0 / n, 3),
                "category": "general",
                "parsed_url": ["http", request.url.netloc, article.path, "", "", ""],
                "template": "default.html",
            }
            for n, article in enumerate(found, 1)
        ]
        return JSONResponse(
            {
                "query": query,
                "number_of_results": len(results),
                "results": results,
                "answers": [],
                "corrections": [],
                "infoboxes": [],
                "suggestions": [],
                "unresponsive_engines": [],
            }
        )

    return Route("/searxng/search", search)


# --- arXiv --------------------------------------------------------------------------------------------------

_ATOM_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
    'xmlns:arxiv="http://arxiv.org/schemas/atom">\n'
)


def arxiv_feed(root: str, papers: list[StandInPaper], query: str) -> str:
    entries = []
    for paper in papers:
        abs_url = f"{root}/arxiv/abs/{paper.arxiv_id}v1"
        authors = "".join(f"<author><name>{xml_escape(a)}</name></author>" for a in paper.authors)
        entries.append(
            f"""<entry>
<id>{abs_url}</id>
<updated>{paper.year}-03-05T18:00:00Z</updated>
<published>{paper.year}-03-02T12:30:00Z</published>
<title>{xml_escape(paper.title)}</title>
<summary>  {xml_escape(paper.abstract_text)}
</summary>
{authors}
<arxiv:doi>{xml_escape(paper.doi)}</arxiv:doi>
<link title="doi" href="https://doi.org/{xml_escape(paper.doi)}" rel="related"/>
<arxiv:comment>12 pages, 5 figures</arxiv:comment>
<arxiv:journal_ref>{xml_escape(paper.venue)}</arxiv:journal_ref>
<link href="{abs_url}" rel="alternate" type="text/html"/>
<link title="pdf" href="{root}/arxiv/pdf/{paper.arxiv_id}v1" rel="related" type="application/pdf"/>
<arxiv:primary_category term="cond-mat.mtrl-sci" scheme="http://arxiv.org/schemas/atom"/>
<category term="cond-mat.mtrl-sci" scheme="http://arxiv.org/schemas/atom"/>
</entry>"""
        )
    return (
        _ATOM_HEAD
        + f'<link href="{root}/arxiv/api/query" rel="self" type="application/atom+xml"/>\n'
        + f"<title>arXiv Query: {xml_escape(query)}</title>\n<id>http://arxiv.org/api/stand-in</id>\n"
        + "<updated>2026-11-30T00:00:00-05:00</updated>\n"
        + f"<opensearch:totalResults>{len(papers)}</opensearch:totalResults>\n"
        + "<opensearch:startIndex>0</opensearch:startIndex>\n"
        + f"<opensearch:itemsPerPage>{len(papers)}</opensearch:itemsPerPage>\n"
        + "\n".join(entries)
        + "\n</feed>\n"
    )


def arxiv_error_feed(message: str) -> str:
    return (
        _ATOM_HEAD
        + "<title>arXiv Query: error</title>\n<id>http://arxiv.org/api/errors</id>\n"
        + "<opensearch:totalResults>1</opensearch:totalResults>\n"
        + "<entry><id>http://arxiv.org/api/errors#incorrect_query</id><title>Error</title>"
        + f"<summary>{xml_escape(message)}</summary></entry>\n</feed>\n"
    )


def _arxiv(state: SearchState) -> list[Route]:
    async def query(request: Request) -> Response:
        if failure := state.reply("arxiv", request):
            return failure
        search_query = request.query_params.get("search_query", "")
        if not re.search(r"\b(?:all|ti|abs|au|cat):", search_query):
            body = arxiv_error_feed("incorrect query: search_query needs a field prefix such as all:")
            return Response(body, media_type="application/atom+xml")
        terms = " ".join(re.sub(r"\b(?:all|ti|abs|au|cat):", " ", search_query).replace(" AND ", " ").split())
        limit = int(request.query_params.get("max_results", "10"))
        papers = matching(terms, _paper_words, [p for p in PAPERS.values() if p.arxiv_id])[:limit]
        return Response(arxiv_feed(_root(request), papers, search_query), media_type="application/atom+xml")

    def _paper(request: Request) -> StandInPaper | None:
        wanted = re.sub(r"v\d+$", "", request.path_params["id"])
        return next((p for p in PAPERS.values() if p.arxiv_id == wanted), None)

    async def abstract_page(request: Request) -> Response:
        paper = _paper(request)
        if paper is None:
            return HTMLResponse("<h1>Article not found</h1>", status_code=404)
        return HTMLResponse(
            f"""<!DOCTYPE html><html><head><title>[{paper.arxiv_id}] {escape(paper.title)}</title>
<meta name="citation_title" content="{escape(paper.title)}">
<meta name="citation_doi" content="{escape(paper.doi)}"></head>
<body><main><article><h1 class="title">{escape(paper.title)}</h1>
<div class="authors">{escape(", ".join(paper.authors))}</div>
<blockquote class="abstract"><p>{escape(paper.abstract_text)}</p></blockquote>
<p>Journal reference: {escape(paper.venue)}. DOI: {escape(paper.doi)}</p></article></main></body></html>"""
        )

    async def pdf(request: Request) -> Response:
        from testkit.web import make_pdf

        paper = _paper(request)
        if paper is None:
            return HTMLResponse("<h1>Article not found</h1>", status_code=404)
        sentences = [s.strip() + "." for s in paper.abstract_text.split(". ") if s.strip()]
        pages = ((paper.title, ", ".join(paper.authors)), tuple(s.rstrip(".") + "." for s in sentences))
        return Response(make_pdf(pages, paper.title), media_type="application/pdf")

    return [
        Route("/arxiv/api/query", query),
        Route("/arxiv/abs/{id}", abstract_page),
        Route("/arxiv/pdf/{id}", pdf),
    ]


# --- Wikipedia ----------------------------------------------------------------------------------------------


def _wikipedia(state: SearchState) -> Route:
    async def api(request: Request) -> Response:
        if failure := state.reply("wikipedia", request):
            return failure
        params = request.query_params
        articles = _articles()
        ids = {article.slug: 1000 + n for n, article in enumerate(articles)}
        if params.get("action") != "query":
            return JSONResponse({"error": {"code": "badvalue", "info": 'Unrecognized value for parameter "action".'}})
        if params.get("list") == "search":
            query = params.get("srsearch", "")
            limit = int(params.get("srlimit", "10"))
            found = matching(query, _article_words, articles)[:limit]
            words = [w for w in query.split() if w]
            hits = []
            for article in found:
                snippet = escape(article.paragraphs[0][:160])
                for word in words:
                    snippet = re.sub(rf"(?i)\b({re.escape(word)})\b", r'<span class="searchmatch">\1</span>', snippet)
                hits.append(
                    {
                        "ns": 0,
                        "title": article.title,
                        "pageid": ids[article.slug],
                        "size": 4000,
                        "wordcount": 600,
                        "snippet": snippet,
                        "timestamp": f"{article.date}T10:00:00Z",
                    }
                )
            return JSONResponse(
                {
                    "batchcomplete": True,
                    "continue": {"sroffset": len(hits), "continue": "-||"},
                    "query": {"searchinfo": {"totalhits": len(hits)}, "search": hits},
                }
            )
        wanted = {int(i) for i in params.get("pageids", "").split("|") if i.isdigit()}
        pages = [
            {
                "pageid": ids[article.slug],
                "ns": 0,
                "title": article.title,
                "extract": "\n".join(article.paragraphs),
                "contentmodel": "wikitext",
                "pagelanguage": "en",
                "touched": f"{article.date}T10:00:00Z",
                "fullurl": _root(request) + article.path,
                "canonicalurl": _root(request) + article.path,
            }
            for article in articles
            if ids[article.slug] in wanted
        ]
        return JSONResponse({"batchcomplete": True, "query": {"pages": pages}})

    return Route("/wikipedia/w/api.php", api)


# --- PubMed -------------------------------------------------------------------------------------------------


def efetch_xml(papers: list[StandInPaper]) -> str:
    articles = []
    for paper in papers:
        authors = "".join(
            f'<Author ValidYN="Y"><LastName>{xml_escape(name.split()[-1])}</LastName>'
            f"<ForeName>{xml_escape(' '.join(name.split()[:-1]))}</ForeName>"
            f"<Initials>{name[0]}</Initials></Author>"
            for name in paper.authors
        )
        sections = "".join(
            (f'<AbstractText Label="{label}" NlmCategory="{label}">' if label else "<AbstractText>")
            + f"{xml_escape(text)}</AbstractText>"
            for label, text in paper.abstract
        )
        articles.append(
            f"""<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM">
<PMID Version="1">{paper.pmid}</PMID>
<Article PubModel="Print-Electronic">
<Journal><ISSN IssnType="Electronic">1474-547X</ISSN><JournalIssue CitedMedium="Internet"><Volume>402</Volume>
<PubDate><Year>{paper.year}</Year><Month>Dec</Month></PubDate></JournalIssue>
<Title>{xml_escape(paper.venue)}</Title><ISOAbbreviation>Lancet</ISOAbbreviation></Journal>
<ArticleTitle>{xml_escape(paper.title)}</ArticleTitle>
<ELocationID EIdType="doi" ValidYN="Y">{xml_escape(paper.doi)}</ELocationID>
<Abstract>{sections}</Abstract>
<AuthorList CompleteYN="Y">{authors}</AuthorList>
<Language>eng</Language></Article></MedlineCitation>
<PubmedData><PublicationStatus>ppublish</PublicationStatus><ArticleIdList>
<ArticleId IdType="pubmed">{paper.pmid}</ArticleId><ArticleId IdType="doi">{xml_escape(paper.doi)}</ArticleId>
<ArticleId IdType="pmc">{paper.pmc}</ArticleId></ArticleIdList></PubmedData></PubmedArticle>"""
        )
    return (
        '<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" '
        '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">\n<PubmedArticleSet>\n'
        + "\n".join(articles)
        + "\n</PubmedArticleSet>\n"
    )


def _pubmed(state: SearchState) -> list[Route]:
    with_pmid = [p for p in PAPERS.values() if p.pmid]

    async def esearch(request: Request) -> Response:
        if failure := state.reply("pubmed", request):
            return failure
        term = request.query_params.get("term", "")
        limit = int(request.query_params.get("retmax", "20"))
        found = matching(term, _paper_words, with_pmid)[:limit]
        return JSONResponse(
            {
                "header": {"type": "esearch", "version": "0.3"},
                "esearchresult": {
                    "count": str(len(found)),
                    "retmax": str(len(found)),
                    "retstart": "0",
                    "idlist": [p.pmid for p in found],
                    "translationset": [],
                    "querytranslation": term,
                },
            }
        )

    async def efetch(request: Request) -> Response:
        if failure := state.reply("pubmed", request):
            return failure
        ids = request.query_params.get("id", "").split(",")
        papers = [p for p in with_pmid if p.pmid in ids]
        return Response(efetch_xml(papers), media_type="text/xml")

    return [Route("/pubmed/esearch.fcgi", esearch), Route("/pubmed/efetch.fcgi", efetch)]


# --- OpenAlex -----------------------------------------------------------------------------------------------


def inverted_index(text: str) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for position, word in enumerate(text.split()):
        index.setdefault(word, []).append(position)
    return index


def openalex_work(paper: StandInPaper, n: int) -> dict[str, Any]:
    return {
        "id": f"https://openalex.org/W40{n:08d}",
        "doi": f"https://doi.org/{paper.doi}",
        "title": paper.title,
        "display_name": paper.title,
        "relevance_score": round(100.0 / n, 2),
        "publication_year": paper.year,
        "publication_date": f"{paper.year}-03-02",
        "type": "article",
        "authorships": [
            {"author_position": "first" if i == 0 else "middle", "author": {"id": f"A{i}", "display_name": name}}
            for i, name in enumerate(paper.authors)
        ],
        "primary_location": {
            "is_oa": True,
            "landing_page_url": f"https://doi.org/{paper.doi}",
            "source": {"id": "https://openalex.org/S1", "display_name": paper.venue, "type": "journal"},
        },
        "best_oa_location": None,
        "open_access": {"is_oa": False, "oa_status": "closed", "oa_url": None},
        "cited_by_count": 12,
        "abstract_inverted_index": inverted_index(paper.abstract_text),
    }


def _openalex(state: SearchState) -> Route:
    async def works(request: Request) -> Response:
        if failure := state.reply("openalex", request):
            return failure
        query = request.query_params.get("search", "")
        limit = int(request.query_params.get("per-page", "25"))
        found = matching(query, _paper_words, list(PAPERS.values()))[:limit]
        return JSONResponse(
            {
                "meta": {"count": len(found), "db_response_time_ms": 12, "page": 1, "per_page": limit},
                "results": [openalex_work(paper, n) for n, paper in enumerate(found, 1)],
                "group_by": [],
            }
        )

    return Route("/openalex/works", works)


def search_backend_routes(state: SearchState) -> list[Route]:
    async def configure(request: Request) -> Response:
        body = await request.json()
        with state.lock:
            state.config = {name: dict(switch) for name, switch in body.items()}
        return JSONResponse({"ok": True})

    async def requests_log(_: Request) -> Response:
        with state.lock:
            return JSONResponse(list(state.requests))

    return [
        _searxng(state),
        *_arxiv(state),
        _wikipedia(state),
        *_pubmed(state),
        _openalex(state),
        Route("/_search/config", configure, methods=["POST"]),
        Route("/_search/requests", requests_log),
    ]
