"""Reports people can hand on: a delivered report as Markdown, HTML, PDF or Word.

- ``document``: ``ReportDocument``, built from the thread state's structured data (``report_document``);
- ``markup``: the report's Markdown as markdown-it tokens, its ``[n]`` and ``[unverified]`` as tokens;
- ``wording``: the words every format shares (header, reasons, source lines, the checks appendix);
- ``markdown``, ``html``, ``pdf`` (WeasyPrint), ``docx`` (python-docx): one renderer per format;
- ``ExportFormat``, ``render`` and ``file_name``: what the ``/reports`` route and ``ask --out`` call.
"""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum
from pathlib import PurePath

from .document import DocumentSource, NoReport, ReportDocument, latest_question, report_document
from .docx import render_docx
from .html import render_html
from .markdown import render_markdown
from .pdf import render_pdf


class ExportFormat(StrEnum):
    MD = "md"
    HTML = "html"
    PDF = "pdf"
    DOCX = "docx"

    @property
    def media_type(self) -> str:
        return _MEDIA_TYPES[self]

    @classmethod
    def of_path(cls, path: str | PurePath) -> ExportFormat:
        """The format a file name asks for by its extension; ``ValueError`` names the ones there are."""
        suffix = PurePath(path).suffix.lower().lstrip(".")
        try:
            return cls({"markdown": "md", "htm": "html"}.get(suffix, suffix))
        except ValueError:
            raise ValueError(
                f"cannot tell the format of {str(path)!r} from its extension; use one of "
                + ", ".join(f".{value}" for value in cls)
            ) from None


_MEDIA_TYPES = {
    ExportFormat.MD: "text/markdown; charset=utf-8",
    ExportFormat.HTML: "text/html; charset=utf-8",
    ExportFormat.PDF: "application/pdf",
    ExportFormat.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
_FILE_NAME_CHARS = 80


def render(document: ReportDocument, format: ExportFormat) -> bytes:
    """The document in ``format``, as the bytes of the file."""
    if format == ExportFormat.MD:
        return render_markdown(document).encode("utf-8")
    if format == ExportFormat.HTML:
        return render_html(document).encode("utf-8")
    if format == ExportFormat.PDF:
        return render_pdf(document)
    return render_docx(document)


def file_name(document: ReportDocument, format: ExportFormat) -> str:
    """A file name from the question (else the title): its words joined by hyphens, any script kept."""
    words = re.findall(r"\w+", unicodedata.normalize("NFC", document.question or document.title))
    stem = "-".join(words).lower()[:_FILE_NAME_CHARS].strip("-_") or "report"
    return f"{stem}.{format.value}"


__all__ = [
    "DocumentSource",
    "ExportFormat",
    "NoReport",
    "ReportDocument",
    "file_name",
    "latest_question",
    "render",
    "report_document",
]
