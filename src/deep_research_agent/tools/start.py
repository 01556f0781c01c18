"""Where a research unit starts: the run's sources in one order, said once for every model.

The order is the knowledge base (``query``), then the corpus or MCP server the brief names, then the local
corpora (``corpus_search``), then the web (``web_search``), keeping only what the run can use. The research
sub-agent's prompt says it (``start_section``, for every model, only when the run has more than one kind of
source), and the assist's first-step line names the first call of that order for one brief (``first_tool``),
so the two never point a unit at different places: a brief that names a corpus or an MCP server is never
pointed at the web.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from .. import prompts
from ..domain.names import Role, ToolName

__all__ = ["ResearchSources", "first_tool", "start_section"]


@dataclass(frozen=True)
class ResearchSources:
    """What a unit can search, as the graph read it: each corpus as (name, title), each MCP server that offers
    tools as (label, its tool names, in listing order)."""

    corpora: tuple[tuple[str, str], ...] = ()
    mcp: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def named_corpus(self, brief: str) -> bool:
        """Whether ``brief`` names one of the corpora, by its name or its title."""
        return any(_names(brief, text) for corpus in self.corpora for text in corpus if text)

    def named_server_tools(self, brief: str) -> tuple[str, ...]:
        """The tools of the first MCP server ``brief`` names by its label; empty when it names none."""
        return next((tools for label, tools in self.mcp if _names(brief, label)), ())


def first_tool(offered: Collection[str], brief: str, sources: ResearchSources) -> str | None:
    """The call a unit with the ``offered`` tools starts ``brief`` with, in the order ``start_section`` says;
    None when it is offered none of them (a unit with MCP tools only, its brief naming no server)."""
    if ToolName.QUERY in offered:
        return ToolName.QUERY.value
    if ToolName.CORPUS_SEARCH in offered and sources.named_corpus(brief):
        return ToolName.CORPUS_SEARCH.value
    named = [tool for tool in sources.named_server_tools(brief) if tool in offered]
    if named:
        return named[0]
    for tool in (ToolName.CORPUS_SEARCH, ToolName.WEB_SEARCH):
        if tool in offered:
            return tool.value
    return None


def start_section(role: Role, *, knowledge: bool, corpora: bool, mcp: bool, web: bool) -> str:
    """The research sub-agent's section on the order of its sources; empty for another role, and when the run
    has only one kind of source (nothing to order)."""
    if role != Role.RESEARCH_SUBAGENT or sum((knowledge, corpora, mcp, web)) < 2:
        return ""
    steps = []
    if knowledge:
        steps.append("`query` the knowledge base for what is already known (an empty one is normal)")
    if corpora or mcp:
        named = " or ".join(kind for kind, there in (("corpus", corpora), ("MCP server", mcp)) if there)
        steps.append(f"the {named} the brief names, when it names one")
    if corpora:
        steps.append("the local corpora (`corpus_search`)")
    if web:
        steps.append("the web (`web_search`, then `web_fetch`) for the rest")
    return prompts.fill(prompts.Prompt.RESEARCH_START, order="; then ".join(steps))


def _names(brief: str, text: str) -> bool:
    """Whether ``brief`` holds ``text`` as words of its own (not inside a longer word), ignoring case."""
    return re.search(rf"(?<![\w-]){re.escape(text.strip())}(?![\w-])", brief, re.IGNORECASE) is not None
