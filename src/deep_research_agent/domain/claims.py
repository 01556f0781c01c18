"""The verdicts of a delivered report's checks: per citation and per claim, and their counts.

``report/citations.py`` and ``report/claims.py`` decide them; the run's evidence store keeps them, the
``report`` and ``usage`` events carry the counts and the thread state the records.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

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


class ClaimMethods(BaseModel):
    """How many of a report's claims each way of deciding a verdict decided (``ClaimMethod``)."""

    model_config = ConfigDict(extra="forbid")

    figures_and_quotes: int = 0
    names_and_direction: int = 0
    judged: int = 0
    not_checked: int = 0


class ClaimSummary(BaseModel):
    """Counts of the delivered report's claims (on the ``report`` and ``usage`` events)."""

    model_config = ConfigDict(extra="forbid")

    claims: int = Field(
        default=0, description="Claims checked: cited sentences, items and cells, and uncited ones stating a figure."
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
    judged: int = Field(default=0, description="Claims whose verdict the model judge decided.")
    not_checked: int = Field(
        default=0, description="Supported claims nothing checked for meaning: no figure, quote or name, and no judge."
    )
    decided_by: ClaimMethods = Field(
        default_factory=ClaimMethods, description="How many claims each way of deciding a verdict decided."
    )
    citation_accuracy: float | None = Field(
        default=None,
        description="Supported claims ÷ claims (DeepResearch Bench's FACT citation accuracy); absent without claims.",
    )
    language: str = Field(
        default="",
        description="The report's language when it is told and not English (a code such as fr); empty otherwise.",
    )
    not_checked_in_language: str = Field(
        default="",
        description="What the checks do not read in a report not in English (its claims may translate their "
        "sources); empty for an English one.",
    )
