"""Search by meaning: the fusion of a keyword and a meaning ranking, a document's passages ranked for a
query, the vectors beside a corpus index (incremental, dropped with their file, re-embedded for another
model), hybrid corpus search, and the knowledge base's recall by meaning. A small deterministic embedder
stands in for the model here (a bag of word classes); ``test_bundled_model_*`` runs the real one."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from langgraph.store.memory import InMemoryStore

from deep_research_agent.corpora.fts5 import Fts5Index
from deep_research_agent.corpora.indexer import index_corpus
from deep_research_agent.corpora.search import search_corpus
from deep_research_agent.corpora.vectors import embed_passages
from deep_research_agent.embeddings import EmbeddingFailed, embedder_for, embedding_problem, fuse, rank_passages
from deep_research_agent.embeddings.bundled import BundledEmbedder
from deep_research_agent.embeddings.embedder import unit_rows
from deep_research_agent.knowledge.base import KnowledgeBase, KnowledgeEntry, entry_key
from deep_research_agent.settings import EmbeddingSettings, ResearchConfig
from deep_research_agent.settings.corpora import CorpusSpec
from testkit import corpus as fixture

# Words that mean the same thing share a dimension, as a real model places paraphrases near each other.
CLASSES = [
    {"instrument", "gauge", "sensor"},
    {"off", "down", "powered", "switched", "dormant"},
    {"adjusted", "recalibrated", "calibrate", "anew"},
    {"harvest", "harvested", "tonnes"},
    {"memory", "megabytes", "buffer"},
]


class WordClassEmbedder:
    """Deterministic stand-in: one dimension per class of synonyms, one per hashed other word."""

    def __init__(self, identity: str = "word-classes/64", fail: bool = False) -> None:
        self.identity = identity
        self.fail = fail
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail:
            raise EmbeddingFailed("the stand-in is down")
        self.calls += 1
        rows = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().replace("?", " ").replace(".", " ").split():
                found = next((n for n, words in enumerate(CLASSES) if word in words), None)
                column = found if found is not None else 8 + int(hashlib.sha1(word.encode()).hexdigest(), 16) % 56
                rows[row, column] += 3.0 if found is not None else 0.2
        return unit_rows(rows)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def test_fusion_puts_a_passage_high_in_both_rankings_first_and_keeps_a_standout_keyword_hit_on_top():
    standout = fuse([("exact", 30.0), ("b", 5.0), ("c", 4.0)], [("c", 0.6), ("d", 0.55), ("exact", 0.5)], 3)
    assert standout[0][0] == "exact"
    both = fuse([("a", 10.0), ("b", 9.0), ("c", 8.5), ("d", 1.0)], [("b", 0.8), ("x", 0.5), ("a", 0.2)], 3)
    assert [key for key, _ in both][:2] == ["b", "a"]
    assert fuse([], [("m", 0.4)], 2) == [("m", 0.4)]
    assert [key for key, _ in fuse([("a", 2.0)], [("b", 0.9)], 5, method="rrf")] == ["a", "b"]
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse([], [], 1, method="max")


def test_rank_passages_returns_the_passage_of_a_document_nearest_a_query_with_its_offset():
    text = "Intro about the farm.\n\nThe gauge must be recalibrated after it was powered down.\n\nStaff list."
    [best] = rank_passages(
        "when must the instrument be adjusted after being switched off", text, WordClassEmbedder(), 1, size=70
    )
    assert best.text.startswith("The gauge must") and text[best.start :].startswith(best.text)


def corpus_index(tmp_path: Path) -> tuple[Fts5Index, CorpusSpec]:
    root = fixture.write_corpus(tmp_path / "docs")
    spec = CorpusSpec(name="handbook", root=str(root))
    index = Fts5Index("handbook", tmp_path / "handbook.sqlite", writable=True)
    index_corpus(spec, index, workers=1)
    return index, spec


def test_a_paraphrase_with_no_word_of_the_passage_is_found_by_meaning_once_the_corpus_is_embedded(tmp_path):
    index, _ = corpus_index(tmp_path)
    embedder = WordClassEmbedder()
    before = search_corpus(index, fixture.PARAPHRASE, 3, embedder)
    assert before.method == "keywords" and before.hits == [] and "not embedded yet" in before.note

    summary = embed_passages(index, embedder, batch=4)

    assert summary.embedded == summary.total == index.vectors.counts()[1] > 0 and not summary.failure
    after = search_corpus(index, fixture.PARAPHRASE, 3, embedder)
    assert after.method == "hybrid" and after.note == ""
    assert after.hits[0].passage.path == "notes/maintenance.md"
    assert index.search("flux_buffer", 1, meaning=embedder.embed_query("flux_buffer"))[0].passage.anchor == (
        "GUC-FLUX-BUFFER"
    ), "an exact identifier still wins"


def test_only_new_or_changed_files_are_embedded_again_and_another_model_re_embeds_everything(tmp_path):
    index, spec = corpus_index(tmp_path)
    embedder = WordClassEmbedder()
    total = embed_passages(index, embedder).embedded
    assert embed_passages(index, embedder).embedded == 0, "nothing new"

    note = Path(spec.root) / "notes/maintenance.md"
    note.write_text(note.read_text() + "\nLog every recalibration.\n")
    index_corpus(spec, index, workers=1)
    again = embed_passages(index, embedder)
    assert 0 < again.embedded < total

    other = embed_passages(index, WordClassEmbedder("other-model/64"))
    assert other.dropped == total and other.embedded == total
    stale = search_corpus(index, "gauge", 2, embedder)
    assert stale.method == "keywords" and "embedded with other-model/64" in stale.note


def test_a_failing_embedder_stops_the_pass_and_leaves_keyword_search_working(tmp_path):
    index, _ = corpus_index(tmp_path)
    summary = embed_passages(index, WordClassEmbedder(fail=True))
    assert summary.failure == "the stand-in is down" and summary.embedded == 0
    found = search_corpus(index, "flux_buffer", 1, WordClassEmbedder())
    assert found.method == "keywords" and found.hits[0].passage.anchor == "GUC-FLUX-BUFFER"


def test_half_embedded_corpus_is_searched_by_meaning_where_it_can_and_says_how_far_it_got(tmp_path):
    index, _ = corpus_index(tmp_path)
    embedder = WordClassEmbedder()

    class StopAfterOneBatch:
        def start_embedding(self, passages: int) -> None:
            pass

        def embedded(self, passages: int) -> None:
            embedder.fail = True

        def finish_embedding(self) -> None:
            pass

    embed_passages(index, embedder, progress=StopAfterOneBatch(), batch=3)
    embedder.fail = False
    found = search_corpus(index, "flux_buffer", 2, embedder)
    assert found.method == "hybrid" and "3 of" in found.note and "keyword search covers all of them" in found.note


def test_the_knowledge_base_recalls_an_entry_by_meaning_across_runs():
    store = InMemoryStore()
    embedder = WordClassEmbedder()
    base = KnowledgeBase(store, ("knowledge", "anonymous", "main"), embedder=embedder)
    entry = KnowledgeEntry(
        key=entry_key(fixture.DORMANT_QUOTE, "corpus://handbook/notes/maintenance.md"),
        text=fixture.DORMANT_QUOTE,
        source="corpus://handbook/notes/maintenance.md",
        remembered_at="2026-12-01T00:00:00Z",
    )
    asyncio.run(base.put(entry))
    [stored] = store.search(("knowledge", "anonymous", "main"))
    assert stored.value["embedder"] == embedder.identity and stored.value["vector"]

    later = KnowledgeBase(store, ("knowledge", "anonymous", "main"), embedder=embedder)
    found = asyncio.run(later.search(fixture.PARAPHRASE, limit=3))
    assert found.method == "hybrid" and [e.text for e in found.entries] == [fixture.DORMANT_QUOTE]
    lexical = asyncio.run(KnowledgeBase(store, ("knowledge", "anonymous", "main")).search(fixture.PARAPHRASE, limit=3))
    assert lexical.method == "lexical" and lexical.entries == [], "no shared word: words alone find nothing"
    unrelated = asyncio.run(later.search("quarterly grid storage report", limit=3))
    assert unrelated.entries == []


def test_the_embedder_setting_chooses_bundled_endpoint_or_none_and_says_what_is_missing():
    def settings(**environ: str) -> EmbeddingSettings:
        return ResearchConfig.resolve(None, environ=environ).part(EmbeddingSettings)

    assert embedder_for(settings()).identity == "minilm-l6-v2-int8/384"
    assert embedder_for(settings(DRA_EMBEDDINGS="off")) is None
    incomplete = settings(DRA_EMBEDDINGS="endpoint", DRA_EMBEDDING_MODEL="nomic")
    assert embedder_for(incomplete) is None and "DRA_EMBEDDING_BASE_URL" in (embedding_problem(incomplete) or "")
    endpoint = embedder_for(
        settings(DRA_EMBEDDINGS="endpoint", DRA_EMBEDDING_BASE_URL="http://127.0.0.1:9/v1", DRA_EMBEDDING_MODEL="nomic")
    )
    assert endpoint is not None and endpoint.identity == "nomic@http://127.0.0.1:9/v1"
    with pytest.raises(EmbeddingFailed, match="127.0.0.1:9"):
        endpoint.embed_query("anything")
    warned = ResearchConfig.resolve(None, environ={"DRA_EMBEDDINGS": "gpu"})
    assert warned.embeddings == "bundled" and any("DRA_EMBEDDINGS 'gpu'" in w for w in warned.warnings)


def test_bundled_model_places_a_paraphrase_nearer_its_passage_than_an_unrelated_one():
    embedder = embedder_for(ResearchConfig.resolve(None, environ={}).part(EmbeddingSettings))
    assert embedder is not None
    vectors = embedder.embed_documents([fixture.PARAPHRASE, fixture.DORMANT_QUOTE, fixture.PDF_QUOTE])
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.1


def test_a_one_shot_bundled_model_loads_unoptimised_and_embeds_the_same_vectors():
    settings = ResearchConfig.resolve(None, environ={}).part(EmbeddingSettings)
    one_shot, served = embedder_for(settings, one_shot=True), embedder_for(settings)
    assert isinstance(one_shot, BundledEmbedder) and isinstance(served, BundledEmbedder)
    assert (one_shot.optimize, served.optimize) == (False, True) and one_shot.identity == served.identity

    texts = [fixture.PARAPHRASE, fixture.DORMANT_QUOTE]
    assert np.allclose(one_shot.embed_documents(texts), served.embed_documents(texts), atol=1e-4)
