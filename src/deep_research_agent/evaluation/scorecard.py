"""The scorecard: what one suite run measured, per question and in summary, as versioned JSON and Markdown.

Contract:
- ``Scorecard`` is the JSON written to ``scorecard.json``; ``SCORECARD_VERSION`` is bumped when a field
  changes meaning or goes away (new fields do not bump it); ``Scorecard.load`` refuses another version;
- ``METRICS`` names every per-question metric a scorecard summarises and ``compare`` tests, with the
  direction that is better; ``summary`` is each metric's mean over the questions that have a value;
- ``render_markdown`` is the readable report: the run's settings, a text bar chart per metric (one bar per
  question, so it reads in a terminal, a diff and on GitHub without a plotting library), and the problems.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

SCORECARD_VERSION = 1


class FactCheck(BaseModel):
    """One expected fact: is it in the report, and in a sentence whose citation supports it."""

    fact: str
    in_report: bool
    supported: bool


class RaceScores(BaseModel):
    """RACE-style quality, 0..1 per dimension: against the reference, the report's share of the two scores."""

    comprehensiveness: float
    depth: float
    instruction_following: float
    readability: float
    overall: float
    against_reference: bool


class JudgeScores(BaseModel):
    """What the judge model said of one report; ``error`` when it could not say it."""

    race: RaceScores | None = None
    fact_claims: int = 0
    fact_supported: int = 0
    fact_accuracy: float | None = Field(default=None, description="Claims the judge found supported ÷ claims judged.")
    error: str | None = None


class QuestionResult(BaseModel):
    """One question's run, measured from its own events and thread state."""

    id: str
    question: str
    language: str = "en"
    ok: bool = Field(description="The run reached an end status and its state was read.")
    error: str | None = None
    thread_id: str | None = None
    end_state: str | None = None
    end_reason: str | None = None
    outcome: str | None = None
    clarified: bool = Field(default=False, description="The agent asked questions anyway and got a no-answers reply.")
    report_chars: int = 0
    claims: int = 0
    checked: int = Field(default=0, description="Claims something checked; the rest are unchecked.")
    supported: int = 0
    flagged: int = 0
    flagged_by_kind: dict[str, int] = Field(default_factory=dict)
    judged: int = 0
    unchecked: int = 0
    judge_unreliable: bool = False
    citation_accuracy: float | None = Field(
        default=None, description="Supported claims ÷ checked claims (FACT, over the checked claims)."
    )
    coverage: str = Field(default="", description="The run's own sentence: '9 of 12 claims checked; 9 supported ...'.")
    effective_citations: int = Field(default=0, description="Distinct sources that support at least one claim (FACT).")
    fabricated_citations: list[str] = Field(default_factory=list, description="URLs the report cites, never retrieved.")
    sources_seen: int = 0
    sources_read: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    facts: list[FactCheck] = Field(default_factory=list)
    fact_recall: float | None = Field(default=None, description="Expected facts stated with a supporting citation.")
    judge: JudgeScores | None = None


class JudgePrompt(BaseModel):
    name: str
    sha256: str
    text: str


class JudgeInfo(BaseModel):
    """Which judge scored the suite: scores are only comparable under one judge (same model and prompts)."""

    model: str
    base_url: str
    date: str
    prompts: list[JudgePrompt]


class MetricSummary(BaseModel):
    mean: float | None
    n: int


class Scorecard(BaseModel):
    version: int = SCORECARD_VERSION
    suite: str
    suite_path: str
    suite_sha256: str
    server: str
    tier: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    started_at: str
    finished_at: str
    wall_s: float
    judge: JudgeInfo | None = None
    problems: list[str] = Field(default_factory=list)
    complete: bool = Field(description="Every question of the suite ran to an end status.")
    questions: list[QuestionResult] = Field(default_factory=list)
    summary: dict[str, MetricSummary] = Field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Scorecard:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != SCORECARD_VERSION:
            found = data.get("version") if isinstance(data, dict) else None
            raise ValueError(f"{path}: scorecard version {found!r}, this harness reads version {SCORECARD_VERSION}.")
        return cls.model_validate(data)

    def summarise(self) -> Scorecard:
        summary = {}
        for metric in METRICS:
            values = [v for q in self.questions if (v := metric.value(q)) is not None]
            summary[metric.name] = MetricSummary(mean=sum(values) / len(values) if values else None, n=len(values))
        return self.model_copy(update={"summary": summary})


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    higher_is_better: bool
    value: Callable[[QuestionResult], float | None]
    unit: str = ""


def _judge(field: str) -> Callable[[QuestionResult], float | None]:
    def value(q: QuestionResult) -> float | None:
        if q.judge is None:
            return None
        if field == "fact_accuracy":
            return q.judge.fact_accuracy
        return getattr(q.judge.race, field) if q.judge.race else None

    return value


def _if_ok(getter: Callable[[QuestionResult], float | None]) -> Callable[[QuestionResult], float | None]:
    return lambda q: getter(q) if q.ok else None


