"""Role prompts and the features' prompt sections, kept as Markdown next to this module and read once per process.

A role's system prompt is its own prompt followed by the sections of the features the run can use, joined
(``assemble``): each feature owns its section, in its own package (``corpora/prompt.py``,
``mcp/prompt.py``, ``sandbox/prompt.py``, ...), as a function of the role and of what the run gives that
feature; it returns nothing for a role the feature does not concern. A section that names the run's
corpora or servers fills its template's ``{name}`` slots with ``fill``, which refuses a slot left empty
or a value with no slot.

A prompt's ``{today}`` (``TODAY``) stays in the compiled graph, which outlives the day it was built, and is
filled with the current UTC date on every model call (``modelcalls/prompt_date.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from enum import StrEnum
from functools import cache
from importlib.resources import files

__all__ = ["TODAY", "Prompt", "assemble", "fill", "render", "template", "today", "without_clarifying"]


class Prompt(StrEnum):
    """A prompt file next to this module (its stem); not a role: one role may use several prompts."""

    ORCHESTRATOR = "orchestrator"
    FOLLOW_UP = "follow_up"
    RESEARCH_SUBAGENT = "research_subagent"
    COMPACTION = "compaction"
    TRIAGE = "triage"
    DIRECT_ANSWER = "direct_answer"
    MCP_TOOLS = "mcp_tools"
    MCP_ORCHESTRATOR = "mcp_orchestrator"
    KNOWLEDGE = "knowledge"
    CODING_SUBAGENT = "coding_subagent"
    EXTRACT_SUBAGENT = "extract_subagent"
    CODE_EXECUTION = "code_execution"
    SKILL_HELPERS = "skill_helpers"
    NO_CODE_EXECUTION = "no_code_execution"
    WEB_RESEARCH = "web_research"
    WEB_PAPERS = "web_papers"
    CORPORA_SUBAGENT = "corpora_subagent"
    CORPORA_ORCHESTRATOR = "corpora_orchestrator"
    NO_WEB = "no_web"
    TASKS = "tasks"
    NO_CLARIFY = "no_clarify"
    PLAN_REVIEW = "plan_review"
    RESEARCH_START = "research_start"
    CHARTS = "charts"
    CHART_OFFER = "chart_offer"
    REPORT_LANGUAGE = "report_language"
    SEARCH_LANGUAGE = "search_language"
    REPORT_STYLE = "report_style"
    REPORT_OUTLINE = "report_outline"
    ANSWER_LANGUAGE = "answer_language"
    DIGEST_WORDING = "digest_wording"


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


_SLOT = re.compile(r"\{([a-z_]+)\}")


def fill(name: Prompt, **values: str) -> str:
    """A section's template with each ``{slot}`` replaced by its value; a slot without a value, or a value
    without a slot, is a ``KeyError``. Values are inserted as they are, never scanned for slots again."""
    text = template(name)
    slots = set(_SLOT.findall(text))
    if slots != values.keys():
        raise KeyError(f"prompt {name!r} has the slots {sorted(slots)}, was given {sorted(values)}")
    return _SLOT.sub(lambda slot: values[slot.group(1)], text)


def assemble(name: Prompt, sections: Iterable[str], *, domain_prompt: str = "") -> str:
    """A role's system prompt: its own prompt, then every non-empty section in order, then the domain block."""
    return render(name, domain_prompt=domain_prompt, extra="\n\n".join(section for section in sections if section))


_TRIAGE_STEP = re.compile(r"^1\. TRIAGE\..*$", re.MULTILINE)


def without_clarifying(prompt: str) -> str:
    """The orchestrator's prompt for a run that may not ask (``clarify`` off): its TRIAGE step, which tells it
    when to ask, becomes ``no_clarify.md``'s one instruction to proceed on stated assumptions. A prompt
    without that step is a ``ValueError``, so a rewrite of the step cannot silently leave the asking in."""
    replaced, count = _TRIAGE_STEP.subn(lambda _: template(Prompt.NO_CLARIFY), prompt, count=1)
    if not count:
        raise ValueError("the orchestrator's prompt has no TRIAGE step to replace")
    return replaced
