"""The report a reader gets: citations checked against retrieved text, hygiene, Markdown structure, salvage.

Pure functions over text and the run's evidence store; delivery (``delivery/``) decides when they run.
"""

__all__ = ["citations", "hygiene", "markdown", "salvage", "series", "vetting"]
