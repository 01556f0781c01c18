"""Which files a corpus holds and how each format is read into sections.

Contract: ``read_document(path, relative, html_mode)`` reads one file and returns an ``Extracted`` (its
title, format, SHA-256 of the bytes and sections), or raises ``Unreadable`` with a one-line reason
(permissions, a broken or encrypted PDF, no text at all). It runs in indexing worker processes, so it
is a plain function of the file.

Formats, by file name: HTML (``.html``, ``.htm``, ``.xhtml``; see ``html``), Markdown (``.md``,
``.markdown``), reStructuredText (``.rst``, ``.rest``, ``.rst.txt``), plain text (``.txt``, ``.text``),
PDF (``.pdf``), Word (``.docx``), PowerPoint (``.pptx``), Excel (``.xlsx``, ``.xlsm``) and EPUB (``.epub``).
Plain text is cut at blank lines, each part anchored at its first line (``L12``); a PDF is one section per
page (``page=N``) under the outline entry that covers it, read with pypdf as ``web_fetch`` reads PDFs.
The office formats are read by ``documents.office`` as ``web_fetch`` reads them: a Word section is anchored
at its heading's slug, a slide at ``slide=N``, a block of spreadsheet rows at ``sheet=Name!A5`` (its first
cell), an EPUB chapter's sections at ``<chapter path>#<id>`` (read as documentation HTML).
"""

from __future__ import annotations

import hashlib
import io
import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..documents import extract_html
from ..documents.office import OfficeKind, OfficeUnreadable, epub_chapters, read_office
from .html import decode_html, parse_html_docs
from .markup import github_slug, parse_markdown, parse_rst
from .passages import Block, Section

if TYPE_CHECKING:
    import pypdf

HtmlMode = Literal["docs", "web"]
Format = Literal["html", "markdown", "rst", "text", "pdf", "docx", "pptx", "xlsx", "epub"]

_SUFFIXES: dict[str, Format] = {
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".rest": "rst",
    ".txt": "text",
    ".text": "text",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".epub": "epub",
}


class Unreadable(Exception):
    """A file that cannot be indexed; the message says why in one line."""


@dataclass
class Extracted:
    title: str
    format: Format
    sha256: str
    sections: list[Section]


def format_of(name: str) -> Format | None:
    """The format a file name says, or None for files a corpus does not index."""
    lowered = name.lower()
    if lowered.endswith(".rst.txt"):
        return "rst"
    return _SUFFIXES.get(Path(lowered).suffix)


def read_document(path: str, relative: str, html_mode: HtmlMode = "docs") -> Extracted:
    kind = format_of(relative)
    if kind is None:
        raise Unreadable("not a supported format")
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise Unreadable(exc.strerror or type(exc).__name__) from None
    digest = hashlib.sha256(data).hexdigest()
    stem = Path(relative).name
    try:
        if kind == "html":
            title, sections = _html(data, html_mode, stem)
        elif kind == "pdf":
            title, sections = _pdf(data, stem)
        elif kind == "epub":
            title, sections = _epub(data, stem)
        elif kind in ("docx", "pptx", "xlsx"):
            title, sections = _office(data, kind, stem)
        else:
            text = _decode(data)
            if kind == "markdown":
                document = parse_markdown(text, fallback_title=stem)
                title, sections = document.title, document.sections
            elif kind == "rst":
                document = parse_rst(text, fallback_title=stem)
                title, sections = document.title, document.sections
            else:
                title, sections = stem, _text_sections(text, stem)
    except Unreadable:
        raise
    except Exception as exc:  # a parser's crash on one file must not stop the corpus
        raise Unreadable(f"could not be parsed ({type(exc).__name__}: {str(exc)[:120]})") from None
    if kind == "pdf" and not any(block.text.strip() for section in sections for block in section.blocks):
        raise Unreadable("is a PDF with no extractable text (it may be scanned images)")
    # Another file with no text (an empty note, a page that is all navigation) is indexed with no passages.
    return Extracted(title=title, format=kind, sha256=digest, sections=sections)


