"""One search's events, the same for the web and for a local corpus: ``search_query`` when it starts, then one
``search_results`` with its hits or its failure.

Contract: ``SearchEvents(query, source)`` emits ``search_query`` under a fresh id; ``found(hits)`` or
``failed(message)`` emits that search's single ``search_results``. A hit's snippet is flattened to one line
and cut to ``SNIPPET_CHARS`` for the event (the model's result keeps its own text).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from ..protocol.events import SearchHit, SearchQuery, SearchResults, emit

SNIPPET_CHARS = 300


def event_snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1].rstrip() + "…"


class SearchEvents:
    """The events of one search: announced on creation, answered once."""

    def __init__(self, query: str, source: str) -> None:
        self.id = f"search-{uuid.uuid4().hex[:12]}"
        self.query = query
        emit(SearchQuery(id=self.id, query=query, source=source))

    def found(self, hits: Iterable[tuple[str, str, str, str]]) -> None:
        """The hits as (title, url, domain, snippet); the snippet is cut for the event."""
        results = [
            SearchHit(title=title, url=url, domain=domain, snippet=event_snippet(snippet))
            for title, url, domain, snippet in hits
        ]
        emit(SearchResults(id=self.id, query=self.query, ok=True, count=len(results), results=results))

    def failed(self, message: str) -> None:
        emit(SearchResults(id=self.id, query=self.query, ok=False, count=0, error=message))
