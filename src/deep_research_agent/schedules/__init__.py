"""Scheduled research: a named task plus a cron on the server's own cron engine.

``spec.py`` says what a schedule is as a cron and what the server refuses (import-light: the CLI uses it);
``policy.py`` is the webhook URL check; ``guard.py`` is the thin layer in front of the engine's cron API that
refuses bad schedules and completes good ones; ``listing.py`` is the Watching list (``GET /schedules``);
``delivery.py`` is what LangGraph's run webhook sends and the webhook settings handed to the dev server.
Nothing here imports a module at package level, so ``import deep_research_agent.schedules.spec`` stays cheap.
"""

__all__ = ["delivery", "guard", "listing", "policy", "spec"]
