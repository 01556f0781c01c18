"""The web's prompt sections: how a research sub-agent searches and reads the web, or, when the deployment
has no web access (``web_search`` off), that the orchestrator and its sub-agents must do without it."""

from __future__ import annotations

from .. import prompts
from ..domain.names import Role

__all__ = ["no_web_section", "web_section"]


def web_section(role: Role, *, web_search: bool) -> str:
    """How to use ``web_search`` and ``web_fetch``: the research sub-agent's, when the run searches the web."""
    if role == Role.RESEARCH_SUBAGENT and web_search:
        return prompts.template(prompts.Prompt.WEB_RESEARCH)
    return ""


def no_web_section(role: Role, *, web_search: bool) -> str:
    """That the run has no web access: the orchestrator's and the research sub-agent's, when it has none."""
    if role in (Role.ORCHESTRATOR, Role.RESEARCH_SUBAGENT) and not web_search:
        return prompts.template(prompts.Prompt.NO_WEB)
    return ""
