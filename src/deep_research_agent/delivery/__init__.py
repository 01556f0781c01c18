"""How a turn delivers: ``submit_report`` behind its citation gate, completion nudges, clarifying
questions, the user's stop requests, and the turn's end once a deliverable is out.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "ClarificationMiddleware": "clarification",
        "CompletionMiddleware": "completion",
        "ReportGateMiddleware": "report_gate",
        "ReportMiddleware": "submit",
        "start_watching": "stop",
        "TurnEndMiddleware": "turn_end",
        "request_clarification": "clarification",
        "submit_report": "submit",
    },
)
