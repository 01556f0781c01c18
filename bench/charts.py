"""What charts cost: checking a report's chart, drawing it on demand, and embedding it in the exports.

A report of 30 claims against 10 fetched pages (the numbered 50 KB tidal reports of ``testkit/web.py``) carries a
line chart of 24 points, each citing the page that gives its value, two of them planted wrong. Measured, each the
median of ``ROUNDS`` rounds in the same run:

- the report gate's vet-and-deliver with the chart, against the same report without it (the baseline): what
  checking 24 points adds;
- drawing the checked chart with matplotlib, PNG and SVG, each time a new drawing (the cache defeated), and a
  cached one; and the first drawing of the process (it imports matplotlib), once;
- the HTML and PDF exports with the chart against the same exports without it (the baseline).

Times are wall-clock (matplotlib and WeasyPrint are CPU-bound in this thread; on a shared machine wall time
counts other processes too, so each figure is printed beside its baseline measured in the same run).

Run: ``uv run python -m bench.charts``. Exits 1 when a warm PNG drawing takes 500 ms or more.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable

from deep_research_agent.evidence.store import EvidenceStore
from deep_research_agent.export import ExportFormat, ReportDocument, render, report_document
from deep_research_agent.export.charts import ChartImage, render_chart
from deep_research_agent.report.charts import delivered_charts
from deep_research_agent.report.vetting import finalise, vet_report
from testkit.web import numbered_article

PAGES = 10
POINTS = 24
ROUNDS = 9
BUDGET_MS = 500.0


def url(n: int) -> str:
    return f"https://tides.example/reports/{n}"


def level(n: int, i: int) -> str:
    return f"{1 + (n * i) % 97 / 100:.2f}"


def store() -> EvidenceStore:
    evidence = EvidenceStore()
    for n in range(1, PAGES + 1):
        article = numbered_article(n)
        text = f"{article.title}\n\n" + "\n\n".join(article.paragraphs)
        evidence.add_evidence(url=url(n), title=article.title, kind="page", text=text, agent="research-subagent")
    return evidence


def report(*, chart: bool) -> str:
    claims = [
        f"Survey {n} logged {i} readings at station N-{n:03d}-{i:03d}, with a mean level of {level(n, i)} metres [{n}]."
        for k in range(30)
        for n, i in [(k % PAGES + 1, 10 + k)]
    ]
    body = "\n\n".join(" ".join(claims[i : i + 3]) for i in range(0, len(claims), 3))
    # Point k: station N-00n-0ii of page n, its reading count as x (the label its sentence gives) and its level.
    points = []
    for k in range(POINTS):
        n, i = k % PAGES + 1, 40 + k
        value = float(level(n, i)) + (0.37 if k in (5, 17) else 0)  # two planted wrong
        points.append({"x": i, "y": round(value, 2), "cite": n})
    spec = {"kind": "line", "title": "Mean gauge level", "x_label": "Readings", "y_label": "Level", "unit": "metres"}
    block = f"```chart\n{json.dumps({**spec, 'points': points})}\n```\n\n" if chart else ""
    sources = "\n".join(f"[{n}] Tidal survey report {n} — {url(n)}" for n in range(1, PAGES + 1))
    return f"# Tidal surveys\n\n{body}\n\n{block}## Sources\n{sources}\n"


def median_ms(fn: Callable[[], object], rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> int:
    evidence = store()
    with_chart, without = report(chart=True), report(chart=False)
    delivered = finalise(vet_report(with_chart, evidence), evidence)
    [record] = delivered_charts(delivered)
    print(f"chart: {len(record.spec.points)} points, {len(record.failing)} failing, drawn: {record.drawn}")

    start = time.perf_counter()
    render_chart(record, ChartImage.PNG)
    first = (time.perf_counter() - start) * 1000
    variants = iter(record.model_copy(update={"caption": f"round {k}"}) for k in range(4 * ROUNDS))
    png = median_ms(lambda: render_chart(next(variants), ChartImage.PNG))
    svg = median_ms(lambda: render_chart(next(variants), ChartImage.SVG))
    cached = median_ms(lambda: render_chart(record, ChartImage.PNG))
    png_bytes, svg_bytes = len(render_chart(record, ChartImage.PNG)), len(render_chart(record, ChartImage.SVG))

    vet_chart = median_ms(lambda: finalise(vet_report(with_chart, evidence), evidence))
    vet_plain = median_ms(lambda: finalise(vet_report(without, evidence), evidence))

    def document(text: str) -> ReportDocument:
        return report_document({"final_report": text, "messages": [{"type": "human", "content": "Tides?"}]})

    charted_doc, plain_doc = document(delivered), document(finalise(vet_report(without, evidence), evidence))
    exports = {}
    for format in (ExportFormat.HTML, ExportFormat.PDF, ExportFormat.DOCX):
        # A new caption each round: the chart is drawn inside every export, never taken from the cache.
        fresh = [
            charted_doc.model_copy(update={"body": charted_doc.body.replace('"caption": "', f'"caption": "{k} ', 1)})
            for k in range(ROUNDS)
        ]
        exports[format] = (
            median_ms(lambda f=format, docs=iter(fresh): render(next(docs), f)),
            median_ms(lambda f=format: render(plain_doc, f)),
        )

    print("                                              median     baseline   ratio")
    print(
        f"vet + deliver, report with the chart:      {vet_chart:8.1f} ms  {vet_plain:8.1f} ms  {vet_chart / vet_plain:5.2f}x"
    )
    print(f"draw PNG ({png_bytes / 1000:.0f} KB), new drawing:            {png:8.1f} ms")
    print(f"draw SVG ({svg_bytes / 1000:.0f} KB), new drawing:            {svg:8.1f} ms")
    print(f"draw PNG, cached:                           {cached:8.3f} ms")
    print(f"first drawing of the process (imports):     {first:8.1f} ms")
    for format, (charted, plain) in exports.items():
        print(
            f"export {format.value:<4} with the chart drawn inside:  {charted:8.1f} ms  {plain:8.1f} ms  {charted / plain:5.2f}x"
        )
    return 0 if png < BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
