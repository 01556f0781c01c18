"""The words every format shares: the header lines, a flagged claim's reason, a source's line, the appendix."""

from __future__ import annotations

from datetime import UTC, datetime

from ..domain.claims import ClaimRecord, ClaimSummary
from ..domain.names import ClaimVerdict
from ..report.claim_split import UNVERIFIED_MARK
from .document import DocumentSource, ReportDocument

# Why a claim was marked, per verdict, in a reader's words (docs/architecture.md "Checked claims").
VERDICT_REASONS: dict[ClaimVerdict, str] = {
    ClaimVerdict.SUPPORTED: "Supported by the text it cites.",
    ClaimVerdict.UNSUPPORTED_NUMBER: "A figure of it is in none of its cited sources' texts.",
    ClaimVerdict.UNSUPPORTED_QUOTE: "A quoted phrase is not in its cited sources' texts word for word.",
    ClaimVerdict.UNSUPPORTED_NAME: "A name in it is in none of its cited sources' texts nor their titles.",
    ClaimVerdict.CONTRADICTED: "The cited source says the opposite.",
    ClaimVerdict.NOT_SUPPORTED: "Nothing in the cited passages states it.",
    ClaimVerdict.SOURCE_NOT_READ: "None of its sources was read in full.",
    ClaimVerdict.CONFLICTING: "Its sources give different values for the figure.",
    ClaimVerdict.UNCITED_NUMBER: "It states a figure and cites nothing.",
}
UNKNOWN_REASON = "The checks could not show it against the text it cites."


def when(moment: datetime | None) -> str:
    """A moment as ``2026-05-04 09:30 UTC``; naive times are taken as UTC."""
    if moment is None:
        return ""
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def header_lines(document: ReportDocument) -> list[tuple[str, str]]:
    """(label, text) lines under the title: the question, the date and the outcome with its notice."""
    lines = []
    if document.question:
        lines.append(("Question", document.question))
    if document.date:
        lines.append(("Date", when(document.date)))
    if document.outcome:
        notice = document.outcome_notice
        lines.append(("Outcome", document.outcome.value.replace("_", " ") + (f": {notice}" if notice else "")))
    return lines


def reason(claim: ClaimRecord | None) -> str:
    """Why a claim is marked ``[unverified]``: the verdict in words, then what did not check out."""
    if claim is None:
        return UNKNOWN_REASON
    words = VERDICT_REASONS.get(claim.verdict, UNKNOWN_REASON)
    found = claim.detail or ", ".join(claim.tokens)
    return f"{words[:-1]}: {found}." if found else words


def note_text(claim: ClaimRecord | None) -> tuple[str, str]:
    """(the claim as delivered, the reason) for the note of one ``[unverified]`` mark."""
    return (" ".join(claim.claim.replace(f" {UNVERIFIED_MARK}", "").split()) if claim else "", reason(claim))


def source_details(source: DocumentSource) -> list[str]:
    """The parts after a source's title: its paper metadata when known, and when it was read."""
    details = []
    if source.authors:
        details.append(", ".join(source.authors[:3]) + (" et al." if len(source.authors) > 3 else ""))
    if source.year:
        details.append(str(source.year))
    if source.doi:
        details.append(f"doi:{source.doi}")
    details.append(f"read {when(source.read_at)}" if source.read_at else "not read in full")
    if source.verified is False:
        details.append("not verified")
    return details


def appendix_rows(summary: ClaimSummary | None, flagged: int) -> list[tuple[str, str]]:
    """(label, value) rows of the checks appendix: the coverage (``summarise_claims``'s sentence, which holds
    the citation accuracy over the checked claims), then the counts."""
    if summary is None:
        return [("Claims checked", "none recorded"), ("Claims marked [unverified]", str(flagged))]
    rows = [
        ("Coverage", summary.coverage or f"{summary.checked} of {summary.claims} claims checked"),
        ("Claims", str(summary.claims)),
        ("Checked", str(summary.checked)),
        ("Supported", str(summary.supported)),
        ("Marked [unverified]", str(summary.flagged)),
    ]
    for verdict in ClaimVerdict:
        count = getattr(summary, verdict.value, 0) if verdict.flags else 0
        if count:
            rows.append((f"  {verdict.value.replace('_', ' ')}", str(count)))
    if summary.chart_points_flagged:
        rows.append(("  chart points not checking out", str(summary.chart_points_flagged)))
    rows += [("Unchecked (nothing to look up, no judge verdict)", str(summary.unchecked))]
    if summary.chart_points:
        rows.append(("Chart points (counted among the claims)", str(summary.chart_points)))
    rows += [("Judged by the claim judge", str(summary.judged))]
    if summary.judge_unreliable:
        rows.append(
            ("Claim judge", "unreliable: it called a planted false claim supported; its verdicts were not used")
        )
    return rows
