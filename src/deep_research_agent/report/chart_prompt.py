"""What the orchestrator is told about charts: how to write a ```` ```chart ```` block (its prompt section), and,
when the findings handed over hold a series, that a chart may show it (``series_offer``).

Contract:
- ``charts_section(role, max_charts=...)``: the orchestrator's section while a report may hold charts;
- ``findings_series(findings)``: the largest series the findings state, one value per year in one unit, read
  with the figure rules (``evidence/figures.py``: a finding stating one year and one value in a unit is a
  point), stated as ``series.py``'s one-line summary; None under ``MIN_POINTS`` years;
- ``series_offer(findings)``: the line that offers the chart, or None.
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import prompts
from ..domain.findings import Finding
from ..domain.names import Role
from ..evidence.figures import COUNT, YEAR, figures_in
from .series import summarize_values

MIN_POINTS = 3


def charts_section(role: Role, *, max_charts: int) -> str:
    """The orchestrator's section on charts while a report may hold any (``max_charts`` above 0); nothing otherwise."""
    if role != Role.ORCHESTRATOR or max_charts <= 0:
        return ""
    return prompts.fill(prompts.Prompt.CHARTS, max_charts=str(max_charts))


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


def series_offer(findings: Iterable[Finding]) -> str | None:
    """The line telling the orchestrator the findings hold a series a chart may show; None without one."""
    series = findings_series(findings)
    return prompts.fill(prompts.Prompt.CHART_OFFER, series=series) if series else None
