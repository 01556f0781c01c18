"""The chart offer: when the findings handed over hold a series, the orchestrator reads that a chart may show it.

Contract (orchestrator only; inside the hand-over, so it reads the findings JSON the model reads): while a report
may hold charts (``max_charts`` above 0) and none is delivered yet, a model call whose checkpointed ``findings``
hold a yearly series in one unit (``report/chart_prompt.findings_series``) gets the offer line after the latest
``task`` result, for that call only: nothing is persisted, and a call without a series is passed on unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import ToolMessage

from ..domain.findings import Finding
from ..domain.knobs import not_negative
from ..domain.names import ToolName
from ..report.chart_prompt import series_offer


class ChartOfferMiddleware(AgentMiddleware):
    """Offers a chart to the orchestrator when the findings hold a series (see the module's contract)."""

    def __init__(self, *, max_charts: int) -> None:
        """``max_charts``: the charts a report may hold; 0 offers none."""
        super().__init__()
        not_negative("ChartOfferMiddleware", "max_charts", max_charts)
        self.max_charts = max_charts

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        if self.max_charts <= 0 or request.state.get("final_report"):
            return await handler(request)
        offer = series_offer(_findings(request.state.get("findings") or {}))
        last = next((i for i in range(len(request.messages) - 1, -1, -1) if _is_task_result(request.messages[i])), None)
        if offer is None or last is None:
            return await handler(request)
        message = request.messages[last]
        content = f"{message.text}\n\n{offer}"
        messages = [
            *request.messages[:last],
            message.model_copy(update={"content": content}),
            *request.messages[last + 1 :],
        ]
        return await handler(request.override(messages=messages))


def _is_task_result(message: Any) -> bool:
    return isinstance(message, ToolMessage) and message.name == ToolName.TASK


def _findings(handed_over: Mapping[str, Any]) -> list[Finding]:
    found: list[Finding] = []
    for work in handed_over.values():
        for item in (work.get("findings") or []) if isinstance(work, Mapping) else []:
            try:
                found.append(Finding.model_validate(item))
            except ValueError:
                continue
    return found
