"""Office files the tests write with the libraries users' tools write them with: a Word report, an Excel
workbook, a PowerPoint deck and an EPUB book, each holding facts a test can search for and cite.

``write_docx``/``write_xlsx``/``write_pptx``/``write_epub`` write one to a path (or return the bytes with
``*_bytes``); the quotes a test checks are module constants.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

DOCX_TITLE = "Kelp Farm Annual Review"
DOCX_QUOTE = "The Norre Bay kelp farm stored 1,240 tonnes of carbon in its second season."
XLSX_QUOTE = "Vardo | 2023 | 318"
XLSX_SHEET = "Harvest"
PPTX_QUOTE = "Turbine blades are inspected by drone every 90 days."
EPUB_QUOTE = "The lighthouse keeper logged 212 storms between 1901 and 1930."


def docx_bytes() -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = DOCX_TITLE
    document.add_heading(DOCX_TITLE, level=0)
    document.add_paragraph(
        "Prepared by the Norre Bay cooperative for its members, the county and the regional fisheries board. "
        "It covers the farm's second season: the lines set, the harvest, what the kelp stored and who did the work."
    )
    document.add_heading("Carbon storage", level=1)
    document.add_paragraph(DOCX_QUOTE)
    document.add_heading("Staffing", level=1)
    table = document.add_table(rows=2, cols=2)
    for row, (role, count) in enumerate((("Divers", "6"), ("Boat crew", "4"))):
        table.cell(row, 0).text, table.cell(row, 1).text = role, count
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def xlsx_bytes() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = XLSX_SHEET
    sheet.append(["Site", "Year", "Tonnes"])
    for site, year, tonnes in (("Kvam", 2023, 205), ("Vardo", 2023, 318), ("Kvam", 2024, 231)):
        sheet.append([site, year, tonnes])
    notes = book.create_sheet("Notes")
    notes.append(["Harvest figures are wet weight."])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def pptx_bytes() -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for title, body in (("Wind park status", "Twelve turbines are running."), ("Maintenance", PPTX_QUOTE)):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def epub_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as book:
        book.writestr("mimetype", "application/epub+zip")
        book.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        book.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Coast Chronicles</dc:title>'
            "<dc:creator>A. Lund</dc:creator></metadata>"
            '<manifest><item id="c1" href="ch1.xhtml" media-type="application/xhtml+xml"/></manifest>'
            '<spine><itemref idref="c1"/></spine></package>',
        )
        book.writestr(
            "OEBPS/ch1.xhtml",
            '<html xmlns="http://www.w3.org/1999/xhtml"><body><section id="storms"><h1>Storms</h1>'
            f"<p>{EPUB_QUOTE}</p></section></body></html>",
        )
    return buffer.getvalue()


def write_office_files(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kelp-review.docx").write_bytes(docx_bytes())
    (folder / "harvest.xlsx").write_bytes(xlsx_bytes())
    (folder / "wind.pptx").write_bytes(pptx_bytes())
    (folder / "coast.epub").write_bytes(epub_bytes())
