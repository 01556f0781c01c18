"""The verdicts of a delivered report's checks: per citation and per claim, and their counts.

``report/citations.py`` and ``report/claims.py`` decide them; the run's evidence store keeps them, the
``report`` and ``usage`` events carry the counts and the thread state the records. ``summarise_claims`` is
the one maker of the counts, the citation accuracy (over the checked claims) and the coverage sentence that
the web UI, the CLI, the exports, the MCP result and the scorecards show as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from .names import ClaimMethod, ClaimVerdict

Reason = Literal[
    "quote_verified",
    "snippet_quote_verified",
    "page_retrieved",
    "search_snippet_only",
    "quote_not_found",
    "quote_missing",
    "number_not_in_quote",
    "no_url",
    "not_retrieved",
    "no_source_entry",
    "empty_entry",
]
Action = Literal["keep", "flag", "remove"]

CITATION_ACTIONS: dict[str, Action] = {
    "quote_verified": "keep",
    "snippet_quote_verified": "keep",
    "page_retrieved": "keep",
    "search_snippet_only": "flag",
    "quote_not_found": "flag",
    "quote_missing": "flag",
    "number_not_in_quote": "flag",
    "no_url": "flag",
    "not_retrieved": "remove",
    "no_source_entry": "remove",
    "empty_entry": "remove",
}


class CitationRecord(BaseModel):
    index: int
    url: str | None = None
    title: str = ""
    evidence_id: str | None = None
    verified: bool
    reason: Reason
    detail: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def action(self) -> Action:
        return CITATION_ACTIONS[self.reason]


class CitationSummary(BaseModel):
    """What vetting did to the delivered report's citations (also the ``usage`` event's ``citations``)."""

    model_config = ConfigDict(extra="forbid")

    valid: int = Field(
        default=0, description="Cited sources the run retrieved whose findings' quotes and figures hold."
    )
    repaired: int = Field(default=0, description="Cited sources the report gate sent back that the revision fixed.")
    removed: int = Field(default=0, description="Citations of sources the run never retrieved, removed on delivery.")
    flagged: int = Field(
        default=0,
        description="Cited sources kept but not verified: read only as a search snippet, or a finding's quote or figure "
        "from them did not check out.",
    )


class ClaimSource(BaseModel):
    """One source a claim cites, and the sentence of its text nearest to the claim."""

    index: int
    url: str | None = None
    title: str = ""
    evidence_id: str | None = None
    sentence: str = Field(
        default="", description="The sentence of the source's text nearest to the claim; empty when none."
    )
    deciding: bool = Field(
        default=False, description="The judge named this source's sentence as the one that decides the claim."
    )


class ClaimRecord(BaseModel):
    """The verdict on one claim of the delivered report."""

    claim: str = Field(description="The sentence, list item or table cell as delivered.")
    indexes: list[int] = Field(default_factory=list, description="The sources it cites, by their [n].")
    verdict: ClaimVerdict
    tokens: list[str] = Field(
        default_factory=list,
        description="The figures, quotes or names that do not check out, or the words whose direction the source "
        "reverses, as written.",
    )
    detail: str = ""
    decided_by: ClaimMethod = Field(
        default=ClaimMethod.NOT_CHECKED,
        description="How the verdict was decided: figures_and_quotes (found, or not, in the cited text), "
        "names_and_direction (checked), judged (by the model), not_checked (for meaning).",
    )
    sources: list[ClaimSource] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _upgraded(cls, data: Any) -> Any:
        """A record saved before claims could be unchecked called one ``supported`` that nothing checked."""
        if isinstance(data, dict) and data.get("verdict") == "supported" and data.get("decided_by") == "not_checked":
            return data | {"verdict": ClaimVerdict.UNCHECKED.value}
        return data


class ClaimMethods(BaseModel):
    """How many of a report's claims each way of deciding a verdict decided (``ClaimMethod``)."""

    model_config = ConfigDict(extra="forbid")

    figures_and_quotes: int = 0
    names_and_direction: int = 0
    judged: int = 0
    not_checked: int = 0