def _decode(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _html(data: bytes, mode: HtmlMode, stem: str) -> tuple[str, list[Section]]:
    if not data.strip():
        raise Unreadable("is empty")
    if mode == "web":
        document = extract_html(decode_html(data))
        markup = parse_markdown(document.text, fallback_title=document.title or stem, anchors=False)
        title = document.title or markup.title
        return title, markup.sections
    parsed = parse_html_docs(data)
    return parsed.title or stem, parsed.sections


def _office(data: bytes, kind: OfficeKind, stem: str) -> tuple[str, list[Section]]:
    try:
        document = read_office(data, kind)
    except OfficeUnreadable as exc:
        raise Unreadable(str(exc)) from None
    title = document.title or stem
    seen: Counter[str] = Counter()
    sections = []
    for part in document.parts:
        anchor = part.locator or (github_slug(part.headings[-1], seen) if part.headings else None)
        sections.append(
            Section(
                path=(title, *part.headings),
                anchor=anchor,
                blocks=[Block(text) for text in part.blocks if text.strip()],
                heading_line=part.headings[-1] if part.headings else "",
            )
        )
    return title, sections


def _epub(data: bytes, stem: str) -> tuple[str, list[Section]]:
    try:
        book = epub_chapters(data)
    except OfficeUnreadable as exc:
        raise Unreadable(str(exc)) from None
    title = book.title or stem
    sections = []
    for chapter, xhtml in book.chapters:
        parsed = parse_html_docs(xhtml)
        for section in parsed.sections:
            section.path = (title, *section.path)
            section.anchor = f"{chapter}#{section.anchor}" if section.anchor else chapter
            for block in section.blocks:
                block.anchor = f"{chapter}#{block.anchor}" if block.anchor else None
            sections.append(section)
    return title, sections


def _text_sections(text: str, title: str) -> list[Section]:
    section = Section(path=(title,), heading_line="")
    paragraph: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            if not paragraph:
                start = number
            paragraph.append(line.rstrip())
        elif paragraph:
            section.blocks.append(Block("\n".join(paragraph), anchor=f"L{start}"))
            paragraph = []
    if paragraph:
        section.blocks.append(Block("\n".join(paragraph), anchor=f"L{start}"))
    if section.blocks:
        section.anchor = section.blocks[0].anchor
    return [section]


def _pdf(data: bytes, stem: str) -> tuple[str, list[Section]]:
    import pypdf  # only indexing reads PDFs; the CLI's other commands should not pay for the import

    # pypdf logs every repair it makes; the indexer reports what matters, once, as unreadable or not.
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("is a password-protected PDF")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        info = reader.metadata
        outline = _outline(reader)
    except Unreadable:
        raise
    except Exception as exc:  # pypdf raises many types on malformed files
        raise Unreadable(f"is a PDF that could not be read ({type(exc).__name__})") from None
    if not any(pages):
        raise Unreadable("is a PDF with no extractable text (it may be scanned images)")
    title = (str(info.title or "").strip() if info else "") or stem
    sections = []
    for number, text in enumerate(pages, 1):
        if not text:
            continue
        headings = _headings_at(outline, number)
        blocks = [Block(part.strip()) for part in text.split("\n\n") if part.strip()]
        sections.append(Section(path=(title, *headings, f"p. {number}"), page=number, blocks=blocks, heading_line=""))
    return title, sections


def _outline(reader: pypdf.PdfReader) -> list[tuple[int, tuple[str, ...]]]:
    """(first page, heading path) of every outline entry, in page order; empty when the PDF has none."""
    entries: list[tuple[int, tuple[str, ...]]] = []

    def visit(items: list, parents: tuple[str, ...]) -> None:
        last: tuple[str, ...] = parents
        for item in items:
            if isinstance(item, list):
                visit(item, last)
                continue
            try:
                page = reader.get_destination_page_number(item) + 1
            except Exception:  # noqa: BLE001 - an entry without a page does not locate anything
                continue
            last = (*parents, " ".join(str(item.title).split()))
            entries.append((page, last))

    try:
        visit(reader.outline, ())
    except Exception:  # noqa: BLE001 - a broken outline leaves the pages untitled, not unread
        return []
    return sorted(entries, key=lambda entry: entry[0])


def _headings_at(outline: list[tuple[int, tuple[str, ...]]], page: int) -> tuple[str, ...]:
    covering: tuple[str, ...] = ()
    for first, path in outline:
        if first > page:
            break
        covering = path
    return covering
