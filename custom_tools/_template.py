"""Template for a drop-in custom tool: copy this file to a name without the leading underscore.

Files starting with ``_`` are never loaded. Every agent of the run (the orchestrator and each research,
extract and coding sub-agent) is offered the tool; the model reads its description, so say what it returns
and how to cite it. For tools built at load time, a module-level ``build_tools(cfg)`` returning a list of
LangChain tools, or ``build_tool(cfg)`` returning one (or None), works instead of a class.
"""

from __future__ import annotations

from deep_research_agent.tools.custom import CustomTool


class MyTool(CustomTool):
    name = "my_tool"  # letters, digits, _ or -; must not repeat a built-in tool's name
    description = "What the tool returns, when to use it, and how to cite it (e.g. 'Cite as \"My source\"')."

    @classmethod
    def enabled(cls, cfg) -> bool:
        # cfg is the run's ResearchConfig; return False to leave the tool out (e.g. without a key).
        return True

    async def run(self, query: str, limit: int = 10) -> list[dict]:  # a plain `def` works too
        # The typed parameters become the tool's arguments. Return a str, or a list/dict (JSON-encoded for
        # the model). Raise deep_research_agent.tools.errors.ToolFailure.permanent/transient("...") to tell
        # the model what went wrong and whether retrying helps.
        return [{"query": query, "limit": limit}]
