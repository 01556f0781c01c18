"""Turn end: once the turn's deliverable is out, the turn ends, and its last AI message is the deliverable.

Contract (orchestrator only; outside the guard chain, so the call it answers is neither metered nor
announced): after ``submit_report`` delivered a report or ``request_clarification`` asked its questions,
the next model call does not reach the model. It is answered with the turn's last AI message: the
delivered report (the checked text, the same as ``final_report``, each chart shown as its image on this
server's ``/charts`` route, its caption, notes and data table) or the questions as a numbered list.
A generic client that renders ``messages`` then shows the result as the answer; the tool-call rows stay.
The turn ends there because that message calls no tool, so delivery never depends on the model choosing
to stop, and no graph step is spent on a hook.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langgraph.config import get_config

from ..domain.charts import ChartRecord, chart_path
from ..domain.conversation import deliverable_message
from ..evidence.store import EvidenceStore
from ..report.charts import charts_as_markdown
from ..report.rendering import readable_report
from ..run import Run, RunControl, run_hook
from .clarification import questions_text


class TurnEndMiddleware(AgentMiddleware):
    """Answers the model call after a delivery with the deliverable itself, which ends the turn."""

    def __init__(self, *, public_url: str = "") -> None:
        """``public_url``: where clients reach this server, the base of the chart images the answer links
        (``""``: links relative to the server, which only the web UI resolves)."""
        super().__init__()
        self.public_url = public_url.rstrip("/")

    @run_hook
    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]], *, run: Run
    ) -> ModelResponse:
        answer = deliverable(
            request.state, run.control, run.evidence, chart_url=answer_images(self.public_url, run.key)
        )
        if answer is None:
            return await handler(request)
        return ModelResponse(result=[deliverable_message(answer)])


def answer_images(public_url: str, run_id: str) -> Callable[[ChartRecord], str] | None:
    """The address of each chart's image on this server (``public_url``: where clients reach it, ``""`` for
    relative links), for the run that delivered it; None outside a graph run, where there is no thread."""
    thread_id = _thread_id()
    if not thread_id:
        return None
    return lambda record: public_url.rstrip("/") + chart_path(thread_id, run_id, record.id)


def deliverable(
    state: Mapping[str, Any],
    control: RunControl,
    evidence: EvidenceStore,
    *,
    chart_url: Callable[[ChartRecord], str | None] | None = None,
) -> str | None:
    """What the turn delivered, as the user should read it; None while nothing is delivered. Each chart is its
    image (at ``chart_url``; none without it), caption, notes and data table."""
    if control.report_delivered:
        report = charts_as_markdown(state.get("final_report") or "", chart_url or (lambda record: None))
        return readable_report(report, evidence)
    if control.clarification_requested and control.questions:
        return questions_text(control.questions)
    return None


def _thread_id() -> str | None:
    try:
        return (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:  # outside a graph run (a unit test): no thread to address images on
        return None
