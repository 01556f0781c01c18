"""One corpus search, by keywords and by meaning: what ``corpus_search``, ``./run.sh corpus search`` and the
web UI's search call.

Contract of ``search_corpus(index, query, k, embedder)``:
- when the index holds vectors of ``embedder``'s model, the query is embedded (on first use the model
  loads: about a second) and the search is hybrid (``Fts5Index.search(meaning=...)``), else it is by
  keywords alone; ``CorpusSearch.method`` says which (``hybrid`` or ``keywords``) and ``note`` says why
  meaning was not used, or that only part of the corpus is embedded yet (keyword search covers it all);
- an embedder that fails leaves the search to keywords, with the reason in ``note``; nothing raises but
  what the index raises.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from ..embeddings import Embedder, EmbeddingFailed
from .backend import Hit
from .fts5 import Fts5Index
from .locator import title_of, url_of

SearchMethod = Literal["hybrid", "keywords"]


@dataclass(frozen=True)
class CorpusSearch:
    hits: list[Hit]
    method: SearchMethod
    note: str = ""
    embed_ms: float = 0.0
    search_ms: float = 0.0


def meaning_note(index: Fts5Index, embedder: Embedder | None) -> tuple[bool, str]:
    """Whether the index can be searched by meaning with ``embedder``, and what a reader should know."""
    if embedder is None:
        return False, ""
    identity = index.vectors.identity()
    embedded, total = index.vectors.counts()
    if not identity or not embedded:
        return (
            False,
            f"corpus {index.name} is not embedded yet: searched by keywords only (run `./run.sh corpus reindex {index.name}`).",
        )
    if identity != embedder.identity:
        return False, (
            f"corpus {index.name} was embedded with {identity}, this server embeds with {embedder.identity}: searched by "
            f"keywords only until `./run.sh corpus reindex {index.name}`."
        )
    if embedded < total:
        return (
            True,
            f"corpus {index.name}: {embedded:,} of {total:,} passages embedded so far; keyword search covers all of them.",
        )
    return True, ""


def search_corpus(index: Fts5Index, query: str, k: int, embedder: Embedder | None) -> CorpusSearch:
    usable, note = meaning_note(index, embedder)
    embed_ms = 0.0
    vector = None
    if usable and embedder is not None:
        started = time.perf_counter()
        try:
            vector = embedder.embed_query(query)
        except EmbeddingFailed as exc:
            note = f"search by meaning failed ({exc}); searched by keywords only."
        embed_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    hits = index.search(query, k, meaning=vector)
    search_ms = (time.perf_counter() - started) * 1000
    return CorpusSearch(
        hits=hits,
        method="hybrid" if vector is not None else "keywords",
        note=note,
        embed_ms=embed_ms,
        search_ms=search_ms,
    )


def hits_json(search: CorpusSearch, corpus_title: str) -> list[dict[str, object]]:
    """The hits as a web client shows them: id, readable title, ``corpus://`` URL, score, snippet (query terms
    between ``**``), file, anchor and the passage's whole text."""
    return [
        {
            "id": hit.passage.id,
            "title": title_of(corpus_title, hit.passage),
            "url": url_of(hit.passage),
            "score": hit.score,
            "snippet": hit.snippet,
            "path": hit.passage.path,
            "anchor": hit.passage.anchor or (f"page={hit.passage.page}" if hit.passage.page else None),
            "text": hit.passage.text,
        }
        for hit in search.hits
    ]