METRICS: tuple[Metric, ...] = (
    Metric("citation_accuracy", "Citation accuracy (supported ÷ checked claims)", True, lambda q: q.citation_accuracy),
    Metric(
        "checked_share",
        "Claims checked (checked ÷ claims)",
        True,
        _if_ok(lambda q: q.checked / q.claims if q.claims else None),
    ),
    Metric("effective_citations", "Effective citations", True, _if_ok(lambda q: q.effective_citations)),
    Metric("fabricated_citations", "Fabricated citations", False, _if_ok(lambda q: len(q.fabricated_citations))),
    Metric("fact_recall", "Expected facts stated and cited", True, lambda q: q.fact_recall),
    Metric("claims", "Claims", True, _if_ok(lambda q: q.claims)),
    Metric("flagged", "Claims flagged [unverified]", False, _if_ok(lambda q: q.flagged)),
    Metric("sources_read", "Sources read", True, _if_ok(lambda q: q.sources_read)),
    Metric("sources_seen", "Sources seen", True, _if_ok(lambda q: q.sources_seen)),
    Metric("model_calls", "Model calls", False, _if_ok(lambda q: q.model_calls)),
    Metric("total_tokens", "Tokens", False, _if_ok(lambda q: q.total_tokens)),
    Metric("cost_usd", "Cost", False, _if_ok(lambda q: q.cost_usd), unit="$"),
    Metric("wall_s", "Wall time", False, _if_ok(lambda q: q.wall_s), unit="s"),
    Metric("judge_overall", "Judge: RACE overall", True, _judge("overall")),
    Metric("judge_comprehensiveness", "Judge: comprehensiveness", True, _judge("comprehensiveness")),
    Metric("judge_depth", "Judge: depth", True, _judge("depth")),
    Metric("judge_instruction_following", "Judge: instruction following", True, _judge("instruction_following")),
    Metric("judge_readability", "Judge: readability", True, _judge("readability")),
    Metric("judge_fact_accuracy", "Judge: FACT claim support", True, _judge("fact_accuracy")),
)
METRIC_BY_NAME = {metric.name: metric for metric in METRICS}

BAR_WIDTH = 30


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    if unit == "$":
        return f"${value:.4f}"
    text = f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else f"{int(value)}"
    return f"{text}{' s' if unit == 's' else ''}"


def bar_chart(rows: list[tuple[str, float | None]], unit: str = "") -> list[str]:
    """A text bar chart, one bar per row, scaled to the largest value."""
    top = max((v for _, v in rows if v is not None), default=0.0) or 1.0
    width = max((len(label) for label, _ in rows), default=0)
    lines = []
    for label, value in rows:
        bar = "█" * round(BAR_WIDTH * value / top) if value is not None else ""
        lines.append(f"{label.ljust(width)} │{bar.ljust(BAR_WIDTH)}│ {_number(value, unit)}")
    return lines


def render_markdown(card: Scorecard) -> str:
    lines = [f"# Scorecard: {card.suite}", ""]
    done = sum(1 for q in card.questions if q.ok)
    lines += [
        f"- Server: `{card.server}`; tier: `{card.tier or 'server default'}`; config: `{json.dumps(card.config)}`",
        f"- Suite: `{card.suite_path}` (sha256 `{card.suite_sha256[:12]}`), {len(card.questions)} question(s), "
        f"{done} ran to an end status{'' if card.complete else ' — INCOMPLETE'}",
        f"- Started {card.started_at}, finished {card.finished_at}, {card.wall_s:.1f} s",
    ]
    if card.judge:
        lines.append(f"- Judge: `{card.judge.model}` at `{card.judge.base_url}` on {card.judge.date}")
        lines += [f"  - prompt `{p.name}` sha256 `{p.sha256[:12]}`" for p in card.judge.prompts]
    else:
        lines.append("- Judge: none configured (no RACE or judged FACT scores)")
    if card.problems:
        lines += ["", "## Problems", ""] + [f"- {problem}" for problem in card.problems]
    lines += ["", "## Summary", "", "| Metric | Mean | Questions |", "|---|---|---|"]
    for metric in METRICS:
        summary = card.summary.get(metric.name)
        if summary and summary.n:
            lines.append(f"| {metric.label} | {_number(summary.mean, metric.unit)} | {summary.n} |")
    lines += ["", "## Questions", "", "| Id | End | Outcome | Claims | Facts | Wall |"]
    lines.append("|---|---|---|---|---|---|")
    for q in card.questions:
        end = f"{q.end_state}/{q.end_reason}" if q.ok else f"failed: {q.error}"
        facts = f"{sum(f.supported for f in q.facts)}/{len(q.facts)}" if q.facts else "–"
        claims = q.coverage or f"{q.claims} claims"
        lines.append(f"| {q.id} | {end} | {q.outcome or '–'} | {claims} | {facts} | {q.wall_s:.1f} s |")
    lines += ["", "## Charts", ""]
    for metric in METRICS:
        rows = [(q.id, metric.value(q)) for q in card.questions]
        if all(value is None for _, value in rows):
            continue
        better = "higher is better" if metric.higher_is_better else "lower is better"
        lines += [f"### {metric.label} ({better})", "", "```text", *bar_chart(rows, metric.unit), "```", ""]
    return "\n".join(lines).rstrip() + "\n"
