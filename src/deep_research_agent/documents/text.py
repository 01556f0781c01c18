"""A document's title, author, date and text, read from HTML, PDF or an office file.

``extract_html`` keeps the main content as Markdown (trafilatura), with a whole-page fallback when
trafilatura gives up; ``extract_pdf`` reads every page's text (pypdf) and refuses encrypted or image-only
files with a permanent ``ToolFailure``; ``extract_office`` reads DOCX, PPTX, XLSX and EPUB (``office.py``)
with a ``[slide=N]``/``[sheet=Name!A1]``/``[chapter=path]`` line before each part, and refuses one it
cannot read with a permanent ``ToolFailure``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import pypdf
import trafilatura

from ..domain.errors import ToolFailure
from ..domain.works import CitationMetadata, citation_metadata
from .office import OfficeKind, OfficeUnreadable, office_text

_FALLBACK_DROP = "//nav|//header|//form|//noscript|//iframe|//button|//select|//menu"


@dataclass(frozen=True)
class Document:
    title: str
    author: str
    date: str
    text: str
    # A scholarly page's DOI, arXiv id, title and authors from its meta tags: which work it is.
    citation: CitationMetadata | None = None

    def as_text(self) -> str:
        fields = (("Title", self.title), ("Author", self.author), ("Date", self.date))
        header = [f"{label}: {value}" for label, value in fields if value]
        return "\n".join(header) + ("\n\n" if header else "") + self.text.strip()


def extract_html(html: str, *, url: str | None = None) -> Document:
    """Main content as Markdown via trafilatura, or a plain-text fallback when trafilatura gives up."""
    # trafilatura drops menus on article pages but keeps them on tiny ones, so <nav> goes first.
    extracted = trafilatura.extract_with_metadata(
        html, url=url, output_format="markdown", include_tables=True, prune_xpath="//nav"
    )
    citation = citation_metadata(html)
    if extracted is not None and extracted.text:
        return Document(
            title=extracted.title or "",
            author=extracted.author or "",
            date=extracted.date or "",
            text=_strip_front_matter(extracted.text),
            citation=citation,
        )
    title, text = _fallback_text(html)
    return Document(title=title, author="", date="", text=text, citation=citation)


def _strip_front_matter(markdown: str) -> str:
    # with_metadata puts a YAML header first; its fields are already on the Document.
    end = markdown.find("\n---\n", 3) if markdown.startswith("---\n") else -1
    return markdown[end + 5 :] if end >= 0 else markdown


def _fallback_text(html: str) -> tuple[str, str]:
    """Whole-page text minus scripts, styles, navigation and forms.

    trafilatura's own ``html2txt`` keeps ``<nav>`` and ``load_html`` rejects bare fragments, hence the
    wrapping and the extra pruning.
    """
    tree = trafilatura.load_html(html)
    if tree is None:
        tree = trafilatura.load_html(f"<html><body>{html}</body></html>")
    if tree is None:
        return "", ""
    title = " ".join((tree.findtext(".//title") or "").split())
    for element in tree.xpath(_FALLBACK_DROP):
        element.drop_tree()
    return title, trafilatura.html2txt(tree)


def extract_pdf(data: bytes) -> Document:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ToolFailure.permanent("the PDF is password-protected.")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        info = reader.metadata
    except ToolFailure:
        raise
    except Exception as exc:  # pypdf raises many types on malformed files
        raise ToolFailure.permanent(f"the PDF could not be read ({type(exc).__name__}).") from None
    text = "\n\n".join(f"[page {number}]\n{page}" for number, page in enumerate(pages, 1) if page)
    if not text:
        raise ToolFailure.permanent("the PDF has no extractable text (it may be scanned images).")
    return Document(
        title=str(info.title or "").strip() if info else "",
        author=str(info.author or "").strip() if info else "",
        date="",
        text=text,
    )


def extract_office(data: bytes, kind: OfficeKind) -> Document:
    try:
        document, text = office_text(data, kind, lambda xhtml: extract_html(xhtml.decode("utf-8", "replace")).text)
    except OfficeUnreadable as exc:
        raise ToolFailure.permanent(f"the file {exc}.") from None
    hint = {
        "pptx": "Cite a slide as the URL with #slide=N.",
        "xlsx": "Cite rows as the URL with #sheet=Name!A1 (the cell in the line before them).",
        "epub": "Cite a chapter as the URL with #chapter=path.",
    }.get(kind, "")
    return Document(title=document.title, author=document.author, date="", text=f"{hint}\n\n{text}" if hint else text)
