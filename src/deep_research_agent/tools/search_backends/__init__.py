"""The search backends ``web_search`` can ask, one module each, all handing back ``domain.search.SearchResult``:
``tavily`` (the web, the default), ``searxng`` (the web through the user's own metasearch), ``arxiv``,
``pubmed`` and ``openalex`` (papers, with authors, venue, year, DOI and abstract) and ``wikipedia``.

``build_backends(settings, timeout_s)`` makes the run's configured backends (``settings.search_backends``,
already resolved and checked by ``settings/search.py``) in their order, the first the default.
"""

from __future__ import annotations

from ...domain.search import SearchBackendName
from ...settings.features import SearchSettings
from .arxiv import ArxivBackend
from .base import SearchBackend
from .openalex import OpenalexBackend
from .pubmed import PubmedBackend
from .searxng import SearxngBackend
from .tavily import TavilyBackend
from .wikipedia import WikipediaBackend

__all__ = ["SearchBackend", "TavilyBackend", "build_backends"]


def build_backends(settings: SearchSettings, *, timeout_s: float) -> list[SearchBackend]:
    contact = settings.search_contact_email
    makers = {
        SearchBackendName.TAVILY: lambda: TavilyBackend(
            settings.tavily_api_key.get_secret_value() if settings.tavily_api_key else "",
            settings.tavily_api_base_url or "",
            timeout_s=timeout_s,
        ),
        SearchBackendName.SEARXNG: lambda: SearxngBackend(settings.searxng_url, timeout_s=timeout_s),
        SearchBackendName.ARXIV: lambda: ArxivBackend(settings.arxiv_api_url, timeout_s=timeout_s, contact=contact),
        SearchBackendName.WIKIPEDIA: lambda: WikipediaBackend(
            settings.wikipedia_api_url, timeout_s=timeout_s, contact=contact
        ),
        SearchBackendName.PUBMED: lambda: PubmedBackend(settings.pubmed_api_url, timeout_s=timeout_s, contact=contact),
        SearchBackendName.OPENALEX: lambda: OpenalexBackend(
            settings.openalex_api_url, timeout_s=timeout_s, contact=contact
        ),
    }
    return [makers[SearchBackendName(name)]() for name in settings.search_backends]
