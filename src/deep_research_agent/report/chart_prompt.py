"""What the orchestrator is told about charts, and when: only once a chart is called for, so a run without one
sends no chart text at all.

Contract:
- ``findings_series(findings)``: the largest series the findings state, one value per year in one unit, read
  with the figure rules (``evidence/figures.py``: a finding stating one year and one value in a unit is a
  point), stated as ``series.py``'s one-line summary; None under ``MIN_POINTS`` years;
- ``asks_for_chart(question)``: whether the user's words ask for a chart (a word for one in English, German,
  French, Spanish, Portuguese, Italian, Chinese or Japanese);
- ``chart_offer(findings, question, max_charts=...)``: the section that offers a chart and says how to write
  one (``prompts/chart_offer.md`` with ``prompts/charts.md``) when the findings hold a series or the user asked
  for one, and ``max_charts`` is above 0; None otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .. import prompts
from ..domain.findings import Finding
from ..evidence.figures import COUNT, YEAR, figures_in
from .series import summarize_values

MIN_POINTS = 3
_ASKS_RE = re.compile(
    r"\b(?:chart|graph|plot|visuali[sz]|diagram|grafi[ck]|gr[aá]fico|graphique|histogram)|图表|图形|曲线图|グラフ|チャート",
    re.IGNORECASE,
)


def findings_series(findings: Iterable[Finding]) -> str | None:
    """The findings' largest yearly series in one unit, summarised in one line; None when there is none."""
    by_unit: dict[str, dict[int, float]] = {}
    for finding in findings:
        figures = figures_in(finding.finding)
        years = {f.value for f in figures if f.kind == YEAR}
        values = [f for f in figures if f.kind == COUNT and f.unit]
        if len(years) == 1 and len(values) == 1:
            by_unit.setdefault(values[0].unit, {})[int(next(iter(years)))] = float(values[0].value)
    if not by_unit:
        return None
    unit, points = max(by_unit.items(), key=lambda item: len(item[1]))
    if len(points) < MIN_POINTS:
        return None
    years = sorted(points)
    return summarize_values([str(y) for y in years], [points[y] for y in years]).sentence(f"{unit} by year")


def asks_for_chart(question: str) -> bool:
    return _ASKS_RE.search(question) is not None


def chart_offer(findings: Iterable[Finding], question: str, *, max_charts: int) -> str | None:
    """The section offering a chart, with how to write one; None when none is called for (see the contract)."""
    if max_charts <= 0:
        return None
    series = findings_series(findings)
    if series:
        reason = f"The findings so far hold a series: {series} A chart may show it."
    elif asks_for_chart(question):
        reason = "The user asked for a chart."
    else:
        return None
    how = prompts.fill(prompts.Prompt.CHARTS, max_charts=str(max_charts))
    return prompts.fill(prompts.Prompt.CHART_OFFER, reason=f"{reason} {how}")
