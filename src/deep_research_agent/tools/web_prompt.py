"""The web's prompt sections: how a research sub-agent searches and reads the web (and, with a paper backend
among the run's search backends, that a scholarly question wants papers), or, when the deployment has no
web access (``web_search`` off), that the orchestrator and its sub-agents must do without it."""

from __future__ import annotations

from collections.abc import Sequence

from .. import prompts
from ..domain.names import Role

__all__ = ["no_web_section", "web_section"]


def web_section(role: Role, *, web_search: bool, paper_sources: Sequence[str] = ()) -> str:
    """How to use ``web_search`` and ``web_fetch``: the research sub-agent's, when the run searches the web;
    with ``paper_sources`` (the run's paper backends), when to search them."""
    if role != Role.RESEARCH_SUBAGENT or not web_search:
        return ""
    section = prompts.template(prompts.Prompt.WEB_RESEARCH)
    if paper_sources:
        sources = " or ".join(f"`{name}`" for name in paper_sources)
        section += "\n\n" + prompts.fill(prompts.Prompt.WEB_PAPERS, sources=sources)
    return section


def no_web_section(role: Role, *, web_search: bool) -> str:
    """That the run has no web access: the orchestrator's and the research sub-agent's, when it has none."""
    if role in (Role.ORCHESTRATOR, Role.RESEARCH_SUBAGENT) and not web_search:
        return prompts.template(prompts.Prompt.NO_WEB)
    return ""
