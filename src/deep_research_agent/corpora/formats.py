"""Which files a corpus holds and how each format is read into sections.

Contract: ``read_document(path, relative, html_mode)`` reads one file and returns an ``Extracted`` (its
title, format, SHA-256 of the bytes and sections), or raises ``Unreadable`` with a one-line reason
(permissions, a broken or encrypted PDF, no text at all). It runs in indexing worker processes, so it
is a plain function of the file.

Formats, by file name: HTML (``.html``, ``.htm``, ``.xhtml``; see ``html``), Markdown (``.md``,
``.markdown``), reStructuredText (``.rst``, ``.rest``, ``.rst.txt``), plain text (``.txt``, ``.text``) and
PDF (``.pdf``). Plain text is cut at blank lines, each part anchored at its first line (``L12``); a PDF
is one section per page (``page=N``) under the outline entry that covers it, read with pypdf as
``web_fetch`` reads PDFs.
"""

from __future__ import annotations

import hashlib
import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..documents import extract_html
from .html import decode_html, parse_html_docs
from .markup import parse_markdown, parse_rst
from .passages import Block, Section

if TYPE_CHECKING:
    import pypdf

HtmlMode = Literal["docs", "web"]
Format = Literal["html", "markdown", "rst", "text", "pdf"]

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
