"""Model-call plumbing, apart from the guards: the chat models per tier slot, retries with visible waits,
usage metering and the heartbeat, the prompt's date, context compaction and prompt caching.
"""

from .caching import PromptCachingMiddleware
from .compaction import ContextCompactionMiddleware
from .heartbeat import ModelCallHeartbeatMiddleware
from .metering import UsageMeteringMiddleware, side_call_meter
from .models import chat_model
from .prompt_date import PromptDateMiddleware
from .retry import ModelCallRetryMiddleware

__all__ = [
    "ContextCompactionMiddleware",
    "ModelCallHeartbeatMiddleware",
    "ModelCallRetryMiddleware",
    "PromptCachingMiddleware",
    "PromptDateMiddleware",
    "UsageMeteringMiddleware",
    "chat_model",
    "side_call_meter",
]
