"""What a schedule is on the server's cron engine, and the cron rules the server holds it to.

A schedule is a cron of the ``deep_research_agent`` graph whose ``config.configurable.task`` names the task
each run continues; the schedule's name is the task's. Every run starts on a thread of its own (the cron
is not bound to a thread and keeps its runs' threads, ``on_run_completed: keep``), so each digest is a report
of its own, which the export routes and the MCP ``get_report`` read like any other; the task's memory in the
store (``tasks/``) is what carries from one run to the next. Cron metadata ``schedule`` names it and
``user_id`` names whom a server without auth files it under; ``configurable.schedule`` tells the graph the
run is scheduled (no clarifying questions, and a digest). The guard (``guard.py``) sets all three.

Contract:
- ``cron_body(...)`` is the body of ``POST /runs/crons`` (``client.crons.create``) for a schedule, the
  form ``./run.sh schedule add`` sends and the one an SDK client may send as it is;
- ``timezone_problem(timezone)`` is why a timezone is refused (no IANA name), or None;
- ``cron_problem(expression, timezone, min_interval_s)`` is why a cron expression, its timezone or its
  frequency is refused, or None: five fields (minute hour day-of-month month day-of-week) or an ``@`` alias
  croniter knows, an IANA timezone, and no two runs closer than ``min_interval_s`` (0: no minimum);
- ``all_crons(client)`` is every cron an SDK client may see, page by page;
- ``is_schedule(cron)``, ``schedule_name(cron)`` read a cron the engine lists; ``belongs_to(cron, user)``
  is whether a listed cron is ``user``'s: a cron the engine stamped with an owner was shown to its owner
  only (its auth scopes crons), and a cron without one (a server without auth) is filed under the
  ``user_id`` its metadata names.
Import-light on purpose: the CLI imports it, so nothing here loads LangChain, LangGraph or the product.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter  # type: ignore[import-untyped]

# The graph id of langgraph.json (graph.py is not imported for it: that would load the agent stack).
GRAPH_ID = "deep_research_agent"
SCHEDULE_KEY = "schedule"
USER_KEY = "user_id"
TASK_KEY = "task"
EXAMPLE = "'0 8 * * MON' (08:00 every Monday)"
# How far ahead a cron's runs are sampled for its shortest interval: enough for a yearly pattern's gaps.
_SAMPLE_RUNS = 1000
_SAMPLE_SPAN = timedelta(days=400)
_PAGE = 100


def cron_body(
    name: str,
    question: str,
    cron: str,
    *,
    user: str,
    timezone: str | None = None,
    webhook: str | None = None,
    config: Mapping[str, Any] | None = None,
    enabled: bool = True,
) -> dict[str, Any]:
    """The ``POST /runs/crons`` body of a schedule: ``question`` asked on ``cron`` as task ``name``."""
    configurable = {**(config or {}), TASK_KEY: name, USER_KEY: user}
    body: dict[str, Any] = {
        "assistant_id": GRAPH_ID,
        "schedule": cron,
        "input": {"messages": [{"role": "user", "content": question}]},
        "config": {"configurable": configurable},
        "metadata": {SCHEDULE_KEY: name, USER_KEY: user},
        "on_run_completed": "keep",
        "enabled": enabled,
    }
    if timezone:
        body["timezone"] = timezone
    if webhook:
        body["webhook"] = webhook
    return body


def cron_problem(expression: str, timezone: str | None, min_interval_s: float) -> str | None:
    """Why the cron ``expression`` in ``timezone`` is refused, or None (see the module contract)."""
    expression = " ".join(str(expression or "").split())
    fields = expression.split(" ")
    if not (len(fields) == 5 or (len(fields) == 1 and expression.startswith("@"))) or not croniter.is_valid(expression):
        return (
            f"{expression!r} is not a cron expression: give five fields, minute hour day-of-month month "
            f"day-of-week, as in {EXAMPLE}."
        )
    if problem := timezone_problem(timezone):
        return problem
    zone = ZoneInfo(timezone or "UTC")
    if min_interval_s > 0 and (shortest := shortest_interval_s(expression, zone)) < min_interval_s:
        return (
            f"{expression!r} runs every {_duration(shortest)} at its most frequent, and this server runs a schedule at "
            f"most every {_duration(min_interval_s)} (DRA_SCHEDULE_MIN_INTERVAL_S): choose a less frequent cron, "
            f"such as '0 8 * * *' (08:00 every day)."
        )
    return None


def timezone_problem(timezone: str | None) -> str | None:
    """Why ``timezone`` is no IANA timezone, or None (None itself is UTC)."""
    try:
        ZoneInfo(timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        return f"Unknown timezone {timezone!r}: give an IANA name such as 'Europe/Sofia' or 'UTC'."
    return None


def shortest_interval_s(expression: str, zone: ZoneInfo) -> float:
    """The shortest time between two consecutive runs of ``expression`` over its next runs, in seconds."""
    start = datetime.now(zone)
    runs = croniter(expression, start)
    previous: datetime = runs.get_next(datetime)
    shortest = math.inf
    for _ in range(_SAMPLE_RUNS):
        following: datetime = runs.get_next(datetime)
        shortest = min(shortest, (following - previous).total_seconds())
        if following - start > _SAMPLE_SPAN:
            break
        previous = following
    return shortest


def _duration(seconds: float) -> str:
    if math.isinf(seconds):
        return "once"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}" if count != 1 else unit
    return f"{int(seconds)} s"


def is_schedule(cron: Mapping[str, Any]) -> bool:
    return bool(schedule_name(cron))


def schedule_name(cron: Mapping[str, Any]) -> str:
    metadata = cron.get("metadata") or {}
    return str(metadata.get(SCHEDULE_KEY) or "") if isinstance(metadata, Mapping) else ""


def belongs_to(cron: Mapping[str, Any], user: str) -> bool:
    """Whether a cron the engine listed is ``user``'s (see the module contract)."""
    if cron.get("user_id"):
        return True
    metadata = cron.get("metadata") or {}
    return str(metadata.get(USER_KEY) or "") == user


async def all_crons(client: Any) -> list[dict[str, Any]]:
    """Every cron the caller may see, page by page."""
    crons: list[dict[str, Any]] = []
    while True:
        page = await client.crons.search(limit=_PAGE, offset=len(crons))
        crons += [dict(c) for c in page]
        if len(page) < _PAGE:
            return crons


def question_of(cron: Mapping[str, Any]) -> str:
    """The question a schedule asks: its one user message."""
    payload = cron.get("payload") or {}
    messages = ((payload.get("input") or {}) if isinstance(payload, Mapping) else {}).get("messages") or []
    for message in messages:
        if isinstance(message, Mapping) and message.get("role") in ("user", "human"):
            return str(message.get("content") or "")
    return ""
