"""What keeps every agent bounded and honest: budgets, step limit, loop and runaway guards, retries,
metering, the prompt's date, compaction and prompt caching, run as one chain inside each model and tool call.
"""

from .budget import BudgetMiddleware, effective_recursion_limit
from .caching import PromptCachingMiddleware
from .chain import GuardChainMiddleware
from .compaction import ContextCompactionMiddleware
from .halting import stop_agent
from .loop import LoopGuardMiddleware
from .metering import ModelCallHeartbeatMiddleware, side_call_meter, UsageMeteringMiddleware
from .prompt_date import PromptDateMiddleware
from .retry import ModelCallRetryMiddleware
from .runaway import RunawayOutputMiddleware
from .step_limit import StepLimitMiddleware

__all__ = [
    "BudgetMiddleware",
    "ContextCompactionMiddleware",
    "GuardChainMiddleware",
    "LoopGuardMiddleware",
    "ModelCallHeartbeatMiddleware",
    "ModelCallRetryMiddleware",
    "PromptCachingMiddleware",
    "PromptDateMiddleware",
    "RunawayOutputMiddleware",
    "StepLimitMiddleware",
    "UsageMeteringMiddleware",
    "effective_recursion_limit",
    "side_call_meter",
    "stop_agent",
]
