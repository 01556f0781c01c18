"""The report a reader gets: each claim checked against the text it cites, citations checked against
retrieved text, hygiene, Markdown structure, salvage.

Pure functions over text and the run's evidence store (``evidence/``); delivery (``delivery/``) decides when they run.
"""

__all__ = ["citations", "claims", "corpus_sources", "hygiene", "markdown", "salvage", "series", "vetting"]
