"""What a finished scheduled run's webhook carries: LangGraph's run webhook, with the run's public fields only.

When a run of a schedule's cron finishes, the server POSTs the run (``run_id``, ``thread_id``, ``status``,
``metadata`` with the schedule's name, ``run_started_at``, ``run_ended_at``) and the thread's ``values``, whose
``digest`` key (``tasks/digest.Digest``) holds the task, the outcome, the digest's Markdown and the report's
URL. ``WEBHOOK_FIELDS`` are the run's fields a webhook carries; the rest of the run (its ``kwargs``: the whole
config, which may hold a caller's keys) never leaves the server. ``langgraph.json`` hands them to
langgraph-api (``webhooks.allowed_fields``, with ``webhooks.url.disable_loopback`` off: the schedule guard
holds every webhook to ``policy.py``, which lets the hosts in ``DRA_WEBHOOK_ALLOW_HOSTS`` through), and
``deploy/webhooks.py`` posts the same on Aegra.
"""

from __future__ import annotations

WEBHOOK_FIELDS = (
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "run_started_at",
    "run_ended_at",
    "webhook_sent_at",
    "values",
    "error",
)
