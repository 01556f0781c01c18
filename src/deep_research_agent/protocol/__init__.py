"""What leaves the process: typed events on the ``custom`` channel and who sent them (secrets are scrubbed by
``domain/secrets.py``).

The event models reuse the domain models (findings, usage, citation summary), so the schema is the code.
"""

from .events import EVENT_MODELS, EVENT_TYPES, PROTOCOL_VERSION, STOP_REQUESTS_NAMESPACE, emit
from .sender import Sender, current_sender

__all__ = [
    "EVENT_MODELS",
    "EVENT_TYPES",
    "PROTOCOL_VERSION",
    "STOP_REQUESTS_NAMESPACE",
    "Sender",
    "current_sender",
    "emit",
]
