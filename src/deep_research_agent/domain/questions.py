"""A question a user asks, checked at every entrance before anything runs: the graph's input (SDK clients,
the web UI, generic UIs), ``./run.sh ask`` and the MCP tools.

Contract: ``question_problem(text, max_chars=...)`` is ``""`` for a question that may run, else the one
sentence the asker reads: an empty or blank question never starts a run (nothing to research, yet a full
run's model calls), nor does one longer than ``max_chars`` (``DRA_MAX_QUESTION_CHARS``; 0: no limit),
which the orchestrator would carry in every one of its model calls.
"""

from __future__ import annotations

# Where a question too long for the limit can go instead: a corpus the research sub-agents search.
_LONG_MATERIAL = "put long material in a local corpus (./run.sh corpus add) and ask about it"


def question_problem(text: str, *, max_chars: int = 0) -> str:
    """Why ``text`` cannot be researched, in the asker's words; ``""`` when it can."""
    if not text.strip():
        return "The question is empty, so no research was started: write what should be researched."
    if max_chars and len(text) > max_chars:
        return (
            f"The question is {len(text):,} characters long and this server takes at most {max_chars:,} "
            f"(DRA_MAX_QUESTION_CHARS), so no research was started: shorten it, or {_LONG_MATERIAL}."
        )
    return ""
