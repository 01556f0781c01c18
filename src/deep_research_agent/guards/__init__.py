"""What keeps every agent bounded and honest: budgets, step limit, loop and runaway guards, retries,
metering, the prompt's date, compaction and prompt caching, run as one chain inside each model and tool call.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "BudgetMiddleware": "budget",
        "ContextCompactionMiddleware": "compaction",
        "GuardChainMiddleware": "chain",
        "LoopGuardMiddleware": "loop",
        "ModelCallHeartbeatMiddleware": "metering",
        "ModelCallRetryMiddleware": "retry",
        "PromptCachingMiddleware": "caching",
        "PromptDateMiddleware": "prompt_date",
        "RunawayOutputMiddleware": "runaway",
        "StepLimitMiddleware": "step_limit",
        "UsageMeteringMiddleware": "metering",
        "effective_recursion_limit": "budget",
        "side_call_meter": "metering",
        "stop_agent": "halting",
    },
)
