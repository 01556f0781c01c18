"""A user's knowledge base as entries in the LangGraph store: writing one, and finding the ones that answer a question.

Contract:
- an entry is one store item under the user's dataset namespace (``namespace.py``); its key is a digest of
  its source and text (remembering the same snippet twice keeps one entry) and its value is
  ``{text, source, remembered_at, run_id, thread_id}`` (and ``note`` for a report's finding) (``KnowledgeEntry``),
  plus, with an embedder, the text's ``vector`` (base64 float16) and the ``embedder`` that made it. The text is
  also indexed for the store's own vector search (``index=["text"]``), which a store without an embedding
  index ignores;
- ``MAX_ENTRY_CHARS`` (20,000) bounds one entry's text; ``KnowledgeBase.put`` does not check it, the tool does;
- ``KnowledgeBase.search(question)`` asks the store first with the question: a store with a vector index
  answers with scored items (``method="vector"``). A store without one ignores the query, so the dataset is
  read page by page and ranked here: lexically (BM25 over the words) and, with an embedder, by meaning too
  (the question's vector against each entry's stored one; an entry stored without a vector, or by another
  model, is embedded at query time, up to ``EMBED_AT_QUERY`` of them), the two rankings fused as corpus
  search fuses them (``method="hybrid"``, else ``"lexical"``). So an entry is found across runs by what it
  means, not only by the words it shares with the question. ``scanned`` says how many entries were read,
  ``total`` 0 means the dataset is empty;
- every store error propagates to the caller, which classifies it.

Why BM25 here and not SQLite FTS5: the entries live in the LangGraph store (in memory under ``langgraph dev``,
Postgres in a deployment), which has no lexical search of its own; a second database beside it would hold a
copy that could drift from what operators list, export and delete.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from langgraph.store.base import BaseStore, Item

from ..embeddings import Embedder, EmbeddingFailed, fuse, rank_by_meaning
from ..embeddings.vectors import from_text, to_text
from ..evidence.text import STOPWORDS

MAX_ENTRY_CHARS = 20_000
EMBED_AT_QUERY = 200
# Below this cosine an entry is not about the question (unrelated sentences score 0 to 0.2 with the bundled
# model, a paraphrase 0.4 and up), so a question nothing answers still finds nothing.
MEANING_FLOOR = 0.3
SearchMethod = Literal["vector", "lexical", "hybrid"]
_PAGE = 500
_WORD_RE = re.compile(r"\w+", re.UNICODE)
_K1, _B = 1.5, 0.75


@dataclass(frozen=True)
class KnowledgeEntry:
    key: str
    text: str
    source: str
    remembered_at: str
    run_id: str = ""
    thread_id: str = ""
    note: str = ""
    """What the entry was remembered for (a report's finding), shown beside it; never part of its evidence text."""
    score: float = 0.0
    vector: str = ""
    embedder: str = ""

    @classmethod
    def of(cls, item: Item, score: float | None = None) -> KnowledgeEntry:
        value = item.value
        return cls(
            key=item.key,
            text=str(value.get("text") or ""),
            source=str(value.get("source") or ""),
            remembered_at=str(value.get("remembered_at") or item.created_at.isoformat()),
            run_id=str(value.get("run_id") or ""),
            thread_id=str(value.get("thread_id") or ""),
            note=str(value.get("note") or ""),
            score=float(score if score is not None else item.score or 0.0),
            vector=str(value.get("vector") or ""),
            embedder=str(value.get("embedder") or ""),
        )

    def value(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "source": self.source,
            "remembered_at": self.remembered_at,
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            **({"note": self.note} if self.note else {}),
            **({"vector": self.vector, "embedder": self.embedder} if self.vector else {}),
        }


def entry_key(text: str, source: str) -> str:
    return "kb-" + hashlib.sha256(f"{source}\n{text}".encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Retrieval:
    entries: list[KnowledgeEntry]
    method: SearchMethod
    scanned: int

    @property
    def empty_dataset(self) -> bool:
        return self.method == "lexical" and self.scanned == 0


class KnowledgeBase:
    """One user's dataset in ``store``; ``embedder`` (optional) adds search by meaning."""

    def __init__(self, store: BaseStore, namespace: tuple[str, ...], *, embedder: Embedder | None = None) -> None:
        self.store = store
        self.namespace = namespace
        self.embedder = embedder

    async def put(self, entry: KnowledgeEntry) -> None:
        if self.embedder is not None and not entry.vector:
            try:
                vector = await asyncio.to_thread(self.embedder.embed_query, entry.text)
            except EmbeddingFailed:
                vector = None  # stored without: it is embedded when a query reads it
            if vector is not None:
                entry = KnowledgeEntry(
                    **{**entry.__dict__, "vector": to_text(vector), "embedder": self.embedder.identity}
                )
        await self.store.aput(self.namespace, entry.key, entry.value(), index=["text"])

    async def search(self, question: str, *, limit: int) -> Retrieval:
        first = await self.store.asearch(self.namespace, query=question, limit=limit)
        if first and all(item.score is not None for item in first):
            return Retrieval([KnowledgeEntry.of(item) for item in first], "vector", len(first))
        items = await self.all_items()
        entries = [KnowledgeEntry.of(item) for item in items]
        lexical = rank_lexically(question, entries)
        if self.embedder is not None and entries:
            try:
                meaning = await asyncio.to_thread(rank_by_vectors, question, entries, self.embedder)
            except EmbeddingFailed:
                meaning = []
            if meaning:
                by_key = {entry.key: entry for entry in entries}
                fused = fuse([(e.key, e.score) for e in lexical], [(e.key, e.score) for e in meaning], limit)
                ranked = [KnowledgeEntry(**{**by_key[key].__dict__, "score": round(score, 4)}) for key, score in fused]
                return Retrieval(ranked, "hybrid", len(items))
        return Retrieval(lexical[:limit], "lexical", len(items))

    async def all_items(self) -> list[Item]:
        items: list[Item] = []
        while True:
            page = await self.store.asearch(self.namespace, limit=_PAGE, offset=len(items))
            items += page
            if len(page) < _PAGE:
                return items


def rank_by_vectors(question: str, entries: Sequence[KnowledgeEntry], embedder: Embedder) -> list[KnowledgeEntry]:
    """``entries`` by the cosine of their vectors with the question's, best first; entries without a vector of
    ``embedder``'s model are embedded here, the first ``EMBED_AT_QUERY`` of them (the rest are left out); those
    under ``MEANING_FLOOR`` are left out."""
    stored = [e for e in entries if e.vector and e.embedder == embedder.identity]
    unembedded = [e for e in entries if not (e.vector and e.embedder == embedder.identity)][:EMBED_AT_QUERY]
    vectors = embedder.embed_documents([question, *(e.text for e in unembedded)])
    candidates = [*stored, *unembedded]
    if not candidates:
        return []
    matrix = np.vstack([*(from_text(e.vector) for e in stored), *vectors[1:]]) if stored else vectors[1:]
    return [
        KnowledgeEntry(**{**candidates[row].__dict__, "score": round(score, 4)})
        for row, score in rank_by_meaning(vectors[0], matrix, len(candidates))
        if score >= MEANING_FLOOR
    ]


def words(text: str) -> list[str]:
    return [w for w in _WORD_RE.findall(text.casefold()) if w not in STOPWORDS and (len(w) > 2 or w.isdigit())]


def rank_lexically(question: str, entries: Sequence[KnowledgeEntry]) -> list[KnowledgeEntry]:
    """``entries`` that share a word with ``question``, best BM25 score first (text and source both count)."""
    terms = set(words(question))
    if not terms or not entries:
        return []
    documents = [Counter(words(f"{entry.text} {entry.source}")) for entry in entries]
    average = sum(sum(doc.values()) for doc in documents) / len(documents) or 1.0
    frequency = Counter(term for doc in documents for term in terms if term in doc)
    scored = []
    for entry, doc in zip(entries, documents, strict=True):
        length = sum(doc.values())
        score = 0.0
        for term in terms & doc.keys():
            idf = math.log(1 + (len(documents) - frequency[term] + 0.5) / (frequency[term] + 0.5))
            tf = doc[term]
            score += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / average))
        if score > 0:
            scored.append(KnowledgeEntry(**{**entry.__dict__, "score": round(score, 4)}))
    return sorted(scored, key=lambda e: -e.score)
