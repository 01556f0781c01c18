"""Vetting a report against what the run retrieved: the one place a report is judged before it leaves.

Contract:
- ``vet_report(markdown, evidence, previous=...)`` scrubs the draft (``scrub_report``), gives corpus
  passages their readable Sources lines (``corpora.citing``), lints its numbering (``lint_citations``),
  checks every citation's source against the run's evidence and findings (``check_citations``) and every
  claim against the texts it cites (``check_claims``). ``problems`` lists what the writer should fix; ``previous`` is the verdict on the draft the report gate sent back, so fixed
  citations count as ``repaired``;
- ``with_judgements(vetted, judgements, judge_unreliable=...)`` puts the claim judge's verdicts (``judge.py``)
  into a vetted draft, its problems listed again, or none when the judge was found unreliable (its claim
  summary then says so); the judge itself is a model call the report gate makes between the two;
- ``finalise(vetted, evidence)`` is the delivery: never-retrieved citations are removed
  (``repair_report``), the claims of the repaired text are checked again (the judge's verdicts kept, found
  by each claim's words and sources), every claim not supported is
  marked ``[unverified]`` (``mark_unverified``), and the evidence store keeps the delivered report's
  per-source citations, its claims (numbered and marked as delivered) and the summaries, for the run's
  state and its ``report`` and ``usage`` events;
- ``draft_report(evidence, reason=...)`` is the report the findings make so far, repaired and marked the
  same way, recording nothing: the running draft a cut-short run leaves behind.

Each of these is local text work over every text the run read (tens of milliseconds for a long report over thirty
long pages, ``bench/claims.py``): async callers run them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..domain.charts import DEFAULT_MAX_CHARTS
from ..domain.claims import ClaimRecord, ClaimSummary, summarise_claims
from ..domain.urls import normalise_url
from .charts import ChartCheck, check_charts, with_checked_charts
from .citations import CitationReport, check_citations, one_entry_per_work, repair_report
from .claims import ClaimCheck, check_claims, mark_unverified
from .corpus_sources import readable_corpus_sources
from .hygiene import lint_citations, scrub_report
from .judge import Judgement, apply_judgements
from .salvage import salvage_report

if TYPE_CHECKING:  # the run's stores import the report's citation models
    from ..evidence.store import EvidenceStore


@dataclass(frozen=True)
class VettedReport:
    markdown: str
    check: CitationReport
    claims: ClaimCheck
    problems: list[str]
    # The claim judge's verdicts, by ``judge.judgement_key``: kept through the delivery's re-check.
    judgements: Mapping[str, Judgement] = field(default_factory=dict)
    # The judge called a planted control claim supported: none of its verdicts is in ``judgements``.
    judge_unreliable: bool = False
    # The draft's charts, their specs parsed and points checked (``charts.py``).
    charts: ChartCheck = field(default_factory=ChartCheck)


@dataclass(frozen=True)
class Delivery:
    markdown: str
    citations: CitationReport
    claims: list[ClaimRecord]
    claim_summary: ClaimSummary


def vet_report(
    markdown: str,
    evidence: EvidenceStore,
    *,
    previous: CitationReport | None = None,
    max_charts: int = DEFAULT_MAX_CHARTS,
) -> VettedReport:
    """The scrubbed draft, the verdicts on its citations, claims and charts (at most ``max_charts``), and what
    its writer should fix."""
    scrubbed = one_entry_per_work(readable_corpus_sources(scrub_report(markdown), evidence), _source_of(evidence))
    library = evidence.library()
    check = check_citations(scrubbed, library, evidence.all_findings(), previous=previous)
    claims = check_claims(scrubbed, check, library)
    charts = check_charts(scrubbed, check, library, max_charts=max_charts)
    problems = [*lint_citations(scrubbed).problems(), *check.problems(), *claims.problems(), *charts.problems()]
    return VettedReport(markdown=scrubbed, check=check, claims=claims, problems=problems, charts=charts)


def _source_of(evidence: EvidenceStore) -> Callable[[str], str | None]:
    """The URL of the source a cited URL belongs to (another URL of a work names the work's first), or None."""

    def source_of(url: str) -> str | None:
        record = evidence.source(url)
        return normalise_url(record.url) if record is not None else None

    return source_of


def with_judgements(
    vetted: VettedReport, judgements: Mapping[str, Judgement], *, judge_unreliable: bool = False
) -> VettedReport:
    """The vetted draft with the judge's verdicts on its claims, and its problems listed again; a judge found
    ``judge_unreliable`` gives none, and the draft's claim summary says so."""
    if judge_unreliable:
        claims = replace(vetted.claims, judge_unreliable=True)
        return replace(vetted, claims=claims, judgements={}, judge_unreliable=True)
    if not judgements:
        return vetted
    claims = apply_judgements(vetted.claims, judgements)
    problems = [
        *lint_citations(vetted.markdown).problems(),
        *vetted.check.problems(),
        *claims.problems(),
        *vetted.charts.problems(),
    ]
    return replace(vetted, claims=claims, problems=problems, judgements=dict(judgements))


def _deliverable(vetted: VettedReport, evidence: EvidenceStore) -> Delivery:
    repaired = repair_report(vetted.markdown, vetted.check)
    if repaired == vetted.markdown:
        citations, claims = vetted.check, vetted.claims
    else:
        # Checked again so the recorded citations and claims carry the numbers the reader sees.
        library = evidence.library()
        citations = check_citations(repaired, library, evidence.all_findings())
        claims = apply_judgements(check_claims(repaired, citations, library), vetted.judgements)
        claims = replace(claims, judge_unreliable=vetted.judge_unreliable)
    marked, records = mark_unverified(repaired, claims)
    # The charts are checked on the text as delivered, their cites renumbered with the rest, and written back
    # with their checks; a block that cannot be drawn becomes a note saying why.
    charts = check_charts(marked, citations, evidence.library(), max_charts=vetted.charts.max_charts)
    points = [check for record in charts.records for check in record.checks]
    summary = claims.in_language(
        summarise_claims(
            records,
            judge_unreliable=claims.judge_unreliable,
            chart_points=len(points),
            chart_points_flagged=sum(not check.ok for check in points),
        )
    )
    return Delivery(
        markdown=with_checked_charts(marked, charts), citations=citations, claims=records, claim_summary=summary
    )


def draft_report(evidence: EvidenceStore, *, reason: str, in_flight: bool = False) -> str:
    """The report the run's findings make so far, vetted, repaired and marked like a delivered one, recording nothing;
    ``in_flight``: with what units still running had staged and read (``salvage_report``)."""
    salvaged = salvage_report(evidence, reason=reason, in_flight=in_flight)
    return _deliverable(vet_report(salvaged, evidence), evidence).markdown


def finalise(vetted: VettedReport, evidence: EvidenceStore) -> str:
    """The report as delivered, with its citations and claims recorded in the run's evidence store."""
    delivery = _deliverable(vetted, evidence)
    evidence.deliver_citations(
        delivery.citations.citations, vetted.check.summary, claims=delivery.claims, claim_summary=delivery.claim_summary
    )
    return delivery.markdown