class ClaimSummary(BaseModel):
    """Counts of the delivered report's claims (on the ``report`` and ``usage`` events, and the thread state's
    ``claim_summary``), made by ``summarise_claims`` only: every surface shows ``coverage``, never a citation
    accuracy without it."""

    model_config = ConfigDict(extra="forbid")

    claims: int = Field(
        default=0, description="Claims: cited sentences, items and cells, and uncited ones stating a figure."
    )
    checked: int = Field(
        default=0,
        description="Claims something checked: every claim but the unchecked ones (no figure, quote or name to look "
        "up, and no judge verdict that holds).",
    )
    supported: int = Field(
        default=0, description="Claims supported: their figures, quotes and names in the text they cite, or judged so."
    )
    flagged: int = Field(default=0, description="Claims delivered marked [unverified].")
    unsupported_number: int = 0
    unsupported_quote: int = 0
    unsupported_name: int = 0
    contradicted: int = 0
    not_supported: int = 0
    source_not_read: int = 0
    conflicting: int = 0
    uncited_number: int = 0
    unchecked: int = Field(default=0, description="Claims nothing checked: neither supported nor flagged.")
    judged: int = Field(default=0, description="Claims whose verdict the model judge decided.")
    not_checked: int = Field(default=0, description="The same count as unchecked, under its earlier name.")
    judge_unreliable: bool = Field(
        default=False,
        description="The claim judge called the planted control claim supported: none of its verdicts was used.",
    )
    chart_points: int = Field(
        default=0,
        description="Points of the report's charts, each checked against the source it cites: counted among the claims "
        "(and checked, supported or flagged).",
    )
    chart_points_flagged: int = Field(
        default=0, description="Chart points that do not check out against the source they cite (among flagged)."
    )
    decided_by: ClaimMethods = Field(
        default_factory=ClaimMethods, description="How many claims each way of deciding a verdict decided."
    )
    citation_accuracy: float | None = Field(
        default=None,
        description="Supported claims ÷ checked claims (DeepResearch Bench's FACT citation accuracy, over the claims "
        "that were checked); absent when none was checked.",
    )
    coverage: str = Field(
        default="",
        description='The counts in one sentence, as every surface shows them: "9 of 12 claims checked; 9 supported '
        '(citation accuracy 100%)".',
    )

    @model_validator(mode="before")
    @classmethod
    def _upgraded(cls, data: Any) -> Any:
        """A summary saved before claims could be unchecked counted its ``not_checked`` claims as supported:
        read it with those claims unchecked, and its accuracy and coverage made again."""
        if not isinstance(data, dict) or "not_checked" not in data or "checked" in data:
            return data
        data = dict(data)
        unchecked = int(data.get("not_checked") or 0)
        claims, supported = int(data.get("claims") or 0), int(data.get("supported") or 0) - unchecked
        checked = claims - unchecked
        accuracy = round(supported / checked, 4) if checked else None
        judge_unreliable = bool(data.get("judge_unreliable"))
        return data | {
            "supported": supported,
            "checked": checked,
            "unchecked": unchecked,
            "citation_accuracy": accuracy,
            "coverage": _coverage(claims, checked, supported, accuracy, judge_unreliable=judge_unreliable),
        }


def no_claims() -> ClaimSummary:
    """The summary of a report that holds no claim to check (a scheduled run's short digest, for one)."""
    return summarise_claims([])


def summarise_claims(
    records: Sequence[ClaimRecord],
    *,
    judge_unreliable: bool = False,
    chart_points: int = 0,
    chart_points_flagged: int = 0,
) -> ClaimSummary:
    """The one place a report's claim counts are made: per verdict, how many were checked and judged, the
    citation accuracy over the checked claims, and the sentence that states them (``coverage``). A chart's
    points (``report/charts.py`` checks each against the source it cites) count as checked claims, supported
    or flagged."""
    counts = {verdict.value: 0 for verdict in ClaimVerdict}
    for record in records:
        counts[record.verdict] += 1
    unchecked = counts[ClaimVerdict.UNCHECKED]
    supported = counts[ClaimVerdict.SUPPORTED] + chart_points - chart_points_flagged
    claims = len(records) + chart_points
    checked = claims - unchecked
    accuracy = round(supported / checked, 4) if checked else None
    return ClaimSummary(
        claims=claims,
        checked=checked,
        flagged=checked - supported,
        **(counts | {ClaimVerdict.SUPPORTED.value: supported}),
        judged=sum(r.decided_by == ClaimMethod.JUDGED for r in records),
        not_checked=unchecked,
        judge_unreliable=judge_unreliable,
        chart_points=chart_points,
        chart_points_flagged=chart_points_flagged,
        decided_by=ClaimMethods(**{m.value: sum(r.decided_by == m for r in records) for m in ClaimMethod}),
        citation_accuracy=accuracy,
        coverage=_coverage(
            claims,
            checked,
            supported,
            accuracy,
            judge_unreliable=judge_unreliable,
            chart_points=chart_points,
            chart_points_flagged=chart_points_flagged,
        ),
    )


def _coverage(
    claims: int,
    checked: int,
    supported: int,
    accuracy: float | None,
    *,
    judge_unreliable: bool,
    chart_points: int = 0,
    chart_points_flagged: int = 0,
) -> str:
    if not claims:
        return "No claims to check"
    line = f"{checked} of {claims} claim{'s' if claims != 1 else ''} checked"
    if chart_points:
        line += f" ({chart_points} chart point{'s' if chart_points != 1 else ''})"
    if checked:
        flagged = checked - supported
        marked = flagged - chart_points_flagged
        line += f"; {supported} supported" + (f", {marked} marked [unverified]" if marked else "")
        if chart_points_flagged:
            line += f", {chart_points_flagged} chart point{'s' if chart_points_flagged != 1 else ''} not checking out"
        line += f" (citation accuracy {accuracy:.0%})" if accuracy is not None else ""
    if judge_unreliable:
        line += "; the claim judge was unreliable (it called a planted false claim supported), so its verdicts were not used"
    return line
