"""Role prompts, kept as Markdown next to this module and read once per process."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from importlib.resources import files

ORCHESTRATOR = "orchestrator"
RESEARCH_SUBAGENT = "research_subagent"
COMPACTION = "compaction"
TRIAGE = "triage"
DIRECT_ANSWER = "direct_answer"
FOLLOW_UP = "follow_up"


@cache
def template(name: str) -> str:
    return files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8").strip()


def render(name: str, *, domain_prompt: str = "", extra: str = "") -> str:
    """The role prompt with today's date, optional extra guidance and the labelled domain block."""
    text = template(name).replace("{today}", datetime.now(UTC).date().isoformat())
    if extra.strip():
        text += "\n\n" + extra.strip()
    if domain_prompt.strip():
        text += "\n\n## DOMAIN CONTEXT\n" + domain_prompt.strip()
    return text
