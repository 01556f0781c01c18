"""At most as many research units in a run as the report's style allows: a brief report is not eight units.

Contract (``UnitCapMiddleware``, orchestrator only, outside the hand-over so a refused unit never starts):
- the run's first ``max_units`` ``task`` calls for a research sub-agent go through; each later one gets a
  permanent tool error saying the cap, why (the reader's ``report_style``) and what to do instead (write the
  report from what the units found), and starts nothing;
- ``task`` calls of the other sub-agents (extract, coding) are not research units and are never counted;
- parallel calls of one reply are counted as they start, with no await between the check and the count, so
  three calls against two free places start two.

The cap is ``domain/reader.style_unit_cap``: ``brief`` and ``detailed`` have one, ``standard`` none, so a run
with the defaults carries no such middleware.

Example:
    ``UnitCapMiddleware(max_units=2, style="brief")``: the third research ``task`` of a run is refused.

Raises:
    KnobError: ``max_units`` is not a positive whole number, or ``style`` names no ``report_style``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.errors import tool_error_text
from ..domain.knobs import KnobError
from ..domain.names import Role, ToolErrorClass, ToolName
from ..domain.reader import ReportStyle, style_refusal
from ..run import Run, run_hook


@dataclass
class _UnitsStarted:
    """The research units a run has started (a run attachment)."""

    count: int = 0


class UnitCapMiddleware(AgentMiddleware):
    """Refuses a run's research units beyond the number its report's style allows."""

    def __init__(self, *, max_units: int, style: str) -> None:
        if isinstance(max_units, bool) or not isinstance(max_units, int) or max_units < 1:
            raise KnobError(type(self).__name__, "max_units", max_units, "a whole number of 1 or more")
        if not isinstance(style, str) or style_refusal(style):
            raise KnobError(type(self).__name__, "style", style, f"one of {', '.join(ReportStyle)}")
        super().__init__()
        self.max_units = max_units
        self.style = style

    @run_hook
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
        *,
        run: Run,
    ) -> ToolMessage | Command:
        call = request.tool_call
        if call["name"] != ToolName.TASK or (call.get("args") or {}).get("subagent_type") != Role.RESEARCH_SUBAGENT:
            return await handler(request)
        started = run.attachments.setdefault(_UnitsStarted, _UnitsStarted)
        if started.count >= self.max_units:
            return ToolMessage(self.refusal(), tool_call_id=call["id"], name=ToolName.TASK, status="error")
        started.count += 1
        return await handler(request)

    def refusal(self) -> str:
        return tool_error_text(
            ToolName.TASK,
            ToolErrorClass.PERMANENT,
            f"this unit was NOT started: the reader asked for a {self.style} report, which has at most "
            f"{self.max_units} research units (report_style), and {self.max_units} have started. Start no more: "
            "write the report from what they found, and name what they did not cover.",
        )
