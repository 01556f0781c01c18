"""The corpora's prompt section: which local document collections the run can search, for the orchestrator
(each listed with what it holds and its size, so it can say in a brief which to search) and the research
sub-agent (their names and titles, and how to search, read and cite them)."""

from __future__ import annotations

from .. import prompts
from ..domain.names import Role
from .catalog import Catalog

__all__ = ["corpora_section"]


def corpora_section(role: Role, corpora: Catalog, *, web_search: bool) -> str:
    """The section for ``role`` on the searchable ones of ``corpora``; empty when none is searchable.
    ``web_search``: the orchestrator is asked to say too whether a unit needs the web."""
    ready = corpora.ready()
    if not ready:
        return ""
    if role == Role.ORCHESTRATOR:
        listing = "\n".join(f"- {entry.describe()}" for entry in ready)
        and_web = ", and whether the web is needed too" if web_search else ""
        return prompts.fill(prompts.Prompt.CORPORA_ORCHESTRATOR, corpora=listing, and_web=and_web)
    if role == Role.RESEARCH_SUBAGENT:
        names = ", ".join(f"`{entry.spec.name}` ({entry.spec.display_title})" for entry in ready)
        return prompts.fill(prompts.Prompt.CORPORA_SUBAGENT, corpora=names)
    return ""
