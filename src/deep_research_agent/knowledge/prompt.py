"""The knowledge base's prompt section: how a research sub-agent queries what earlier research remembered,
cites it by its source, and remembers what it reads, when the run has the knowledge-base tools."""

from __future__ import annotations

from .. import prompts
from ..domain.names import Role

__all__ = ["knowledge_section"]


def knowledge_section(role: Role, *, enabled: bool) -> str:
    """The research sub-agent's section on ``query`` and ``remember``, when the run has them (``enabled``)."""
    if role == Role.RESEARCH_SUBAGENT and enabled:
        return prompts.template(prompts.Prompt.KNOWLEDGE)
    return ""
