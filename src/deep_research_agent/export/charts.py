"""A checked chart drawn by the product itself, server-side: matplotlib, to PNG or SVG, never model-written code.

Contract:
- ``render_chart(record, ChartImage.PNG | ChartImage.SVG)`` draws a delivered chart (``domain/charts.py``
  ``ChartRecord``) from its spec and checks alone: the points that check out filled, the ones that do not
  hollow and numbered like their notes (``report/charts.py`` ``point_notes``); ``NotDrawn`` for a chart the
  checks left undrawn. The same record gives the same bytes (no dates or random ids in the files), and the
  last few drawings are kept, so a page that shows a chart twice draws it once;
- ``data_url(record, format)``: the drawing as a ``data:`` URL, how the HTML and PDF exports embed it (the PDF
  engine loads nothing else: ``images.embedded_only_fetcher``); ``figure_html`` and ``appendix_html`` are a
  chart in the HTML page (image with alt text, caption, notes) and its data table in the appendix.

matplotlib is imported on first use (it costs about a second to import), and drawing holds one lock: pyplot is
never used, but matplotlib's settings and font cache are process-wide.
"""

from __future__ import annotations

import base64
import io
import threading
from enum import StrEnum
from functools import lru_cache
from html import escape
from typing import Any

from ..domain.charts import ChartKind, ChartRecord, format_x
from ..report.charts import alt_text, caption_text, data_table, point_notes, superscript

_LOCK = threading.Lock()
_CHECKED = "#1f5fa8"
_FAILED = "#c2410c"
_WIDTH_IN, _HEIGHT_IN = 7.2, 3.9
_PNG_DPI = 150


class ChartImage(StrEnum):
    PNG = "png"
    SVG = "svg"

    @property
    def media_type(self) -> str:
        return "image/png" if self is ChartImage.PNG else "image/svg+xml"


class NotDrawn(ValueError):
    """The chart's points mostly fail their checks, so it has no picture; ``str()`` says why."""


def render_chart(record: ChartRecord, image: ChartImage) -> bytes:
    """The chart drawn as ``image`` (see the module's contract)."""
    if not record.drawn:
        raise NotDrawn(record.reason or "the chart is not drawn")
    return _render(record.model_dump_json(), ChartImage(image))


def data_url(record: ChartRecord, image: ChartImage) -> str:
    return f"data:{image.media_type};base64,{base64.b64encode(render_chart(record, image)).decode('ascii')}"


@lru_cache(maxsize=32)
def _render(record_json: str, image: ChartImage) -> bytes:
    record = ChartRecord.model_validate_json(record_json)
    with _LOCK:
        return _draw(record, image)


def _draw(record: ChartRecord, image: ChartImage) -> bytes:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    # Fixed ids in the SVG, so the same chart is the same file.
    matplotlib.rcParams["svg.hashsalt"] = "deep-research-agent"
    matplotlib.rcParams["font.family"] = ["DejaVu Sans", "WenQuanYi Micro Hei", "sans-serif"]
    spec = record.spec
    figure = Figure(figsize=(_WIDTH_IN, _HEIGHT_IN), layout="constrained")
    axes = figure.add_subplot()
    numeric = spec.kind != ChartKind.BAR and all(not isinstance(p.x, str) for p in spec.points)
    xs: list[Any] = [p.x for p in spec.points] if numeric else list(range(len(spec.points)))
    ys = [p.y for p in spec.points]
    failing = set(record.failing)
    ok = [i for i in range(len(ys)) if i not in failing]
    bad = [i for i in range(len(ys)) if i in failing]
    if spec.kind == ChartKind.BAR:
        bars = axes.bar(xs, ys, color=_CHECKED, edgecolor=_CHECKED, linewidth=1.2)
        for i in bad:
            bars[i].set_facecolor("white")
            bars[i].set_edgecolor(_FAILED)
            bars[i].set_hatch("///")
    else:
        if spec.kind == ChartKind.LINE:
            axes.plot(xs, ys, color=_CHECKED, linewidth=1.8, zorder=1)
        axes.scatter([xs[i] for i in ok], [ys[i] for i in ok], s=42, color=_CHECKED, zorder=2, label="checked")
        if bad:
            axes.scatter(
                [xs[i] for i in bad],
                [ys[i] for i in bad],
                s=56,
                facecolors="white",
                edgecolors=_FAILED,
                linewidths=1.8,
                zorder=3,
                label="does not check out",
            )
    for number, i in enumerate(bad, start=1):
        axes.annotate(
            superscript(number),
            (xs[i], ys[i]),
            textcoords="offset points",
            xytext=(6, 6),
            color=_FAILED,
            fontsize=12,
        )
    if not numeric:
        axes.set_xticks(
            xs,
            [format_x(p.x) for p in spec.points],
            rotation=30 if len(xs) > 8 else 0,
            ha="right" if len(xs) > 8 else "center",
        )
    elif all(isinstance(p.x, int) for p in spec.points):
        axes.xaxis.get_major_locator().set_params(integer=True)
    axes.set_title(spec.title, fontsize=12, loc="left")
    axes.set_xlabel(spec.x_label)
    unit = f" ({spec.unit})" if spec.unit else ""
    axes.set_ylabel(f"{spec.y_label}{unit}" if spec.y_label else spec.unit)
    axes.grid(axis="y", color="#dddddd", linewidth=0.8)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    if bad and spec.kind != ChartKind.BAR:
        axes.legend(frameon=False, fontsize=9, loc="best")
    buffer = io.BytesIO()
    if image is ChartImage.PNG:
        figure.savefig(buffer, format="png", dpi=_PNG_DPI, metadata={"Software": None})
    else:
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return buffer.getvalue()


# --- a chart in each export --------------------------------------------------------------------------------


def figure_html(record: ChartRecord, number: int, image: ChartImage) -> str:
    """A delivered chart as an HTML ``<figure>``: the drawing embedded as a ``data:`` URL with its alt text (none
    when not drawn), the caption, the notes on failing points, and a link to its data in the appendix."""
    parts = [f'<figure class="chart" id="chart-{number}">']
    if record.drawn:
        parts.append(f'<img src="{data_url(record, image)}" alt="{escape(alt_text(record), quote=True)}">')
    parts.append(
        f"<figcaption><strong>Chart {number}: {escape(record.spec.title)}.</strong> {escape(caption_text(record))}"
    )
    notes = point_notes(record)
    if notes:
        parts.append('<ul class="chart-notes">' + "".join(f"<li>{escape(note)}</li>" for note in notes) + "</ul>")
    parts.append(f' <a href="#chart-data-{number}">Data: appendix</a></figcaption></figure>')
    return "".join(parts)


def appendix_html(records: list[ChartRecord]) -> list[str]:
    """The appendix of chart data: one table per chart (label, value, source, check)."""
    if not records:
        return []
    parts = ['<section class="chart-data"><h2>Appendix: chart data</h2>']
    for number, record in enumerate(records, start=1):
        header, _, *rows = data_rows(record)
        parts.append(f'<h3 id="chart-data-{number}">Chart {number}: {escape(record.spec.title)}</h3><table>')
        parts.append("<tr>" + "".join(f"<th>{escape(cell)}</th>" for cell in header) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows]
        parts.append("</table>")
    parts.append("</section>")
    return parts


def data_rows(record: ChartRecord) -> list[list[str]]:
    """``report/charts.py``'s data table as cells: the header, the separator, then one row per point."""
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in data_table(record)]
