"""Per-question scores measured from the run itself: its end status, ``usage`` event and final thread state.

Contract (``measure``):
- claims, checked, supported, flagged, flags by kind, the citation accuracy (supported ÷ checked claims) and
  the coverage sentence come from the state's ``claim_summary`` as the run made them
  (``domain.claims.summarise_claims``, the report gate's own verdicts), never computed again here; effective
  citations are the distinct source URLs of the supported claims in ``citations``, as DeepResearch Bench's
  FACT defines them;
- a fabricated citation is a URL the report cites or links (its ``citations``, ``cited_sources`` and the
  URLs in ``final_report``) that is in none of the run's ``evidence`` records: it must always be none;
- sources seen are the state's ``sources``; sources read the distinct URLs of ``page`` and ``corpus`` evidence;
- model calls, tokens and cost come from the ``usage`` event, the end from the one ``done``/``error`` status;
- an expected fact is ``in_report`` when its words are in the report, and ``supported`` when they are in one
  claim whose verdict is ``supported``: a fact is credited only with a citation that holds it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..domain.claims import ClaimSummary
from .scorecard import FactCheck, QuestionResult
from .suite import Question

END_STATES = ("done", "error")
READ_KINDS = frozenset({"page", "corpus"})
SUPPORTED = "supported"
# Counts of ClaimSummary that are not verdicts of a flagged claim.
_NOT_FLAG_KINDS = frozenset(
    {
        "claims",
        "checked",
        "supported",
        "flagged",
        "unchecked",
        "not_checked",
        "judged",
        "judge_unreliable",
        "chart_points",
        "decided_by",
        "citation_accuracy",
        "coverage",
    }
)
FLAG_KINDS = tuple(name for name in ClaimSummary.model_fields if name not in _NOT_FLAG_KINDS)
_URL = re.compile(r"https?://[^\s<>()\[\]\"'`]+")


def _normal(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text.casefold())
    stripped = "".join(c for c in folded if not unicodedata.combining(c))
    # Inner punctuation stays (``8,848.86``, ``HTTP/3``); a word's trailing full stop or comma does not.
    return " ".join(word.strip(".,") for word in re.sub(r"[^\w.,%/-]+", " ", stripped).split())


def _norm_url(url: str) -> str:
    return url.rstrip(".,;:!?*_").rstrip("/")


def _contains(text: str, fact: str) -> bool:
    """The fact's words, in order and next to each other, case, accents and punctuation aside."""
    return f" {_normal(fact)} " in f" {_normal(text)} "


def end_status(events: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    ends = [e for e in events if e.get("type") == "status" and e.get("state") in END_STATES]
    return ends[-1] if ends else None


def check_facts(facts: Sequence[str], report: str, citations: Sequence[Mapping[str, Any]]) -> list[FactCheck]:
    held = [str(c.get("claim") or "") for c in citations if c.get("verdict") == SUPPORTED]
    return [
        FactCheck(fact=fact, in_report=_contains(report, fact), supported=any(_contains(claim, fact) for claim in held))
        for fact in facts
    ]


def fabricated(values: Mapping[str, Any]) -> list[str]:
    retrieved = {_norm_url(str(e.get("url") or "")) for e in values.get("evidence") or []}
    cited = {str(s.get("url") or "") for c in values.get("citations") or [] for s in c.get("sources") or []}
    cited |= {str(s.get("url") or "") for s in values.get("cited_sources") or []}
    cited |= set(_URL.findall(str(values.get("final_report") or "")))
    return sorted({_norm_url(url) for url in cited if url} - retrieved)


def measure(
    question: Question,
    events: Sequence[Mapping[str, Any]],
    values: Mapping[str, Any],
    *,
    thread_id: str,
    wall_s: float,
    clarified: bool = False,
) -> QuestionResult:
    end = end_status(events)
    usage = next((e for e in reversed(events) if e.get("type") == "usage"), {})
    summary = ClaimSummary.model_validate(values.get("claim_summary") or {})
    citations = [c for c in values.get("citations") or [] if isinstance(c, dict)]
    report = str(values.get("final_report") or "")
    supporting = {
        _norm_url(str(s.get("url")))
        for c in citations
        if c.get("verdict") == SUPPORTED
        for s in c.get("sources") or []
        if s.get("url")
    }
    read = {str(e.get("url")) for e in values.get("evidence") or [] if e.get("kind") in READ_KINDS}
    facts = check_facts(question.facts, report, citations)
    return QuestionResult(
        id=question.id,
        question=question.question,
        language=question.language,
        ok=end is not None,
        error=None if end is not None else "the run ended without an end status",
        thread_id=thread_id,
        end_state=end.get("state") if end else None,
        end_reason=end.get("reason") if end else None,
        outcome=(end.get("outcome") if end else None) or values.get("outcome"),
        clarified=clarified,
        report_chars=len(report),
        claims=summary.claims,
        checked=summary.checked,
        supported=summary.supported,
        flagged=summary.flagged,
        flagged_by_kind={kind: count for kind in FLAG_KINDS if (count := getattr(summary, kind))},
        judged=summary.judged,
        unchecked=summary.unchecked,
        judge_unreliable=summary.judge_unreliable,
        citation_accuracy=summary.citation_accuracy,
        coverage=summary.coverage,
        effective_citations=len(supporting),
        fabricated_citations=fabricated(values),
        sources_seen=len(values.get("sources") or []),
        sources_read=len(read),
        model_calls=int(usage.get("model_calls") or 0),
        tool_calls=int(usage.get("tool_calls") or 0),
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        total_tokens=int(usage.get("total_tokens") or 0),
        cost_usd=float(usage.get("cost_usd") or 0.0),
        wall_s=round(wall_s, 3),
        facts=facts,
        fact_recall=sum(f.supported for f in facts) / len(facts) if facts else None,
    )
