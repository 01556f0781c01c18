"""The report a reader gets: each claim checked against the text it cites (figures, quotes, names,
direction, and the judge's prompt and verdicts for the rest), citations checked against retrieved text,
hygiene, Markdown structure, salvage.

Pure functions over text and the run's evidence store (``evidence/``); delivery (``delivery/``) decides when they run.
"""

__all__ = [
    "citations",
    "claims",
    "corpus_sources",
    "direction",
    "entities",
    "hygiene",
    "judge",
    "markdown",
    "salvage",
    "series",
    "vetting",
]
