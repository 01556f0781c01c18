"""Documents as text: the main content of an HTML page as Markdown (trafilatura), the text of a PDF (pypdf) and
of Word, PowerPoint, Excel and EPUB files (``office``).

Web fetch (``tools/fetch.py``) and the local corpora (``corpora/formats.py``) read documents the same way.
"""

from .office import office_kind
from .text import Document, extract_html, extract_office, extract_pdf

__all__ = ["Document", "extract_html", "extract_office", "extract_pdf", "office_kind"]
