"""What the claim checks cost: a 60-claim report against 30 fetched pages of 50 KB, all local text work.

The report gate vets a draft (``vet_report``: scrub, lint, per-source check, claim check) and delivers it
(``finalise``: repair, check again, mark), each once per report. Measured here on a fresh evidence store,
so every page is prepared (sentences, figures) inside the timing, as for a run's first report, and again
with the pages already prepared (the store keeps them for the run, so the delivery after a bounce, and the
running draft after each hand-over, pay only for the claims).

The pages are the web stand-in's numbered articles (``testkit/web.py``: about 50 KB each, every
sentence full of figures). The report has 60 claims: 36 citing a page's figures, 8 inventing one, 8 with no
figure, 4 citing two pages (so the conflict check reads both), 2 quoting a page and 2 uncited figures. The baseline, measured in the same run,
is a plain substring scan: every digit run of every claim looked up with ``in`` in the raw text of each
page the claim cites, which is what a check costs that knows nothing of separators, units or sentences.

Each figure is the median of 15 rounds, in CPU time of the calling thread (``time.thread_time``: on an
idle machine the same as wall time, and unlike wall time it does not count the time the OS gave other
processes on a shared one), with the wall-clock median beside it.

Run: ``uv run python -m bench.claims``. Exits 1 when the cold vet-and-deliver median is 200 ms or more.
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from collections.abc import Callable

from deep_research_agent.domain.names import ClaimVerdict
from deep_research_agent.evidence.store import EvidenceStore
from deep_research_agent.report.markdown import citation_groups
from deep_research_agent.report.vetting import finalise, vet_report
from testkit.web import numbered_article

PAGES = 30
PAGE_KB = 50
BUDGET_MS = 200.0
ROUNDS = 15
_DIGITS_RE = re.compile(r"\d[\d,.]*\d|\d")


def url(n: int) -> str:
    return f"https://tides.example/reports/{n}"


def page_text(n: int) -> str:
    article = numbered_article(n, kb=PAGE_KB)
    return f"{article.title}\n\n" + "\n\n".join(article.paragraphs)


def level(n: int, i: int) -> str:
    return f"{1 + (n * i) % 97 / 100:.2f}"


def report() -> str:
    """60 claims over the 30 pages; claim k cites page (k mod 30) + 1."""
    claims: list[str] = []
    for k in range(36):
        n, i = k % PAGES + 1, 10 + k
        claims.append(
            f"Survey {n} logged {i} readings at station N-{n:03d}-{i:03d}, with a mean level of {level(n, i)} metres [{n}]."
        )
    for k in range(8):
        n = k % PAGES + 1
        claims.append(f"Survey {n} logged {9000 + k} readings at station N-{n:03d}-{k + 1:03d}, a record [{n}].")
    for k in range(8):
        n = (k * 4) % PAGES + 1
        claims.append(f"The crew kept the tidal gauge readings station by station, in order [{n}].")
    for k in range(4):
        n, m = k + 1, k + 16
        claims.append(f"Both surveys logged {20 + k} readings at their first stations [{n}, {m}].")
    for k in range(2):
        n = k + 5
        claims.append(f'One entry reads "station N-{n:03d}-003 logged 3 readings of the tidal gauge" [{n}].')
    claims.append("The census cost 4.2 million euros.")
    claims.append("About 1,200 gauges were read in 2024.")
    body = "\n\n".join(" ".join(claims[i : i + 3]) for i in range(0, len(claims), 3))
    sources = "\n".join(f"[{n}] Tidal survey report {n} — {url(n)}" for n in range(1, PAGES + 1))
    return f"# Tidal surveys\n\n{body}\n\n## Sources\n{sources}\n"


def store(texts: dict[int, str]) -> EvidenceStore:
    evidence = EvidenceStore()
    for n, text in texts.items():
        evidence.add_evidence(
            url=url(n), title=f"Tidal survey report {n}", kind="page", text=text, agent="research-subagent"
        )
    return evidence


def substring_scan(markdown: str, texts: dict[int, str]) -> int:
    """The baseline: each claim's digit runs looked up verbatim in the pages it cites."""
    found = 0
    body = markdown.split("## Sources")[0]
    for sentence in re.split(r"(?<=[.!?])\s+", body):
        cited = [n for group in citation_groups(sentence) for n in group.numbers]
        for token in _DIGITS_RE.findall(sentence):
            found += any(token in texts[n] for n in cited)
    return found


def median_ms(fn: Callable[[], object], rounds: int = ROUNDS) -> tuple[float, float]:
    """The median CPU time and the median wall time of ``fn``, in milliseconds."""
    cpu, wall = [], []
    for _ in range(rounds):
        start_cpu, start_wall = time.thread_time(), time.perf_counter()
        fn()
        cpu.append((time.thread_time() - start_cpu) * 1000)
        wall.append((time.perf_counter() - start_wall) * 1000)
    return statistics.median(cpu), statistics.median(wall)


def main() -> int:
    texts = {n: page_text(n) for n in range(1, PAGES + 1)}
    markdown = report()

    def vet_and_deliver(evidence: EvidenceStore) -> str:
        return finalise(vet_report(markdown, evidence), evidence)

    warm_store = store(texts)
    delivered = vet_and_deliver(warm_store)
    verdicts = [claim.verdict for claim in warm_store.claims]
    summary = warm_store.claim_summary
    assert summary is not None and summary.claims == 60, summary
    fresh = iter([store(texts) for _ in range(ROUNDS)])
    (cold, cold_wall), (warm, warm_wall) = (
        median_ms(lambda: vet_and_deliver(next(fresh))),
        median_ms(lambda: vet_and_deliver(warm_store)),
    )
    baseline, baseline_wall = median_ms(lambda: substring_scan(markdown, texts))
    kb = sum(len(t.encode()) for t in texts.values()) / 1000

    print(f"report: {summary.claims} claims ({len(markdown):,} chars) against {PAGES} pages, {kb:,.0f} KB of text")
    print(
        f"verdicts: {summary.supported} supported, {summary.unsupported_number} unsupported_number, "
        f"{summary.unsupported_quote} unsupported_quote, {summary.conflicting} conflicting, "
        f"{summary.uncited_number} uncited_number, {summary.source_not_read} source_not_read"
    )
    print(f"marked [unverified] in the delivered report: {delivered.count('[unverified]')}")
    print("                                                     CPU median   (wall median)")
    print(
        f"vet + deliver, pages prepared inside (first report): {cold:8.2f} ms   ({cold_wall:8.2f} ms)   budget {BUDGET_MS:.0f} ms"
    )
    print(f"vet + deliver, pages already prepared:               {warm:8.2f} ms   ({warm_wall:8.2f} ms)")
    print(f"baseline: substring scan of each claim's digits:     {baseline:8.2f} ms   ({baseline_wall:8.2f} ms)")
    print(f"ratio cold/baseline: {cold / baseline:8.1f}x   warm/baseline: {warm / baseline:8.1f}x")
    expected = {ClaimVerdict.SUPPORTED: 50, ClaimVerdict.UNSUPPORTED_NUMBER: 8, ClaimVerdict.UNCITED_NUMBER: 2}
    counts = {verdict: verdicts.count(verdict) for verdict in expected}
    if counts != expected:
        print(f"unexpected verdicts: {counts} (expected {expected})")
        return 1
    return 0 if cold < BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
