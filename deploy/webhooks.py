"""LangGraph's run webhook for schedules on Aegra: the thinnest layer over an engine that does not send it.

Why: Aegra 0.11 keeps a cron's ``webhook`` but never calls it (``models/crons.py``: "when a future runtime
wires webhook delivery") and leaves it off the runs the cron fires, where ``langgraph dev`` posts every
finished run to its webhook itself. So each instance posts, for the runs of schedules, what langgraph-api
would: the run's public fields (``schedules/delivery.WEBHOOK_FIELDS``) and the thread's values, whose
``digest`` is the scheduled run's digest.

Contract (``WebhookOutbox``, started and stopped by ``deploy/routes.py``'s lifespan on every instance):
- every ``DRA_WEBHOOK_POLL_S`` seconds (default 5) it looks at the runs of the last day that ended
  (``success``, ``error``, ``interrupted``, ``timeout``) and name a schedule (``configurable.schedule``),
  whose user has a cron of that schedule with a webhook, created before the run;
- each such run is claimed in ``dra_webhook_deliveries`` (one row per run, shared by every instance; a
  claim holds ``CLAIM_S``), so one instance posts it, and a post cut short by a killed instance is made
  again by another; a 2xx answer marks it delivered, anything else is tried again after ``POLL_S * 2**n``
  seconds, ``MAX_ATTEMPTS`` times in all, each failure logged;
- the URL is checked against the webhook policy again before each post (``schedules/policy.py``: a name
  may resolve elsewhere now), with the deployment's ``DRA_WEBHOOK_ALLOW_HOSTS``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from aegra_api.core.database import db_manager
from aegra_api.core.orm import get_session_maker
from aegra_api.core.serializers import GeneralSerializer
from sqlalchemy import text

from deep_research_agent.schedules.delivery import WEBHOOK_FIELDS
from deep_research_agent.schedules.policy import webhook_refusal
from deep_research_agent.schedules.spec import SCHEDULE_KEY

logger = logging.getLogger(__name__)

POLL_S = float(os.environ.get("DRA_WEBHOOK_POLL_S") or 5)
CLAIM_S = 60
MAX_ATTEMPTS = 5
RECENT = timedelta(days=1)
ENDED = ("success", "error", "interrupted", "timeout")
_TABLE = """
CREATE TABLE IF NOT EXISTS dra_webhook_deliveries (
    run_id text PRIMARY KEY,
    attempts integer NOT NULL DEFAULT 0,
    claimed_until timestamptz,
    delivered_at timestamptz,
    last_error text
)"""
# Two instances starting at once would race on the CREATE; one lock key serialises them.
_TABLE_LOCK = 8_245_117_045
_CLAIM = text(
    """
INSERT INTO dra_webhook_deliveries (run_id, attempts, claimed_until) VALUES (:run_id, 1, now() + make_interval(secs => :claim))
ON CONFLICT (run_id) DO UPDATE SET attempts = dra_webhook_deliveries.attempts + 1,
    claimed_until = now() + make_interval(secs => :claim)
WHERE dra_webhook_deliveries.delivered_at IS NULL
  AND dra_webhook_deliveries.attempts < :max_attempts
  AND dra_webhook_deliveries.claimed_until < now()
RETURNING attempts"""
)
_DUE = text(
    f"""
SELECT r.run_id, r.thread_id, r.assistant_id, r.status, r.created_at, r.updated_at, r.error_message,
       r.config->'configurable'->>'{SCHEDULE_KEY}' AS schedule, c.payload->>'webhook' AS webhook
FROM runs r
JOIN crons c ON c.user_id = r.user_id AND c.created_at <= r.created_at
    AND c.metadata->>'{SCHEDULE_KEY}' = r.config->'configurable'->>'{SCHEDULE_KEY}'
LEFT JOIN dra_webhook_deliveries d ON d.run_id = r.run_id
WHERE r.status = ANY(:ended) AND r.updated_at >= now() - make_interval(secs => :recent_s)
  AND c.payload->>'webhook' IS NOT NULL
  AND (d.run_id IS NULL OR (d.delivered_at IS NULL AND d.attempts < {MAX_ATTEMPTS} AND d.claimed_until < now()))
