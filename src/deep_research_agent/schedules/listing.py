"""The Watching list: a user's schedules with their next run, last outcome, cost and digests, newest first.

Contract: ``watching(client, store, user)`` reads the crons the caller may see through the server's API
(``client`` carries the caller's credentials, so the engine's auth decides which), keeps the schedules
``spec.belongs_to`` gives ``user``, and joins each with its task's record from the store (``tasks/store.py``),
which holds the task's scheduled runs (``DigestEntry``). Each ``ScheduleView`` says what the schedule asks and
when (cron, timezone, paused or not, next run), where its webhook posts (scheme and host only: a webhook's
path often is its secret), what its runs cost, and its digests newest first, each with the paths of its
report (``/reports/{thread_id}``: each scheduled run has a thread of its own) and its thread in the web UI. The same JSON answers
``GET /schedules`` (``routes.py``), ``./run.sh schedule list`` and the web UI's Watching list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from langgraph.store.base import BaseStore
from pydantic import BaseModel, Field

from ..tasks.store import DigestEntry, task_digests
from .spec import all_crons, belongs_to, is_schedule, question_of, schedule_name


class DigestView(DigestEntry):
    report_path: str = Field(description="The run's report: GET it, or add ?format=html|pdf|docx.")
    thread_path: str = Field(description="The run in the web UI.")


class ScheduleView(BaseModel):
    name: str
    question: str
    cron: str
    timezone: str
    enabled: bool
    next_run_at: str | None = None
    webhook: str | None = Field(default=None, description="Where the webhook posts: scheme and host.")
    cron_id: str
    runs: int = Field(default=0, description="Scheduled runs recorded (at most the last 50).")
    cost_usd: float = 0.0
    last: DigestView | None = None
    digests: list[DigestView] = Field(default_factory=list, description="Newest first.")


async def watching(client: Any, store: BaseStore, user: str) -> list[ScheduleView]:
    """``user``'s schedules, by name (see the module contract)."""
    crons = [c for c in await all_crons(client) if is_schedule(c) and belongs_to(c, user)]
    views = []
    for cron in sorted(crons, key=schedule_name):
        digests = [_digest_view(entry) for entry in reversed(await task_digests(store, user, schedule_name(cron)))]
        views.append(
            ScheduleView(
                name=schedule_name(cron),
                question=question_of(cron),
                cron=str(cron.get("schedule") or ""),
                timezone=_timezone(cron),
                enabled=bool(cron.get("enabled", True)),
                next_run_at=str(cron["next_run_date"]) if cron.get("next_run_date") else None,
                webhook=_where(cron),
                cron_id=str(cron.get("cron_id")),
                runs=len(digests),
                cost_usd=round(sum(d.cost_usd for d in digests), 6),
                last=digests[0] if digests else None,
                digests=digests,
            )
        )
    return views


def _digest_view(entry: DigestEntry) -> DigestView:
    return DigestView(
        **entry.model_dump(),
        report_path=f"/reports/{entry.thread_id}",
        thread_path=f"/ui/threads/{entry.thread_id}",
    )


def _payload(cron: Mapping[str, Any]) -> Mapping[str, Any]:
    payload = cron.get("payload")
    return payload if isinstance(payload, Mapping) else {}


def _timezone(cron: Mapping[str, Any]) -> str:
    # langgraph-api keeps it on the cron, Aegra in its payload.
    return str(cron.get("timezone") or _payload(cron).get("timezone") or "UTC")


def _where(cron: Mapping[str, Any]) -> str | None:
    url = cron.get("webhook") or _payload(cron).get("webhook")
    if not url:
        return None
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
