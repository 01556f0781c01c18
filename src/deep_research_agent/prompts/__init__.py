"""Role prompts, kept as Markdown next to this module and read once per process.

A prompt's ``{today}`` (``TODAY``) stays in the compiled graph, which outlives the day it was built, and is
filled with the current UTC date on every model call (``modelcalls/prompt_date.py``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from functools import cache
from importlib.resources import files

__all__ = ["TODAY", "Prompt", "render", "template", "today"]


class Prompt(StrEnum):
    """A prompt file next to this module (its stem); not a role: one role may use several prompts."""

    ORCHESTRATOR = "orchestrator"
    FOLLOW_UP = "follow_up"
    RESEARCH_SUBAGENT = "research_subagent"
    COMPACTION = "compaction"
    TRIAGE = "triage"
    DIRECT_ANSWER = "direct_answer"
    MCP_TOOLS = "mcp_tools"
    KNOWLEDGE = "knowledge"
    CODING_SUBAGENT = "coding_subagent"
    EXTRACT_SUBAGENT = "extract_subagent"
    CODE_EXECUTION = "code_execution"
    NO_CODE_EXECUTION = "no_code_execution"
    WEB_RESEARCH = "web_research"
    CORPORA_SUBAGENT = "corpora_subagent"
    CORPORA_ORCHESTRATOR = "corpora_orchestrator"
    NO_WEB = "no_web"
    TASKS = "tasks"


@cache
def template(name: Prompt) -> str:
    return files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8").strip()


TODAY = "{today}"


def today() -> str:
    """The date a prompt's ``TODAY`` stands for: the current UTC date, ISO-formatted."""
    return datetime.now(UTC).date().isoformat()


def render(name: Prompt, *, domain_prompt: str = "", extra: str = "") -> str:
    """The role prompt, optional extra guidance and the labelled domain block; ``TODAY`` is left in."""
    text = template(name)
    if extra.strip():
        text += "\n\n" + extra.strip()
    if domain_prompt.strip():
        text += "\n\n## DOMAIN CONTEXT\n" + domain_prompt.strip()
    return text
