"""A report document as Markdown: the header, the report as written, the notes on its ``[unverified]`` marks,
the Sources list rebuilt from the state's records (with when each was read), the checks appendix and each chart's
data table (the chart itself a link to its image on the server, its caption and notes in place); every
image syntax anywhere in it made a link and raw HTML text (``images.inert_markdown``), so no viewer loads what a
report names."""

from __future__ import annotations

from functools import partial

from ..domain.charts import ChartRecord
from ..report.charts import charts_as_markdown, data_table
from .document import ReportDocument
from .images import inert_markdown
from .markup import unverified_marks
from .wording import appendix_rows, header_lines, note_text, source_details


def render_markdown(document: ReportDocument) -> str:
    parts = [f"# {document.title}", ""]
    parts += [f"**{label}:** {text}  " for label, text in header_lines(document)]
    charts = document.charts
    body = charts_as_markdown(document.body, partial(_image_link, document), table=False) if charts else document.body
    parts += ["", body.strip(), ""]
    flagged = document.flagged_claims
    marks = unverified_marks(document.body)
    if marks:
        parts += ["## Notes on unverified claims", ""]
        for note in range(1, marks + 1):
            claim, why = note_text(flagged[note - 1] if note <= len(flagged) else None)
            parts.append(f"{note}. {f'“{claim}”: ' if claim else ''}{why}")
        parts.append("")
    if document.sources:
        parts += ["## Sources", ""]
        for source in document.sources:
            label = source.label.replace("[", "\\[").replace("]", "\\]")
            title = f"[{label}](<{source.url}>)" if source.url else label
            parts.append(f"[{source.index}] {title} ({'; '.join(source_details(source))})  ")
        parts.append("")
    parts += ["## Appendix: checks", "", "| Check | Result |", "|---|---|"]
    parts += [f"| {label.strip()} | {value} |" for label, value in appendix_rows(document.summary, len(flagged))]
    for number, record in enumerate(charts, start=1):
        parts += ["", f"### Chart data {number}: {record.spec.title}", "", *data_table(record)]
    return inert_markdown("\n".join(parts) + "\n")


def _image_link(document: ReportDocument, record: ChartRecord) -> str | None:
    return f"{document.chart_link}/{record.id}.png" if document.chart_link else None
