"""A user's knowledge base as entries in the LangGraph store: writing one, and finding the ones that answer a question.

Contract:
- an entry is one store item under the user's dataset namespace (``namespace.py``); its key is a digest of
  its source and text (remembering the same snippet twice keeps one entry) and its value is
  ``{text, source, remembered_at, run_id, thread_id}`` (and ``note`` for a report's finding) (``KnowledgeEntry``). The text is indexed for the
  store's vector search (``index=["text"]``), which a store without an embedding index ignores;
- ``MAX_ENTRY_CHARS`` (20,000) bounds one entry's text; ``KnowledgeBase.put`` does not check it, the tool does;
- ``KnowledgeBase.search(question)`` asks the store first with the question: a store with a vector index
  answers with scored items (``method="vector"``). A store without one ignores the query, so the entries are
  then ranked lexically (BM25 over their words, ``method="lexical"``) after reading the dataset page by page;
  ``scanned`` says how many entries were read, ``total`` 0 means the dataset is empty;
- every store error propagates to the caller, which classifies it.

Why BM25 here and not SQLite FTS5: the entries live in the LangGraph store (in memory under ``langgraph dev``,
Postgres in a deployment), which has no lexical search of its own; a second database beside it would hold a
copy that could drift from what operators list, export and delete.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.store.base import BaseStore, Item

from ..evidence.text import STOPWORDS

MAX_ENTRY_CHARS = 20_000
SearchMethod = Literal["vector", "lexical"]
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
        )

    def value(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "source": self.source,
            "remembered_at": self.remembered_at,
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            **({"note": self.note} if self.note else {}),
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
    """One user's dataset in ``store``."""

    def __init__(self, store: BaseStore, namespace: tuple[str, ...]) -> None:
        self.store = store
        self.namespace = namespace

    async def put(self, entry: KnowledgeEntry) -> None:
        await self.store.aput(self.namespace, entry.key, entry.value(), index=["text"])

    async def search(self, question: str, *, limit: int) -> Retrieval:
        first = await self.store.asearch(self.namespace, query=question, limit=limit)
        if first and all(item.score is not None for item in first):
            return Retrieval([KnowledgeEntry.of(item) for item in first], "vector", len(first))
        items = await self.all_items()
        return Retrieval(
            rank_lexically(question, [KnowledgeEntry.of(item) for item in items])[:limit], "lexical", len(items)
        )

    async def all_items(self) -> list[Item]:
        items: list[Item] = []
        while True:
            page = await self.store.asearch(self.namespace, limit=_PAGE, offset=len(items))
            items += page
            if len(page) < _PAGE:
                return items


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
