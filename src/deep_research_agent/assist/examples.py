"""The assist's worked examples: the call or answer a nudge or a bounce ends on, for a small model to copy.

Each is a function the graph hands to the middleware that owns the nudge or bounce, only when the agent's
assist is on (without it, the nudge or bounce says what to do in words):
- ``delegation_example``: the orchestrator's no-tool-call nudge (``lifecycle/no_tool_calls.py``) shows the
  ``task`` call that starts researching the user's question, as one unit; Qwen2.5-Coder-0.5B copies it and
  the research starts;
- ``UnitFirstCall``: the findings gate's bounce of a unit that called no tool (``handover/gate.py``) shows the
  call that starts its research, in the order ``tools/start.py`` gives, filled with its brief (else its first
  tool's example); Qwen2.5-Coder-0.5B searched in 0 of 4 replayed replies when the bounce ended "then reply
  with your findings", in 4 of 4 when it ended on the call;
- ``page_example``: the findings gate's bounce for findings that copied an example's placeholders, in a unit
  that read a page, ends on an example answer whose source is that page; replayed on the 0.5B model's recorded
  bounce (4 seeds), the contract's example was copied whole in 4 of 4 replies, this one gave a finding quoted
  from the page with the page as its source in 4 of 4. Its placeholders are refused like the contract's (the
  gate refuses what a harness message's example showed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool

from ..domain.names import Role, ToolName
from ..tools.arguments import example_call, tool_schema
from ..tools.start import ResearchSources, first_tool

PAGE_EXAMPLE: dict[str, Any] = {
    "summary": "what the page says about the unit",
    "findings": [{"finding": "one claim the page makes", "evidence": "the sentence of the page that says it, copied"}],
    "gaps": [],
}
PAGE_LEAD = "Reply with exactly one JSON object and nothing else, with the page you read as its source:"


def delegation_example(question: str) -> str:
    """The call that starts researching ``question``: one unit for all of it (a small model copies it as is)."""
    brief = {"description": question, "subagent_type": Role.RESEARCH_SUBAGENT.value}
    return json.dumps({"name": ToolName.TASK.value, "arguments": brief}, ensure_ascii=False)


class UnitFirstCall:
    """The sentence and example call that start a unit's research, for the findings gate's bounce."""

    def __init__(self, sources: ResearchSources = ResearchSources()) -> None:
        """``sources``: the run's corpora and MCP servers, which a brief may name."""
        self.sources = sources

    def __call__(self, tools: Sequence[BaseTool | dict[str, Any]], brief: str) -> str:
        """ "Start with a `name` call, like this:" and the call for ``brief``; "" for a unit with no tools."""
        schemas = dict(tool_schema(tool) for tool in tools)
        if not schemas:
            return ""
        name = first_tool(schemas, brief, self.sources) or next(iter(schemas))
        return f"Start with a {name} call, like this:\n{example_call(name, schemas[name], fill=brief)}"


def page_example(source: str) -> str:
    """The example answer citing ``source``, the page the unit read, with the line that leads to it."""
    example = {**PAGE_EXAMPLE, "findings": [{**PAGE_EXAMPLE["findings"][0], "source": source}]}
    return f"{PAGE_LEAD}\n{json.dumps(example, ensure_ascii=False)}"
