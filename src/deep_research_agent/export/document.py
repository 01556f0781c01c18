"""A delivered report as one document to hand on: ``ReportDocument``, built from the thread state's structured data.

Contract:
- ``report_document(values, ...)`` reads the state keys a delivered report leaves (``final_report``,
  ``cited_sources``, ``evidence``, ``sources``, ``citations``, ``claim_summary``, ``outcome``, ``messages``) and
  raises ``NoReport`` when the state holds no delivered report;
- the Sources list comes from ``cited_sources`` (one entry per Sources entry of the delivered report), each
  with when it was read from its evidence record's ``retrieved_at``; only a state without ``cited_sources``
  falls back to the report's own Sources lines (``report/markdown.py``'s parser);
- paper metadata (``authors``, ``year``, ``doi``) is kept when a source's state record carries it, never needed;
- ``body`` is the report without its title line and its Sources section (the document renders both itself);
- the question is the run's last user message that is not an answer to clarifying questions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ..domain.charts import ChartRecord
from ..domain.claims import ClaimRecord, ClaimSummary
from ..domain.names import CLARIFICATION_HEADER, HARNESS_MESSAGE_NAME, OUTCOME_NOTICES, Outcome
from ..report.charts import delivered_charts
from ..report.markdown import source_entries, split_sources

_TITLE_PREFIX = "# "


class NoReport(LookupError):
    """The thread (or run) holds no delivered report."""


class DocumentSource(BaseModel):
    """One entry of the document's Sources list."""

    index: int
    title: str = ""
    url: str | None = None
    read_at: datetime | None = Field(default=None, description="When the run retrieved it; None when never read.")
    verified: bool | None = None
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    doi: str | None = None

    @property
    def label(self) -> str:
        return self.title or self.url or f"Source {self.index}"


class ReportDocument(BaseModel):
    """Everything an exported report shows, independent of the format it is rendered in."""

    title: str
    question: str = ""
    date: datetime | None = Field(default=None, description="When the report was delivered (the state's time).")
    outcome: Outcome | None = None
    body: str = Field(description="The report's Markdown without its title line and its Sources section.")
    sources: list[DocumentSource] = Field(default_factory=list)
    claims: list[ClaimRecord] = Field(default_factory=list)
    summary: ClaimSummary | None = None
    chart_link: str = Field(
        default="",
        description="Where the server serves this report's chart images (``{chart_link}/{id}.png``), for the "
        "Markdown export's image links; empty when unknown.",
    )

    @property
    def outcome_notice(self) -> str:
        return OUTCOME_NOTICES.get(self.outcome, "") if self.outcome else ""

    @property
    def flagged_claims(self) -> list[ClaimRecord]:
        """The claims delivered marked ``[unverified]``, in report order (the k-th mark is the k-th of these)."""
        return [claim for claim in self.claims if claim.verdict.flags]

    @property
    def charts(self) -> list[ChartRecord]:
        """The report's delivered charts, in order (each block carries its checks: ``domain/charts.py``)."""
        return delivered_charts(self.body)

    def source(self, index: int) -> DocumentSource | None:
        return next((source for source in self.sources if source.index == index), None)


def report_document(
    values: Mapping[str, Any], *, created_at: str | datetime | None = None, question: str | None = None
) -> ReportDocument:
    """The document of the report in ``values`` (a thread state's values), dated ``created_at``."""
    report = values.get("final_report")
    if not isinstance(report, str) or not report.strip():
        raise NoReport("no delivered report")
    sections = split_sources(report)
    title, body = _title_and_body(sections.before + sections.after)
    asked = question if question is not None else latest_question(values.get("messages") or [])
    return ReportDocument(
        title=title or asked or "Research report",
        question=asked,
        date=_datetime(created_at),
        outcome=_outcome(values.get("outcome")),
        body=body,
        sources=_sources(values, sections.sources),
        claims=_valid(ClaimRecord, values.get("citations")),
        summary=_summary(values.get("claim_summary")),
    )


def latest_question(messages: Sequence[Any]) -> str:
    """The text of the last message the user wrote, skipping harness messages and clarification answers."""
    for message in reversed(messages):
        if not isinstance(message, Mapping) or message.get("type") not in ("human", "user"):
            continue
        extras = message.get("additional_kwargs") or {}
        if message.get("name") == HARNESS_MESSAGE_NAME or extras.get(HARNESS_MESSAGE_NAME):
            continue
        text = _text(message.get("content"))
        if text and not text.lstrip().startswith(CLARIFICATION_HEADER):
            return text
    return ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content]
        return "\n".join(part for part in parts if part).strip()
    return ""


def _title_and_body(markdown: str) -> tuple[str, str]:
    lines = markdown.strip().splitlines()
    if lines and lines[0].startswith(_TITLE_PREFIX):
        return lines[0][len(_TITLE_PREFIX) :].strip(" #"), "\n".join(lines[1:]).strip() + "\n"
    return "", markdown.strip() + "\n"


def _datetime(value: str | datetime | None) -> datetime | None:
    if isinstance(value, datetime) or value is None:
        return value
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _outcome(value: Any) -> Outcome | None:
    try:
        return Outcome(value) if value else None
    except ValueError:
        return None


def _summary(value: Any) -> ClaimSummary | None:
    if not isinstance(value, Mapping):
        return None
    try:
        return ClaimSummary.model_validate(value)
    except ValidationError:
        return None


def _valid(model: type[ClaimRecord], entries: Any) -> list[ClaimRecord]:
    """The entries that parse: one malformed record must not cost the document its other claims."""
    parsed = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            parsed.append(model.model_validate(entry))
        except ValidationError:
            continue
    return parsed


def _sources(values: Mapping[str, Any], sources_text: str) -> list[DocumentSource]:
    read_at = {
        e["id"]: e.get("retrieved_at")
        for e in values.get("evidence") or []
        if isinstance(e, Mapping) and isinstance(e.get("id"), str)
    }
    records = {r["url"]: r for r in values.get("sources") or [] if isinstance(r, Mapping) and r.get("url")}
    cited = [c for c in values.get("cited_sources") or [] if isinstance(c, Mapping) and isinstance(c.get("index"), int)]
    if not cited:
        cited = [{"index": e.index, "url": e.url, "title": e.title} for e in source_entries(sources_text)]
    listed = []
    for entry in sorted(cited, key=lambda c: c["index"]):
        url = entry.get("url") or None
        record = {**records.get(url or "", {}), **entry}
        evidence_id = entry.get("evidence_id")
        listed.append(
            DocumentSource(
                index=entry["index"],
                title=str(entry.get("title") or records.get(url or "", {}).get("title") or ""),
                url=url,
                read_at=_datetime(read_at.get(evidence_id)) if isinstance(evidence_id, str) else None,
                verified=entry.get("verified") if isinstance(entry.get("verified"), bool) else None,
                authors=[str(a) for a in record.get("authors") or [] if a],
                year=record.get("year") if isinstance(record.get("year"), int) else None,
                doi=str(record["doi"]) if record.get("doi") else None,
            )
        )
    return listed