ORDER BY r.updated_at"""
)


class WebhookOutbox:
    def __init__(self, allow_hosts: tuple[str, ...]) -> None:
        self.allow_hosts = allow_hosts
        self._task: asyncio.Task[None] | None = None
        self._serializer = GeneralSerializer()

    async def start(self) -> None:
        async with get_session_maker()() as session:
            await session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _TABLE_LOCK})
            await session.execute(text(_TABLE))
            await session.commit()
        self._task = asyncio.create_task(self._loop(), name="dra-webhook-outbox")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _loop(self) -> None:
        async with httpx.AsyncClient(timeout=20.0, follow_redirects=False) as http:
            while True:
                try:
                    for run in await self._due():
                        await self._deliver(http, run)
                except asyncio.CancelledError:
                    raise
                except Exception:  # noqa: BLE001 - the next poll tries again
                    logger.exception("the webhook outbox could not poll")
                await asyncio.sleep(POLL_S)

    async def _due(self) -> list[dict[str, Any]]:
        """Finished runs of schedules with a webhook, not yet delivered nor given up (see the contract)."""
        async with get_session_maker()() as session:
            rows = await session.execute(_DUE, {"ended": list(ENDED), "recent_s": RECENT.total_seconds()})
            return [dict(row) for row in rows.mappings().all()]

    async def _deliver(self, http: httpx.AsyncClient, run: dict[str, Any]) -> None:
        async with get_session_maker()() as session:
            claimed = await session.execute(
                _CLAIM, {"run_id": run["run_id"], "claim": CLAIM_S, "max_attempts": MAX_ATTEMPTS}
            )
            attempts = claimed.scalar_one_or_none()
            await session.commit()
        if attempts is None:
            return  # another instance has it, or its next try is not due yet
        error = await webhook_refusal(run["webhook"], self.allow_hosts)
        if error is None:
            try:
                answer = await http.post(run["webhook"], json=await self._payload(run))
                error = None if answer.is_success else f"HTTP {answer.status_code}"
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"
        async with get_session_maker()() as session:
            if error is None:
                await session.execute(
                    text(
                        "UPDATE dra_webhook_deliveries SET delivered_at = now(), last_error = NULL WHERE run_id = :run_id"
                    ),
                    {"run_id": run["run_id"]},
                )
            else:
                logger.warning("webhook of run %s not delivered (attempt %s): %s", run["run_id"], attempts, error)
                await session.execute(
                    text(
                        "UPDATE dra_webhook_deliveries SET last_error = :error, "
                        "claimed_until = now() + make_interval(secs => :retry_s) WHERE run_id = :run_id"
                    ),
                    {"run_id": run["run_id"], "error": error[:500], "retry_s": POLL_S * 2**attempts},
                )
            await session.commit()

    async def _payload(self, run: dict[str, Any]) -> dict[str, Any]:
        """The run's public fields and its thread's values, as langgraph-api's run webhook sends them."""
        checkpoint = await db_manager.get_checkpointer().aget_tuple(
            {"configurable": {"thread_id": run["thread_id"], "checkpoint_ns": ""}}
        )
        channels = checkpoint.checkpoint.get("channel_values", {}) if checkpoint else {}
        values = {k: v for k, v in channels.items() if not k.startswith(("__", "branch:"))}
        payload = {
            "run_id": run["run_id"],
            "thread_id": run["thread_id"],
            "assistant_id": run["assistant_id"],
            "created_at": run["created_at"].isoformat(),
            "updated_at": run["updated_at"].isoformat(),
            "status": run["status"],
            "metadata": {SCHEDULE_KEY: run["schedule"]},
            "run_started_at": run["created_at"].isoformat(),
            "run_ended_at": run["updated_at"].isoformat(),
            "webhook_sent_at": datetime.now(UTC).isoformat(),
            "values": self._serializer.serialize(values),
        }
        if run["error_message"]:
            payload["error"] = {"error": "RunError", "message": run["error_message"]}
        return {key: value for key, value in payload.items() if key in WEBHOOK_FIELDS}
