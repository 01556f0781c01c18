"""How often the claim judge is shown the passage that decides a claim, over the labelled claims.

Each case of ``claim_labels.jsonl`` names its deciding passage (``deciding``: words of the passage's sentence,
or sentences, that state what the claim states or distorts; a case with an invented detail from nowhere has
none). Each claim goes through the product's own checks (``check_claims``) against a page, and its
passages are chosen two ways, measured in the same run:

- ``words only`` (the baseline, as the judge was shown before): the sentences sharing most of the claim's
  content words, a page's header lines aside, else the page's first line;
- ``figures, names and words`` (``report/passages.py``, as the judge is shown with embeddings off);
- ``... and meaning``: the same with ``MeaningSignal`` (the deployment's embedder, ``DRA_EMBEDDINGS``; the
  bundled model by default), as the judge is shown by default.

A case counts as included when every sentence its ``deciding`` names is among the ``PASSAGES_PER_SOURCE``
chosen. Two page shapes:

- ``one page``: each passage as ``web_fetch`` keeps a page (a ``Title:`` line, a blank line, the text), its
  cases one report;
- ``long page``: every passage of the same origin in one page, each under its heading (the six PostgreSQL
  sections, the four Debian Reference sections, the seven encyclopedic articles), so the deciding sentence
  competes with 20 to 60 others, some naming the same things.

Printed per shape and mode: inclusion over every labelled case with a deciding passage and over those the
judge is sent (``ClaimCheck.judgeable``). Then the grounding rule the judge's ``supported`` verdicts are held
to (``report/judge_guard.GROUNDING``): how many correct claims, judged supported on their deciding passage, it would
downgrade (a false downgrade turns a supported claim unchecked, never flagged).

Run: ``uv run python -m bench.judge_passages [--misses]``. Exits 1 when the product's choice (with meaning
when an embedder is set) includes the deciding passage for under 95 % of the cases on either page shape.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

from bench.claim_labels import SUPPORTED, Case, Passage, load
from deep_research_agent.embeddings import Embedder, embedder_for
from deep_research_agent.evidence.text import EvidenceLibrary, EvidenceText, Span, content_words
from deep_research_agent.report.citations import check_citations
from deep_research_agent.report.claims import CheckedClaim, check_claims
from deep_research_agent.report.judge import PASSAGES_PER_SOURCE
from deep_research_agent.report.judge_guard import GROUNDING
from deep_research_agent.report.passages import (
    ClaimFacts,
    PassageSignal,
    choose_passages,
    shared_content,
    with_meaning,
)
from deep_research_agent.settings import EmbeddingSettings, ResearchConfig

GOAL = 0.95
Chooser = Callable[[CheckedClaim, EvidenceText], list[Span]]


def words_only(checked: CheckedClaim, text: EvidenceText) -> list[Span]:
    """The baseline: the judge's passages as chosen before, by the claim's content words alone."""
    words = content_words(checked.claim.text)
    ranked = text.best_spans(words, count=PASSAGES_PER_SOURCE + 3) if words else []
    spans = [span for span in ranked if not text.is_header(span)][:PASSAGES_PER_SOURCE]
    if not spans and text.text.strip():
        spans = [text.sentence_span(len(text.text) - len(text.text.lstrip()))]
    return spans


def by_facts(checked: CheckedClaim, text: EvidenceText) -> list[Span]:
    return choose_passages(ClaimFacts.of(checked.claim), text, count=PASSAGES_PER_SOURCE)


def by_facts_and_meaning(embedder: Embedder) -> Chooser:
    """As the judge chooses with an embedder: one ``MeaningSignal`` (its budget, its caches) per report, here
    per page."""
    passes: dict[int, tuple[EvidenceText, tuple[PassageSignal, ...]]] = {}

    def choose(checked: CheckedClaim, text: EvidenceText) -> list[Span]:
        if id(text) not in passes or passes[id(text)][0] is not text:
            passes[id(text)] = (text, with_meaning(embedder))
        signals = passes[id(text)][1]
        return choose_passages(ClaimFacts.of(checked.claim), text, count=PASSAGES_PER_SOURCE, signals=signals)

    return choose


MODES: dict[str, Chooser] = {"words only (before)": words_only, "figures, names and words": by_facts}


@dataclass(frozen=True)
class Page:
    title: str
    url: str
    text: str


def one_page(passage: Passage) -> Page:
    return Page(passage.title, passage.url, f"Title: {passage.title}\n\n{passage.text}")


def long_page(passages: list[Passage]) -> Page:
    body = "\n\n".join(f"## {p.title}\n\n{p.text}" for p in passages)
    title = f"Collected pages: {passages[0].origin.split('(')[0].strip()}"
    return Page(title, f"https://collected.example/{passages[0].id}", f"Title: {title}\n\n{body}")


def cited(sentence: str) -> str:
    body = sentence.rstrip()
    return body[:-1].rstrip() + " [1]." if body.endswith(".") else body + " [1]"


def checked_claims(page: Page, cases: list[Case]) -> tuple[list[CheckedClaim], set[int], EvidenceText]:
    """The page's cases as one report's checked claims, which of them the judge is sent, and the page."""
    markdown = "# Report\n\n" + "\n\n".join(cited(c.sentence) for c in cases)
    markdown += f"\n\n## Sources\n[1] {page.title} — {page.url}\n"
    library = EvidenceLibrary(
        [{"id": "ev-page", "url": page.url, "title": page.title, "kind": "page", "text": page.text}]
    )
    check = check_claims(markdown, check_citations(markdown, library, []), library)
    if len(check.checked) != len(cases):
        raise ValueError(f"{len(cases)} cases made {len(check.checked)} claims on {page.title}")
    return check.checked, {id(c) for c in check.judgeable()}, library.for_source(page.url)[0]


@dataclass
class Inclusion:
    included: int = 0
    total: int = 0
    judged_included: int = 0
    judged_total: int = 0

    def rate(self, judged: bool = False) -> float:
        total = self.judged_total if judged else self.total
        return (self.judged_included if judged else self.included) / total if total else 1.0


def deciding_spans(case: Case, text: EvidenceText) -> list[Span]:
    spans = []
    for words in case.deciding:
        at = text.text.find(words)
        if at < 0:
            raise ValueError(f"{case.id}: {words!r} is not in its page")
        spans.append(text.sentence_span(at))
    return spans


def measure(
    pages: list[tuple[Page, list[Case]]], chooser: Chooser, misses: list[str] | None
) -> tuple[Inclusion, list[float]]:
    """Inclusion over the cases with a deciding passage, and for the supported ones the share of their content
    the deciding passage holds (the grounding the judge's ``supported`` verdicts are held to)."""
    found = Inclusion()
    grounding: list[float] = []
    for page, cases in pages:
        claims, judgeable, text = checked_claims(page, cases)
        for case, checked in zip(cases, claims, strict=True):
            if not case.deciding:
                continue
            wanted = deciding_spans(case, text)
            chosen = {span[0] for span in chooser(checked, text)}
            hit = all(span[0] in chosen for span in wanted)
            found.total += 1
            found.included += hit
            if id(checked) in judgeable:
                found.judged_total += 1
                found.judged_included += hit
            if not hit and misses is not None:
                shown = " | ".join(text.sentence(s)[:70] for s in chooser(checked, text))
                misses.append(f"{case.id}: {case.sentence}\n      shown: {shown}")
            if case.label == SUPPORTED and len(wanted) == 1:
                grounding.append(shared_content(ClaimFacts.of(checked.claim), text.sentence(wanted[0])))
    return found, grounding


def shapes(passages: dict[str, Passage], cases: list[Case]) -> dict[str, list[tuple[Page, list[Case]]]]:
    by_passage = {pid: [c for c in cases if c.passage == pid] for pid in dict.fromkeys(c.passage for c in cases)}
    single = [(one_page(passages[pid]), group) for pid, group in by_passage.items()]
    origins: dict[str, list[Passage]] = {}
    for passage in passages.values():
        origins.setdefault(passage.origin.split("(")[0].split(",")[0].strip(), []).append(passage)
    pooled = []
    for family in origins.values():
        group = [c for p in family for c in by_passage.get(p.id, [])]
        if group:
            pooled.append((long_page(family), group))
    return {"one page per passage": single, "long page (all passages of an origin)": pooled}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--misses", action="store_true", help="list every case whose deciding passage was not shown")
    args = parser.parse_args(argv)
    passages, cases = load()
    labelled = sum(bool(c.deciding) for c in cases)
    print(
        f"{labelled} of {len(cases)} labelled claims name a deciding passage; {PASSAGES_PER_SOURCE} passages a source"
    )
    modes = dict(MODES)
    embedder = embedder_for(ResearchConfig.resolve(None).part(EmbeddingSettings))
    if embedder is None:
        print("DRA_EMBEDDINGS is off: measured without meaning")
    else:
        modes["figures, names, words and meaning (default)"] = by_facts_and_meaning(embedder)
    failed = False
    for shape, pages in shapes(passages, cases).items():
        print(f"\n{shape}")
        rates = {}
        for mode, chooser in modes.items():
            misses: list[str] | None = [] if args.misses else None
            found, grounding = measure(pages, chooser, misses)
            rates[mode] = found.rate()
            print(
                f"  {mode}: deciding passage shown for {found.included} of {found.total} ({found.rate():.1%}); "
                f"of the claims the judge is sent {found.judged_included} of {found.judged_total} "
                f"({found.rate(judged=True):.1%})"
            )
            for line in misses or []:
                print(f"    missed {line}")
        before, *_, now = rates.values()
        print(f"  ratio shipped ÷ before: {now / before:.2f}" if before else "")
        failed |= now < GOAL
    _, grounding = measure(shapes(passages, cases)["one page per passage"], by_facts, None)
    below = [g for g in grounding if g < GROUNDING]
    print(
        f"\ngrounding rule (a supported verdict's passage holds at least {GROUNDING:.0%} of the claim's figures, names "
        f"and words): {len(below)} of {len(grounding)} correct claims judged supported on their deciding passage "
        f"would be downgraded to unchecked"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
