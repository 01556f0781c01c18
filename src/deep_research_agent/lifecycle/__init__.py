"""A run from its first event to its one end status: triage, containment of internal failures, the
outcome, the fallback report of a run that ended undelivered, and the claim judge's model call
(``claim_judge``), which the report gate is handed. The end of the turn itself (its last message, its end
status) is ``delivery``'s.
"""

from .middleware import RunLifecycleMiddleware
from .triage import TriageRouterMiddleware

__all__ = [
    "RunLifecycleMiddleware",
    "TriageRouterMiddleware",
]
