"""Documents as text: the main content of an HTML page as Markdown (trafilatura) and the text of a PDF (pypdf).

Web fetch (``tools/fetch.py``) and the local corpora (``corpora/formats.py``) read documents the same way.
"""

from .text import Document, extract_html, extract_pdf

__all__ = ["Document", "extract_html", "extract_pdf"]
