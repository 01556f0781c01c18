"""The chart offer: once a chart is called for, the orchestrator reads how to write one.

Contract (orchestrator only; inside the hand-over, so it reads the findings JSON the model reads): while a report
may hold charts (``max_charts`` above 0) and none is delivered yet, a model call whose checkpointed ``findings``
hold a yearly series in one unit, or whose user asked for a chart (``report/chart_prompt.chart_offer``), gets
the chart section after the latest ``task`` result, for that call only: nothing is persisted, and a call with no
chart called for is passed on unchanged. The section is not in the system prompt, so a run that charts nothing
sends none of it (``docs/prompt-budget.md``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, ToolMessage

from ..domain.conversation import last_user_index
from ..domain.findings import Finding
from ..domain.knobs import not_negative
from ..domain.names import ToolName
from ..report.chart_prompt import chart_offer


class ChartOfferMiddleware(AgentMiddleware):
    """Offers a chart to the orchestrator once one is called for (see the module's contract)."""

    def __init__(self, *, max_charts: int) -> None:
        """``max_charts``: the charts a report may hold; 0 offers none."""
        super().__init__()
        not_negative("ChartOfferMiddleware", "max_charts", max_charts)
        self.max_charts = max_charts

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        messages = request.messages
        last = next((i for i in range(len(messages) - 1, -1, -1) if _is_task_result(messages[i])), None)
        if self.max_charts <= 0 or last is None or request.state.get("final_report"):
            return await handler(request)
        offer = chart_offer(
            _findings(request.state.get("findings") or {}), _question(messages), max_charts=self.max_charts
        )
        if offer is None:
            return await handler(request)
        offered = messages[last].model_copy(update={"content": f"{messages[last].text}\n\n{offer}"})
        return await handler(request.override(messages=[*messages[:last], offered, *messages[last + 1 :]]))


def _is_task_result(message: Any) -> bool:
    return isinstance(message, ToolMessage) and message.name == ToolName.TASK


def _question(messages: Sequence[AnyMessage]) -> str:
    index = last_user_index(messages)
    return messages[index].text if index is not None else ""


def _findings(handed_over: Mapping[str, Any]) -> list[Finding]:
    found: list[Finding] = []
    for work in handed_over.values():
        for item in (work.get("findings") or []) if isinstance(work, Mapping) else []:
            try:
                found.append(Finding.model_validate(item))
            except ValueError:
                continue
    return found
