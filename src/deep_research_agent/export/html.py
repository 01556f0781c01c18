"""A report document as one self-contained HTML page (also the input of the PDF engine).

Each ``[n]`` links to its source: to the source's web address when it has one, else to its entry in the
Sources list (``#source-n``); each ``[unverified]`` mark is highlighted and carries a numbered note
(``#note-k``) that quotes the claim and says why; each delivered chart is a figure with its drawing embedded
(``charts.py``), its data in an appendix. Everything from the report or its sources is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from markdown_it.renderer import RendererHTML
from markdown_it.token import Token

from ..domain.charts import ChartRecord
from ..report.charts import is_chart_fence
from .charts import ChartImage, appendix_html, figure_html
from .document import ReportDocument
from .markup import CITATION, UNVERIFIED, markdown_parser, unverified_marks
from .wording import appendix_rows, header_lines, note_text, source_details

# Fonts the project installs (run.sh): DejaVu for Latin, Greek, Cyrillic, Hebrew and Arabic, WenQuanYi
# Micro Hei for Chinese, Japanese and Korean; anything else falls back to whatever fontconfig finds.
FONT_STACK = '"DejaVu Sans", "WenQuanYi Micro Hei", "Noto Sans CJK SC", sans-serif'
STYLE = f"""
body {{ font-family: {FONT_STACK}; line-height: 1.5; max-width: 48rem; margin: 2rem auto; padding: 0 1rem; }}
code, pre {{ font-family: "DejaVu Sans Mono", "WenQuanYi Micro Hei Mono", monospace; font-size: 0.9em; }}
pre {{ background: #f4f4f4; padding: 0.75rem; white-space: pre-wrap; }}
table {{ border-collapse: collapse; margin: 1rem 0; }}
th, td {{ border: 1px solid #999; padding: 0.25rem 0.5rem; text-align: start; vertical-align: top; }}
.meta {{ color: #444; }}
.notice {{ border-inline-start: 4px solid #c80; padding: 0.25rem 0.75rem; background: #fff6e5; }}
mark.unverified {{ background: #ffe3e3; }}
a.citation {{ text-decoration: none; }}
section ul {{ list-style: none; padding-inline-start: 0; }}
figure.chart {{ margin: 1.5rem 0; }}
figure.chart img {{ max-width: 100%; height: auto; }}
figure.chart figcaption {{ font-size: 0.9em; color: #333; }}
ul.chart-notes {{ list-style: none; padding-inline-start: 0; }}
@page {{ size: A4; margin: 2cm; }}
"""


def render_html(document: ReportDocument, chart_image: ChartImage = ChartImage.SVG) -> str:
    """The page; its charts embedded as ``chart_image`` (SVG; the PDF takes PNG)."""
    parser = markdown_parser()
    parser.add_render_rule(CITATION, _citation)
    parser.add_render_rule(UNVERIFIED, _unverified)
    parser.add_render_rule("fence", _fence)
    charts = {record.id: number for number, record in enumerate(document.charts, start=1)}
    env = {"document": document, "charts": charts, "chart_image": chart_image}
    body = parser.render(document.body, env)
    parts = [
        "<!doctype html>",
        '<html lang="und"><head><meta charset="utf-8">',
        f"<title>{escape(document.title)}</title><style>{STYLE}</style></head><body>",
        '<header><h1 dir="auto">' + escape(document.title) + "</h1>",
    ]
    for label, text in header_lines(document):
        kind = "notice" if label == "Outcome" and document.outcome_notice else "meta"
        parts.append(f'<p class="{kind}" dir="auto"><strong>{label}:</strong> {escape(text)}</p>')
    parts += ["</header>", '<main dir="auto">', body, "</main>"]
    parts += _notes(document)
    parts += _sources(document)
    parts += _appendix(document)
    parts += appendix_html(document.charts)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _citation(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    document: ReportDocument = env["document"]
    links = []
    for number in tokens[idx].meta["numbers"]:
        source = document.source(number)
        url = source.url if source and source.url and source.url.startswith(("http://", "https://")) else None
        href = escape(url or f"#source-{number}", quote=True)
        title = escape(source.label, quote=True) if source else "not in the Sources list"
        links.append(f'<a class="citation" href="{href}" title="{title}">{number}</a>')
    return "[" + ", ".join(links) + "]"


def _fence(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    """A delivered chart block as its figure; any other fenced block as code."""
    token = tokens[idx]
    record = ChartRecord.from_block(token.content) if is_chart_fence(token.info) else None
    if record is None or record.id not in env["charts"]:
        return str(RendererHTML.fence(self, tokens, idx, options, env))
    return figure_html(record, env["charts"][record.id], env["chart_image"])


def _unverified(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    note = tokens[idx].meta["note"]
    return (
        f'<mark class="unverified">[unverified]</mark>'
        f'<sup><a class="note-ref" id="note-ref-{note}" href="#note-{note}">{note}</a></sup>'
    )


def _notes(document: ReportDocument) -> list[str]:
    marks = unverified_marks(document.body)
    if not marks:
        return []
    flagged = document.flagged_claims
    parts = ['<section class="notes"><h2>Notes on unverified claims</h2><ul>']
    for note in range(1, marks + 1):
        claim, why = note_text(flagged[note - 1] if note <= len(flagged) else None)
        quoted = f"<q>{escape(claim)}</q>: " if claim else ""
        parts.append(
            f'<li id="note-{note}" dir="auto">{note}. {quoted}{escape(why)} <a href="#note-ref-{note}">↩</a></li>'
        )
    parts.append("</ul></section>")
    return parts


def _sources(document: ReportDocument) -> list[str]:
    if not document.sources:
        return []
    parts = ['<section class="sources"><h2>Sources</h2><ul>']
    for source in document.sources:
        label = escape(source.label)
        title = f'<a href="{escape(source.url, quote=True)}">{label}</a>' if source.url else label
        url = f' — <span class="url">{escape(source.url)}</span>' if source.url else ""
        details = escape("; ".join(source_details(source)))
        parts.append(f'<li id="source-{source.index}" dir="auto">[{source.index}] {title}{url} ({details})</li>')
    parts.append("</ul></section>")
    return parts


def _appendix(document: ReportDocument) -> list[str]:
    rows = "".join(
        f"<tr><th>{escape(label.strip())}</th><td>{escape(value)}</td></tr>"
        for label, value in appendix_rows(document.summary, len(document.flagged_claims))
    )
    return [f'<section class="appendix"><h2>Appendix: checks</h2><table>{rows}</table></section>']
