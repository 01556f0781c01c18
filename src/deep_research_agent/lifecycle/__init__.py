"""A run from its first event to its one end status: its opening (handshake, admission, the takeover of a
resumed run), its contained calls, its ledger, its closing (what it leaves stored, the fallback report of
a run that ended undelivered, the outcome, the end status), triage, and the claim judge's model call
(``claim_judge``), which the report gate is handed. The end of the turn itself (its last message, its end
status) is ``delivery``'s.
"""

from .closing import RunClosingMiddleware
from .contained_calls import ContainedCallsMiddleware
from .ledger import RunLedgerMiddleware
from .opening import RunOpeningMiddleware
from .parts import RunLifecycle
from .triage import TriageRouterMiddleware

__all__ = [
    "ContainedCallsMiddleware",
    "RunClosingMiddleware",
    "RunLedgerMiddleware",
    "RunLifecycle",
    "RunOpeningMiddleware",
    "TriageRouterMiddleware",
]
