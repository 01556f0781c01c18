"""What keeps every agent bounded and honest: budgets, the step limit, loop and runaway guards, and the chain
that runs them (with the model-call plumbing of ``modelcalls/``) inside each model and tool call.
"""

from .budget import BudgetLimits, BudgetMiddleware, effective_recursion_limit
from .chain import GuardChainMiddleware
from .halting import stop_agent
from .loop import LoopGuardMiddleware
from .runaway import RunawayOutputMiddleware
from .step_limit import StepLimitMiddleware

__all__ = [
    "BudgetLimits",
    "BudgetMiddleware",
    "GuardChainMiddleware",
    "LoopGuardMiddleware",
    "RunawayOutputMiddleware",
    "StepLimitMiddleware",
    "effective_recursion_limit",
    "stop_agent",
]
