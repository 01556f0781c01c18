"""A report document as a Word file (python-docx), built from the same markdown-it tokens as the HTML page.

Each ``[n]`` is an internal link to its numbered entry of the Sources list (bookmark ``source_n``), whose
entry links the source's web address; each ``[unverified]`` mark is highlighted and followed by a numbered
note reference (bookmark ``note_k``) to the notes that quote the claim and say why; each delivered chart is its
drawing (PNG, with alt text), caption and notes, its data in an appendix. python-docx has no API
for hyperlinks and bookmarks that point inside the document, so those two are written as WordprocessingML.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import count

from docx import Document as new_document
from docx.document import Document
from docx.enum.text import WD_COLOR_INDEX
from docx.opc.constants import RELATIONSHIP_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Inches, Pt, RGBColor
from docx.text.paragraph import Paragraph
from markdown_it.token import Token

from ..domain.charts import ChartRecord
from ..report.charts import alt_text, caption_text, is_chart_fence, point_notes
from .charts import ChartImage, data_rows, render_chart
from .document import ReportDocument
from .markup import CITATION, UNVERIFIED, markdown_parser, unverified_marks
from .wording import appendix_rows, header_lines, note_text, source_details

_RTL_RE = re.compile(r"[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_MONOSPACE = "DejaVu Sans Mono"
_LINK_BLUE = RGBColor(0x1A, 0x4F, 0xA0)


@dataclass
class _Style:
    """The inline formatting open at a point of a paragraph."""

    bold: int = 0
    italic: int = 0
    strike: int = 0
    link: list[str] = field(default_factory=list)


class _Writer:
    def __init__(self, document: ReportDocument) -> None:
        self.report = document
        self.doc: Document = new_document()
        self.bookmark_ids = count(1)
        self.chart_numbers = {record.id: number for number, record in enumerate(document.charts, start=1)}

    # --- inline ---------------------------------------------------------------------------------------

    def text(self, paragraph: Paragraph, text: str, style: _Style, *, mono: bool = False) -> None:
        if not text:
            return
        if style.link:
            self.link(paragraph, text, url=style.link[-1])
            return
        run = paragraph.add_run(text)
        run.bold = bool(style.bold) or None
        run.italic = bool(style.italic) or None
        run.font.strike = bool(style.strike) or None
        if mono:
            run.font.name = _MONOSPACE
        if _RTL_RE.search(text):
            run.font.rtl = True

    def link(
        self, paragraph: Paragraph, text: str, *, url: str | None = None, anchor: str | None = None, sup: bool = False
    ) -> None:
        hyperlink = OxmlElement("w:hyperlink")
        if url:
            hyperlink.set(qn("r:id"), paragraph.part.relate_to(url, RELATIONSHIP_TYPE.HYPERLINK, is_external=True))
        else:
            hyperlink.set(qn("w:anchor"), anchor or "")
        run = OxmlElement("w:r")
        properties = OxmlElement("w:rPr")
        color = OxmlElement("w:color")
        color.set(qn("w:val"), str(_LINK_BLUE))
        properties.append(color)
        if sup:
            align = OxmlElement("w:vertAlign")
            align.set(qn("w:val"), "superscript")
            properties.append(align)
        else:
            underline = OxmlElement("w:u")
            underline.set(qn("w:val"), "single")
            properties.append(underline)
        run.append(properties)
        written = OxmlElement("w:t")
        written.set(qn("xml:space"), "preserve")
        written.text = text
        run.append(written)
        hyperlink.append(run)
        paragraph._p.append(hyperlink)

    def bookmark(self, paragraph: Paragraph, name: str) -> None:
        number = str(next(self.bookmark_ids))
        start, end = OxmlElement("w:bookmarkStart"), OxmlElement("w:bookmarkEnd")
        start.set(qn("w:id"), number)
        start.set(qn("w:name"), name)
        end.set(qn("w:id"), number)
        paragraph._p.insert(0, start)
        paragraph._p.append(end)

    def inline(self, paragraph: Paragraph, children: Sequence[Token]) -> None:
        style = _Style()
        for child in children:
            kind = child.type
            if kind == "text":
                self.text(paragraph, child.content, style)
            elif kind == "hardbreak":
                paragraph.add_run().add_break()
            elif kind == "softbreak":
                self.text(paragraph, " ", style)
            elif kind == "code_inline":
                self.text(paragraph, child.content, style, mono=True)
            elif kind in ("strong_open", "strong_close"):
                style.bold += 1 if kind.endswith("open") else -1
            elif kind in ("em_open", "em_close"):
                style.italic += 1 if kind.endswith("open") else -1
            elif kind in ("s_open", "s_close"):
                style.strike += 1 if kind.endswith("open") else -1
            elif kind == "link_open":
                style.link.append(str(child.attrGet("href") or ""))
            elif kind == "link_close" and style.link:
                style.link.pop()
            elif kind == "image":
                self.text(paragraph, child.content or str(child.attrGet("alt") or ""), style)
            elif kind == CITATION:
                self.citation(paragraph, child.meta["numbers"])
            elif kind == UNVERIFIED:
                run = paragraph.add_run("[unverified]")
                run.font.highlight_color = WD_COLOR_INDEX.PINK
                self.link(paragraph, str(child.meta["note"]), anchor=f"note_{child.meta['note']}", sup=True)

    def citation(self, paragraph: Paragraph, numbers: Sequence[int]) -> None:
        paragraph.add_run("[")
        for position, number in enumerate(numbers):
            if position:
                paragraph.add_run(", ")
            self.link(paragraph, str(number), anchor=f"source_{number}")
        paragraph.add_run("]")

    # --- blocks ---------------------------------------------------------------------------------------

    def blocks(self, tokens: Sequence[Token]) -> None:
        lists: list[str] = []
        quote = 0
        stream = iter(range(len(tokens)))
        for index in stream:
            token = tokens[index]
            kind = token.type
            if kind == "heading_open":
                paragraph = self.doc.add_heading("", level=min(int(token.tag[1]), 9))
                self.inline(paragraph, tokens[index + 1].children or [])
            elif kind in ("bullet_list_open", "ordered_list_open"):
                lists.append("List Number" if kind.startswith("ordered") else "List Bullet")
            elif kind in ("bullet_list_close", "ordered_list_close"):
                lists.pop()
            elif kind == "blockquote_open":
                quote += 1
            elif kind == "blockquote_close":
                quote -= 1
            elif kind == "inline" and tokens[index - 1].type == "paragraph_open":
                if lists:
                    depth = len(lists)
                    name = lists[-1] + (f" {min(depth, 3)}" if depth > 1 else "")
                elif quote:
                    name = "Quote"
                else:
                    name = "Normal"
                self.inline(self.doc.add_paragraph(style=name), token.children or [])
            elif kind == "fence" and (record := self.chart_of(token)) is not None:
                self.chart(record)
            elif kind in ("fence", "code_block"):
                paragraph = self.doc.add_paragraph(style="No Spacing")
                self.text(paragraph, token.content.rstrip("\n"), _Style(), mono=True)
            elif kind == "table_open":
                rows, skip = _table_rows(tokens, index)
                self.table(rows)
                for _ in range(skip):
                    next(stream, None)
            elif kind == "hr":
                self.doc.add_paragraph("—" * 12)

    def table(self, rows: list[list[tuple[bool, Token]]]) -> None:
        if not rows:
            return
        table = self.doc.add_table(rows=len(rows), cols=max(len(row) for row in rows))
        table.style = "Table Grid"
        for r, row in enumerate(rows):
            for c, (header, inline) in enumerate(row):
                paragraph = table.cell(r, c).paragraphs[0]
                self.inline(paragraph, inline.children or [])
                if header:
                    for run in paragraph.runs:
                        run.bold = True

    # --- charts ---------------------------------------------------------------------------------------

    def chart_of(self, token: Token) -> ChartRecord | None:
        record = ChartRecord.from_block(token.content) if is_chart_fence(token.info) else None
        return record if record is not None and record.id in self.chart_numbers else None

    def chart(self, record: ChartRecord) -> None:
        """The chart's drawing (PNG, with its alt text), its caption and the notes on its failing points."""
        number = self.chart_numbers[record.id]
        if record.drawn:
            shape = self.doc.add_picture(io.BytesIO(render_chart(record, ChartImage.PNG)), width=Inches(6.3))
            shape._inline.docPr.set("descr", alt_text(record))
            shape._inline.docPr.set("title", record.spec.title)
        caption = self.doc.add_paragraph(style="Caption" if "Caption" in self.doc.styles else None)
        self.text(caption, f"Chart {number}: {record.spec.title}. ", _Style(bold=1))
        self.text(caption, caption_text(record), _Style())
        for note in point_notes(record):
            self.text(self.doc.add_paragraph(), note, _Style())

    def chart_appendix(self) -> None:
        records = self.report.charts
        if not records:
            return
        self.doc.add_heading("Appendix: chart data", level=1)
        for number, record in enumerate(records, start=1):
            self.doc.add_heading(f"Chart {number}: {record.spec.title}", level=2)
            header, _, *rows = data_rows(record)
            table = self.doc.add_table(rows=len(rows) + 1, cols=len(header))
            table.style = "Table Grid"
            for r, row in enumerate([header, *rows]):
                for c, cell in enumerate(row):
                    table.cell(r, c).text = cell
                    if r == 0:
                        for run in table.cell(r, c).paragraphs[0].runs:
                            run.bold = True

    # --- the document ---------------------------------------------------------------------------------

    def write(self) -> bytes:
        report = self.report
        self.doc.core_properties.title = report.title[:255]
        self.doc.core_properties.subject = report.question[:255]
        if report.date:
            self.doc.core_properties.created = report.date
        self.doc.styles["Normal"].font.size = Pt(11)
        self.doc.add_heading(report.title, level=0)
        for label, text in header_lines(report):
            paragraph = self.doc.add_paragraph()
            self.text(paragraph, f"{label}: ", _Style(bold=1))
            self.text(paragraph, text, _Style())
        self.blocks(markdown_parser().parse(report.body))
        self.notes()
        self.sources()
        self.appendix()
        self.chart_appendix()
        buffer = io.BytesIO()
        self.doc.save(buffer)
        return buffer.getvalue()

    def notes(self) -> None:
        marks = unverified_marks(self.report.body)
        if not marks:
            return
        self.doc.add_heading("Notes on unverified claims", level=1)
        flagged = self.report.flagged_claims
        for note in range(1, marks + 1):
            claim, why = note_text(flagged[note - 1] if note <= len(flagged) else None)
            paragraph = self.doc.add_paragraph()
            self.bookmark(paragraph, f"note_{note}")
            self.text(paragraph, f"{note}. ", _Style(bold=1))
            self.text(paragraph, (f"“{claim}”: " if claim else "") + why, _Style())

    def sources(self) -> None:
        if not self.report.sources:
            return
        self.doc.add_heading("Sources", level=1)
        for source in self.report.sources:
            paragraph = self.doc.add_paragraph()
            self.bookmark(paragraph, f"source_{source.index}")
            self.text(paragraph, f"[{source.index}] ", _Style(bold=1))
            if source.url:
                self.link(paragraph, source.label, url=source.url)
                self.text(paragraph, f" — {source.url}", _Style())
            else:
                self.text(paragraph, source.label, _Style())
            self.text(paragraph, f" ({'; '.join(source_details(source))})", _Style())

    def appendix(self) -> None:
        self.doc.add_heading("Appendix: checks", level=1)
        rows = appendix_rows(self.report.summary, len(self.report.flagged_claims))
        table = self.doc.add_table(rows=len(rows), cols=2)
        table.style = "Table Grid"
        for r, (label, value) in enumerate(rows):
            table.cell(r, 0).text = label.strip()
            table.cell(r, 1).text = value


def _table_rows(tokens: Sequence[Token], start: int) -> tuple[list[list[tuple[bool, Token]]], int]:
    """The table's cells (header or not, inline token) by row, and how many tokens the table spans."""
    rows: list[list[tuple[bool, Token]]] = []
    for offset, token in enumerate(tokens[start:]):
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append((tokens[start + offset - 1].type == "th_open", token))
        elif token.type == "table_close":
            return rows, offset
    return rows, len(tokens) - start


def render_docx(document: ReportDocument) -> bytes:
    return _Writer(document).write()
