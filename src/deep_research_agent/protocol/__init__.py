"""What leaves the process: typed events on the ``custom`` channel, who sent them, and secret scrubbing.

The event models reuse the domain models (findings, usage, citation summary), so the schema is the code.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "EVENT_MODELS": "events",
        "EVENT_TYPES": "events",
        "PROTOCOL_VERSION": "events",
        "STOP_REQUESTS_NAMESPACE": "events",
        "Sender": "sender",
        "current_sender": "sender",
        "emit": "events",
        "redact": "secrets",
        "register_secrets": "secrets",
    },
)
