"""How a turn delivers: ``submit_report`` behind its citation gate, completion nudges, clarifying
questions, the user's stop requests, and the turn's end once a deliverable is out.
"""

from .clarification import ClarificationMiddleware, request_clarification
from .completion import CompletionMiddleware
from .report_gate import ReportGateMiddleware
from .stop import start_watching
from .submit import ReportMiddleware, submit_report
from .turn_end import TurnEndMiddleware

__all__ = [
    "ClarificationMiddleware",
    "CompletionMiddleware",
    "ReportGateMiddleware",
    "ReportMiddleware",
    "TurnEndMiddleware",
    "request_clarification",
    "start_watching",
    "submit_report",
]
