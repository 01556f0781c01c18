"""A run from its first event to its one end status: triage, containment of internal failures, the end
state decided from one record, and the fallback report of a run that ended undelivered.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "EndRecord": "end_state",
        "EndStatus": "end_state",
        "RunLifecycleMiddleware": "middleware",
        "TriageRouterMiddleware": "triage",
        "decide_end": "end_state",
    },
)
