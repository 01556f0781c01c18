"""A report document as PDF: its HTML page laid out by WeasyPrint (Pango shapes accents, CJK and right-to-left
text, fontconfig falls back to any installed font that has a missing glyph). Links stay links. WeasyPrint loads
nothing but ``data:`` URLs (``images.embedded_only_fetcher``): the report's images are links by then, and no
address in the page can make the server open a connection or read a file."""

from __future__ import annotations

from .charts import ChartImage
from .document import ReportDocument
from .html import render_html
from .images import embedded_only_fetcher


class PdfEngineMissing(RuntimeError):
    """WeasyPrint or the Pango library it needs is not installed."""


def render_pdf(document: ReportDocument) -> bytes:
    try:
        # Imported here: it loads Pango, and a server without it must still export the other formats.
        from weasyprint import HTML
    except OSError as exc:  # the Python package is there, Debian's Pango is not
        raise PdfEngineMissing(
            f"PDF export needs Pango (Debian: libpango-1.0-0 libpangoft2-1.0-0; ./run.sh installs them): {exc}"
        ) from exc
    pdf = HTML(string=render_html(document, ChartImage.PNG), url_fetcher=embedded_only_fetcher()).write_pdf()
    assert pdf is not None, "write_pdf without a target returns the document"
    return pdf
