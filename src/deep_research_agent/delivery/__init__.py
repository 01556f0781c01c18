"""How a turn delivers and ends: ``submit_report`` behind its citation gate, completion nudges, clarifying
questions, the user's stop requests, and the turn's end: its last message once a deliverable is out
(``turn_end``) and its one end status (``end_state``).
"""

from .clarification import ClarificationMiddleware, request_clarification
from .completion import CompletionMiddleware
from .end_state import EndRecord, EndStatus, decide_end
from .report_gate import ReportGateMiddleware
from .stop import start_watching
from .submit import ReportMiddleware, submit_report
from .turn_end import TurnEndMiddleware

__all__ = [
    "ClarificationMiddleware",
    "CompletionMiddleware",
    "EndRecord",
    "EndStatus",
    "ReportGateMiddleware",
    "ReportMiddleware",
    "TurnEndMiddleware",
    "decide_end",
    "request_clarification",
    "start_watching",
    "submit_report",
]
