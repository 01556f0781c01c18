"""The assist's next-step lines: each tool result a research unit reads ends on the step that follows it.

Contract (research sub-agents with the assist on; it wraps their tool calls outside the classified errors and
the skills' ``read_file``, so it decorates the result the model would otherwise read as it is):
- search results with a hit (``web_search``, with ``web_fetch`` offered) end with ``FETCH_HINT``: the
  ``web_fetch`` call that reads the first hit, written out as a model writes a call;
- a page ``web_fetch`` read ends with ``PAGE_NEXT``: a page that answers the unit ends it with findings;
- ``read_file``'s error for a web address (with ``web_fetch`` offered) ends with the ``web_fetch`` call that
  reads it;
- anything else (an error, no hits, another tool) passes unchanged. The tools return plain results; only
  this decorates them.

Measured on Qwen2.5-Coder-0.5B, each line replayed on recorded requests: a page read after the results in 1 of 4
replies without the call, 4 of 4 with it; findings handed back after a page in 0 of 4 replies without
``PAGE_NEXT`` (the model fetched the same page again), 4 of 4 with it; ``read_file`` called again with the same
URL until the loop guard stopped the unit, before the error showed the call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.knobs import KnobError
from ..domain.names import ToolName
from ..domain.per_role import PerRoleMiddleware
from ..tools.fetch import PAGE_PREAMBLE
from ..tools.search import hit_urls

FETCH_HINT = "Read the best hit in full before relying on it, like this:\n{call}"
PAGE_NEXT = "If this answers the unit, reply with your findings JSON object now."
READ_WITH_FETCH = "Read it like this:\n{call}"


def fetch_call(url: str) -> str:
    """The ``web_fetch`` call that reads ``url``, as a model writes a call: small models copy a shown call."""
    return json.dumps({"name": ToolName.WEB_FETCH.value, "arguments": {"url": url}}, ensure_ascii=False)


class NextStepMiddleware(PerRoleMiddleware):
    """Ends a research unit's search results, pages and ``read_file`` web-address errors on the next step."""

    label = "NextStep"

    def __init__(self, *, role: str, web_fetch: bool) -> None:
        """``web_fetch``: the unit holds ``web_fetch``, the call the search results and errors point to."""
        if not isinstance(web_fetch, bool):
            raise KnobError(type(self).__name__, "web_fetch", web_fetch, "True or False")
        super().__init__(role=role)
        self.web_fetch = web_fetch

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]
    ) -> ToolMessage | Command:
        result = await handler(request)
        if not isinstance(result, ToolMessage) or not isinstance(result.content, str):
            return result
        line = self._next_step(request.tool_call["name"], dict(request.tool_call.get("args") or {}), result)
        return result.model_copy(update={"content": f"{result.content}\n{line}"}) if line else result

    def _next_step(self, tool: str, args: dict[str, object], result: ToolMessage) -> str:
        text = str(result.content)
        if tool == ToolName.WEB_SEARCH and self.web_fetch and (urls := hit_urls(text)):
            return FETCH_HINT.format(call=fetch_call(urls[0]))
        if tool == ToolName.WEB_FETCH and result.status != "error" and text.startswith(PAGE_PREAMBLE):
            return PAGE_NEXT
        path = str(args.get("file_path") or "").strip()
        if tool == ToolName.READ_FILE and self.web_fetch and result.status == "error" and _web_address(path):
            return READ_WITH_FETCH.format(call=fetch_call(path))
        return ""


def _web_address(path: str) -> bool:
    return path.lower().startswith(("http://", "https://"))
