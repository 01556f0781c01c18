"""Two scorecards side by side: per-metric differences, a paired test, and a one-line verdict.

Contract:
- questions are paired by id; a metric is compared over the questions that have a value in both;
- the test is an exact paired sign-flip permutation test of the mean difference (every sign pattern up to
  ``EXACT_MAX`` pairs, else ``SAMPLES`` seeded random ones), two-sided: a few lines, so no statistics
  dependency (scipy is not in the lock);
- a metric moved when its p-value is under ``ALPHA``; the verdict is ``regression`` when a quality metric
  (``QUALITY``) moved the worse way or B has a fabricated citation, ``improvement`` when one moved the
  better way and none the worse, else ``no significant difference``;
- scorecards scored by different judges (model or prompts) are not compared on the judge's metrics.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from .scorecard import METRICS, Metric, Scorecard

ALPHA = 0.05
EXACT_MAX = 16
SAMPLES = 20_000
QUALITY = frozenset(
    {
        "citation_accuracy",
        # Fewer claims checked is worse even when the accuracy over them rises.
        "checked_share",
        "fabricated_citations",
        "fact_recall",
        "flagged",
        "effective_citations",
        "judge_overall",
        "judge_fact_accuracy",
    }
)


def paired_permutation_p(differences: list[float], *, seed: int = 0) -> float:
    """Two-sided p-value of the mean paired difference under random sign flips."""
    n = len(differences)
    if n == 0 or all(d == 0 for d in differences):
        return 1.0
    observed = abs(sum(differences))
    if n <= EXACT_MAX:
        flips = itertools.product((1, -1), repeat=n)
        total = 2**n
    else:
        rng = random.Random(seed)
        flips = (tuple(rng.choice((1, -1)) for _ in range(n)) for _ in range(SAMPLES))
        total = SAMPLES
    extreme = sum(
        1 for signs in flips if abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-12
    )
    return extreme / total


@dataclass(frozen=True)
class MetricComparison:
    metric: Metric
    n: int
    mean_a: float | None
    mean_b: float | None
    mean_difference: float | None
    p_value: float

    @property
    def moved(self) -> bool:
        return self.mean_difference not in (None, 0) and self.p_value < ALPHA

    @property
    def worse(self) -> bool:
        assert self.mean_difference is not None or not self.moved
        return self.moved and (self.mean_difference < 0) == self.metric.higher_is_better  # type: ignore[operator]


@dataclass(frozen=True)
class Comparison:
    a: Scorecard
    b: Scorecard
    metrics: list[MetricComparison]
    notes: list[str]

    @property
    def fabricated_in_b(self) -> int:
        return sum(len(q.fabricated_citations) for q in self.b.questions)

    @property
    def regressions(self) -> list[MetricComparison]:
        return [m for m in self.metrics if m.worse and m.metric.name in QUALITY]

    @property
    def improvements(self) -> list[MetricComparison]:
        return [m for m in self.metrics if m.moved and not m.worse and m.metric.name in QUALITY]

    @property
    def verdict(self) -> str:
        if self.regressions or self.fabricated_in_b:
            parts = [f"{m.metric.name} {m.mean_difference:+.3g} (p={m.p_value:.3g})" for m in self.regressions]
            if self.fabricated_in_b:
                parts.append(f"{self.fabricated_in_b} fabricated citation(s) in B")
            return "regression: " + "; ".join(parts)
        if self.improvements:
            parts = [f"{m.metric.name} {m.mean_difference:+.3g} (p={m.p_value:.3g})" for m in self.improvements]
            return "improvement: " + "; ".join(parts)
        return "no significant difference"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def compare(a: Scorecard, b: Scorecard) -> Comparison:
    notes = []
    same_judge = (
        a.judge is not None
        and b.judge is not None
        and a.judge.model == b.judge.model
        and [p.sha256 for p in a.judge.prompts] == [p.sha256 for p in b.judge.prompts]
    )
    if (a.judge or b.judge) and not same_judge:
        notes.append("The scorecards were not scored by the same judge (model and prompts): judge metrics left out.")
    if a.suite_sha256 != b.suite_sha256:
        notes.append(f"The suites differ ({a.suite} vs {b.suite}): only questions with the same id are paired.")
    by_id = {q.id: q for q in a.questions}
    pairs = [(by_id[q.id], q) for q in b.questions if q.id in by_id]
    if len(pairs) < len(b.questions) or len(pairs) < len(a.questions):
        notes.append(f"{len(pairs)} question(s) in both scorecards.")
    results = []
    for metric in METRICS:
        if metric.name.startswith("judge_") and not same_judge:
            continue
        values = [
            (va, vb)
            for qa, qb in pairs
            if (va := metric.value(qa)) is not None and (vb := metric.value(qb)) is not None
        ]
        if not values:
            continue
        differences = [vb - va for va, vb in values]
        results.append(
            MetricComparison(
                metric=metric,
                n=len(values),
                mean_a=_mean([va for va, _ in values]),
                mean_b=_mean([vb for _, vb in values]),
                mean_difference=_mean(differences),
                p_value=paired_permutation_p(differences),
            )
        )
    return Comparison(a=a, b=b, metrics=results, notes=notes)


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def render(comparison: Comparison) -> str:
    lines = [
        f"A: {comparison.a.suite} on {comparison.a.server} ({comparison.a.started_at})",
        f"B: {comparison.b.suite} on {comparison.b.server} ({comparison.b.started_at})",
        "",
        f"{'metric':<28} {'n':>3} {'A':>10} {'B':>10} {'B−A':>10} {'p':>7}",
    ]
    for m in comparison.metrics:
        mark = " worse" if m.worse else (" better" if m.moved else "")
        lines.append(
            f"{m.metric.name:<28} {m.n:>3} {_fmt(m.mean_a):>10} {_fmt(m.mean_b):>10} "
            f"{_fmt(m.mean_difference):>10} {m.p_value:>7.3g}{mark}"
        )
    lines += ["", *comparison.notes, f"Verdict: {comparison.verdict}"]
    return "\n".join(line for line in lines if line is not None) + "\n"
