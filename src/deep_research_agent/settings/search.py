"""The search backends a run offers, resolved from ``search_backends`` and the backends' base URLs.

Contract of ``resolve_search_backends(values, warnings)`` (called by ``ResearchConfig.resolve`` on the
values read so far, which it updates in place):
- each base URL (``TAVILY_API_BASE_URL``, ``SEARXNG_URL``, ``ARXIV_API_URL``, ``WIKIPEDIA_API_URL``,
  ``PUBMED_API_URL``, ``OPENALEX_API_URL``) must be an http(s) URL with a host that is no link-local or metadata address (the URL
  policy, ``domain/url_policy.py``); a bad one warns and falls back to its default (for Tavily, its own; for
  SearXNG, none), its trailing slash dropped;
- ``search_backends`` keeps its order and drops, each with a warning that says why, a name that is not a
  backend, a repeat, and ``searxng`` while no ``SEARXNG_URL`` is set;
- empty (or emptied) it becomes one backend: tavily with a Tavily key, else searxng when ``SEARXNG_URL``
  is set, else keyless tavily.
"""

from __future__ import annotations

from typing import Any

from ..domain.search import SearchBackendName
from ..domain.url_policy import UrlPolicy

URL_SETTINGS = {
    "tavily_api_base_url": ("TAVILY_API_BASE_URL", ""),
    "searxng_url": ("SEARXNG_URL", ""),
    "arxiv_api_url": ("ARXIV_API_URL", "https://export.arxiv.org/api/query"),
    "wikipedia_api_url": ("WIKIPEDIA_API_URL", "https://en.wikipedia.org/w/api.php"),
    "pubmed_api_url": ("PUBMED_API_URL", "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"),
    "openalex_api_url": ("OPENALEX_API_URL", "https://api.openalex.org"),
}
# What an unusable URL without a default leaves.
_WITHOUT = {"tavily_api_base_url": "using Tavily's own", "searxng_url": "SearXNG is off"}
KNOWN = ", ".join(SearchBackendName)


# Operator settings only: http(s), never a link-local or metadata host (domain/url_policy.py).
SEARCH_APIS = UrlPolicy("search APIs")


def resolve_search_backends(values: dict[str, Any], warnings: list[str]) -> None:
    for name, (env, default) in URL_SETTINGS.items():
        url = str(values.get(name) or default).strip()
        if url and (problem := SEARCH_APIS.refusal(url)):
            fallback = f"using {default}" if default else _WITHOUT[name]
            warnings.append(f"{env}: {problem}; {fallback}.")
            url = default
        values[name] = url.rstrip("/")

    chosen: list[SearchBackendName] = []
    for raw in values.get("search_backends", ()):
        name = str(raw).strip().lower()
        if name not in set(SearchBackendName):
            warnings.append(f"search_backends: {raw!r} is not a search backend (known: {KNOWN}); left out.")
            continue
        backend = SearchBackendName(name)
        if backend in chosen:
            continue
        if backend == SearchBackendName.SEARXNG and not values["searxng_url"]:
            warnings.append("search_backends: searxng needs SEARXNG_URL (your instance's address); left out.")
            continue
        chosen.append(backend)
    if not chosen:
        if values.get("tavily_api_key") is None and values["searxng_url"]:
            chosen = [SearchBackendName.SEARXNG]
        else:
            chosen = [SearchBackendName.TAVILY]
    values["search_backends"] = tuple(str(b) for b in chosen)
