"""The assist's triage rule: a message that asks for a table or a comparison is research, whatever the router says.

Small routers call every question SIMPLE (Qwen2.5-Coder-1.5B did for "with cited sources" and "compare … in a
table", docs/local-models.md), so with the research model's assist on, the triage router (``lifecycle/triage.py``,
its ``research_request`` knob) sends these to research without asking it, on top of every model's rule
(``asks_for_research``: sources, citations, research). A frontier router decides them itself.
"""

from __future__ import annotations

import re

from ..lifecycle.triage import asks_for_research

_TABLE_OR_COMPARISON = re.compile(
    r"\b(?:tables?|tabular|compar(?:e|es|ed|ing|isons?)|versus|vs\.?)(?!\w)", re.IGNORECASE
)


def asks_for_research_or_comparison(question: str) -> bool:
    """True when ``question`` asks for sources, citations or research, or for a table or a comparison."""
    return asks_for_research(question) or bool(_TABLE_OR_COMPARISON.search(question))
