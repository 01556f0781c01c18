"""A run from its first event to its one end status: triage, containment of internal failures, the end
state decided from one record, the fallback report of a run that ended undelivered, and the claim judge's
model call (``claim_judge``), which the report gate is handed.
"""

from .end_state import EndRecord, EndStatus, decide_end
from .middleware import RunLifecycleMiddleware
from .triage import TriageRouterMiddleware

__all__ = [
    "EndRecord",
    "EndStatus",
    "RunLifecycleMiddleware",
    "TriageRouterMiddleware",
    "decide_end",
]
