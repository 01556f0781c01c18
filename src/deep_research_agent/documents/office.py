"""Office documents and e-books as addressable parts: Word (DOCX), PowerPoint (PPTX), Excel (XLSX) and EPUB.

Contract: ``read_office(data, kind)`` returns an ``OfficeDocument`` (title, author, parts in reading order),
or raises ``OfficeUnreadable`` with a one-line reason (not a zip, encrypted, no text). Each ``Part`` is a
stretch a citation can point at, named by its ``locator``:

- DOCX (python-docx): a part per heading (``Title`` and ``Heading N`` styles open one; its heading path
  says where), paragraphs and table rows (cells joined with `` | ``) in body order; no locator: a Word file
  has no pages until it is laid out, so a part is cited by its heading (the corpora anchor it at the
  heading's slug);
- PPTX (python-pptx): a part per slide, ``slide=N``, with its title, every text frame and table, then the
  speaker notes;
- XLSX (openpyxl, read-only, cached values): per sheet, parts of at most ``ROWS_PER_PART`` rows,
  ``sheet=Name!A5`` (the first cell of the part's first row), each row's non-empty cells joined with
  `` | `` and the sheet's first row repeated on top of every later part, so a figure keeps its column name;
- EPUB: the chapters of the spine in order (``epub_chapters``), each ``chapter=<path in the book>``; the
  caller reads each chapter's XHTML as it reads HTML.

Why not ebooklib for EPUB: it is AGPL-licensed; an EPUB is a zip whose ``content.opf`` lists the chapters,
which the standard library and lxml read.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from lxml import etree

OfficeKind = Literal["docx", "pptx", "xlsx", "epub"]
ROWS_PER_PART = 40
_SUFFIXES: dict[str, OfficeKind] = {".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx", ".xlsm": "xlsx", ".epub": "epub"}
CONTENT_TYPES: dict[str, OfficeKind] = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.ms-excel.sheet.macroenabled.12": "xlsx",
    "application/epub+zip": "epub",
}


class OfficeUnreadable(Exception):
    """An office file that cannot be read; the message says why in one line."""


@dataclass
class Part:
    headings: tuple[str, ...]
    blocks: list[str] = field(default_factory=list)
    locator: str = ""


@dataclass
class OfficeDocument:
    title: str
    author: str
    parts: list[Part]


def office_kind(name: str = "", content_type: str = "") -> OfficeKind | None:
    """The office format a file name or a Content-Type names, or None."""
    found = CONTENT_TYPES.get(content_type.split(";")[0].strip().lower())
    if found:
        return found
    lowered = name.lower().split("?")[0].split("#")[0]
    return next((kind for suffix, kind in _SUFFIXES.items() if lowered.endswith(suffix)), None)


def read_office(data: bytes, kind: OfficeKind) -> OfficeDocument:
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise OfficeUnreadable(f"is not a {kind.upper()} file (not a zip archive; it may be encrypted or damaged)")
    try:
        if kind == "docx":
            document = _docx(data)
        elif kind == "pptx":
            document = _pptx(data)
        elif kind == "xlsx":
            document = _xlsx(data)
        else:
            raise OfficeUnreadable("an EPUB is read chapter by chapter with epub_chapters")
    except OfficeUnreadable:
        raise
    except Exception as exc:  # the readers raise many types on malformed files
        raise OfficeUnreadable(
            f"could not be read as {kind.upper()} ({type(exc).__name__}: {str(exc)[:100]})"
        ) from None
    document.parts = [part for part in document.parts if any(block.strip() for block in part.blocks)]
    if not document.parts:
        raise OfficeUnreadable(f"is a {kind.upper()} file with no text")
    return document


def _docx(data: bytes) -> OfficeDocument:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(data))
    properties = document.core_properties
    title = (properties.title or "").strip()
    parts = [Part(headings=())]
    stack: list[tuple[int, str]] = []
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            text = item.text.strip()
            level = _heading_level(item.style.name if item.style is not None else "")
            if level is not None and text:
                if level == 0:
                    title = title or text
                    continue
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, text))
                parts.append(Part(headings=tuple(heading for _, heading in stack)))
            elif text:
                parts[-1].blocks.append(text)
        elif isinstance(item, Table):
            rows = [
                " | ".join(dict.fromkeys(cell.text.strip() for cell in row.cells if cell.text.strip()))
                for row in item.rows
            ]
            parts[-1].blocks.append("\n".join(row for row in rows if row))
    return OfficeDocument(title=title, author=(properties.author or "").strip(), parts=parts)


def _heading_level(style: str) -> int | None:
    if style == "Title":
        return 0
    if style.startswith("Heading "):
        number = style.removeprefix("Heading ").strip()
        return int(number) if number.isdigit() else None
    return None


def _pptx(data: bytes) -> OfficeDocument:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    parts = []
    for number, slide in enumerate(deck.slides, 1):
        title_shape = slide.shapes.title
        heading = title_shape.text_frame.text.strip() if title_shape is not None and title_shape.has_text_frame else ""
        blocks = []
        title_id = title_shape.shape_id if title_shape is not None else None
        for shape in slide.shapes:
            if shape.shape_id == title_id:
                continue
            if shape.has_text_frame and shape.text_frame.text.strip():
                blocks.append(shape.text_frame.text.strip())
            if getattr(shape, "has_table", False) and shape.has_table:
                rows = [" | ".join(c.text.strip() for c in row.cells if c.text.strip()) for row in shape.table.rows]
                blocks.append("\n".join(row for row in rows if row))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                blocks.append(f"Notes: {notes}")
        label = f"Slide {number}" + (f": {heading}" if heading else "")
        parts.append(Part(headings=(label,), blocks=blocks, locator=f"slide={number}"))
    properties = deck.core_properties
    return OfficeDocument(title=(properties.title or "").strip(), author=(properties.author or "").strip(), parts=parts)


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return " ".join(str(value).split())


def _xlsx(data: bytes) -> OfficeDocument:
    from openpyxl import load_workbook
    from openpyxl.utils import get_column_letter

    book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    parts = []
    try:
        for sheet in book.worksheets:
            header = ""
            current: Part | None = None
            for row in sheet.iter_rows():
                cells = [(cell, _cell_text(cell.value)) for cell in row if getattr(cell, "value", None) is not None]
                cells = [(cell, text) for cell, text in cells if text]
                if not cells:
                    continue
                line = " | ".join(text for _, text in cells)
                first = cells[0][0]
                if not header:
                    header = line
                if current is None or len(current.blocks) >= ROWS_PER_PART:
                    column = get_column_letter(first.column) if isinstance(first.column, int) else "A"
                    current = Part(
                        headings=(f"{sheet.title} (from row {first.row})",),
                        blocks=[header] if header != line else [],
                        locator=f"sheet={sheet.title}!{column}{first.row}",
                    )
                    parts.append(current)
                current.blocks.append(line)
        properties = book.properties
        return OfficeDocument(
            title=(properties.title or "").strip(), author=(properties.creator or "").strip(), parts=parts
        )
    finally:
        book.close()


_CONTAINER_NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container"}
_OPF_NS = {"opf": "http://www.idpf.org/2007/opf", "dc": "http://purl.org/dc/elements/1.1/"}


@dataclass
class EpubBook:
    title: str
    author: str
    chapters: list[tuple[str, bytes]]


def epub_chapters(data: bytes) -> EpubBook:
    """The book's title, author and spine chapters ``(path in the zip, XHTML bytes)`` in reading order."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        container = etree.fromstring(archive.read("META-INF/container.xml"))
        rootfile = container.find(".//c:rootfile", _CONTAINER_NS)
        if rootfile is None:
            raise OfficeUnreadable("is an EPUB without a package document")
        opf_path = rootfile.get("full-path") or ""
        package = etree.fromstring(archive.read(opf_path))
        base = posixpath.dirname(opf_path)
        manifest = {
            item.get("id"): posixpath.normpath(posixpath.join(base, item.get("href") or ""))
            for item in package.iterfind(".//opf:manifest/opf:item", _OPF_NS)
        }
        chapters = []
        for reference in package.iterfind(".//opf:spine/opf:itemref", _OPF_NS):
            path = manifest.get(reference.get("idref"))
            if path and path in archive.namelist():
                chapters.append((path, archive.read(path)))
        title = " ".join(package.findtext(".//dc:title", default="", namespaces=_OPF_NS).split())
        author = " ".join(package.findtext(".//dc:creator", default="", namespaces=_OPF_NS).split())
    except OfficeUnreadable:
        raise
    except (KeyError, zipfile.BadZipFile, etree.XMLSyntaxError) as exc:
        raise OfficeUnreadable(f"is not a readable EPUB ({type(exc).__name__})") from None
    if not chapters:
        raise OfficeUnreadable("is an EPUB with no chapters")
    return EpubBook(title=title, author=author, chapters=chapters)


def office_text(data: bytes, kind: OfficeKind, read_chapter: Callable[[bytes], str]) -> tuple[OfficeDocument, str]:
    """The document and its text as ``web_fetch`` shows it: each part under a ``[locator]`` line (a slide, a
    block of rows, a chapter) or its heading as Markdown, so a citation can point into the file
    (``URL#slide=2``, ``URL#sheet=Harvest!A1``). ``read_chapter`` turns an EPUB chapter's XHTML into text."""
    if kind == "epub":
        book = epub_chapters(data)
        document = OfficeDocument(
            title=book.title,
            author=book.author,
            parts=[
                Part(headings=(), blocks=[read_chapter(xhtml)], locator=f"chapter={path}")
                for path, xhtml in book.chapters
            ],
        )
    else:
        document = read_office(data, kind)
    pieces = []
    for part in document.parts:
        if part.locator:
            pieces.append(f"[{part.locator}]" + (f" {part.headings[-1]}" if part.headings else ""))
        elif part.headings:
            pieces.append("#" * min(len(part.headings) + 1, 6) + " " + part.headings[-1])
        pieces.extend(block for block in part.blocks if block.strip())
    return document, "\n\n".join(pieces)
