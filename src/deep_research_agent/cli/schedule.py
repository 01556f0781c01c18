"""``./run.sh schedule add|list|pause|resume|remove``: research that keeps watch, on the server's cron engine.

Contract:
- ``add NAME "QUESTION" --cron EXPR [--timezone TZ] [--webhook URL] [--config JSON] [--paused]`` creates the
  schedule as one cron (``client.crons.create`` with ``schedules.spec.cron_body``): its runs ask QUESTION on
  EXPR (in TZ, default UTC), each continuing the task NAME on a thread of its own; the server's schedule guard
  refuses a bad cron, timezone, frequency, webhook, a name the user already has or one schedule too many, and
  its ``detail`` is printed (exit 1) with nothing created; a ``--config`` that is no JSON object exits 2
  before anything is sent;
- ``list`` prints the user's Watching list (``GET /schedules``): name, cron, next run, paused or not, the last
  run's outcome, runs, cost, webhook host, then each schedule's latest digests; ``--json`` prints the JSON;
- ``pause``, ``resume`` and ``remove NAME`` find the user's schedule by name (``GET /schedules/NAME``) and
  pause, resume or delete its cron (``client.crons.update``/``delete``); the task and its digests stay (the
  task keeps its memory, ``./run.sh tasks`` lists it); a name the user has no schedule of exits 1;
- ``--user USER`` names the user on a server without auth (default ``anonymous``); on a shared deployment the
  caller's token decides (``LANGGRAPH_API_KEY``). Exit 2 when no server answers.
Import-light: LangChain and LangGraph are never loaded here (``schedules/spec.py`` is plain Python).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..run.owner import ANONYMOUS_USER
from ..schedules.spec import cron_body
from .env import refusal, server_missing

SCHEDULES_PATH = "/schedules"  # routes.py, not imported: it needs the server's packages
SHOWN_DIGESTS = 3


def cmd_schedule(args: argparse.Namespace, console: Console) -> int:
    config: dict[str, Any] = {}
    if getattr(args, "config", None):
        try:
            config = json.loads(args.config)
        except ValueError as exc:
            console.print(Text(f"Invalid --config: {exc}", "red"))
            return 2
        if not isinstance(config, dict):
            console.print(Text("Invalid --config: give a JSON object.", "red"))
            return 2
    url = args.url.rstrip("/")
    if missing := server_missing(url):
        console.print(Text(missing, "red"))
        return 2
    from langgraph_sdk import get_client

    client = get_client(url=url)
    user = args.user or ANONYMOUS_USER
    try:
        if args.verb == "add":
            return asyncio.run(_add(client, console, args, user, config))
        if args.verb == "list":
            return asyncio.run(_list(client, console, user, as_json=args.json))
        return asyncio.run(_change(client, console, args.verb, args.name, user))
    except httpx.HTTPStatusError as exc:
        console.print(Text(f"The server refused: {refusal(exc)}", "red"))
        return 1


async def _add(client: Any, console: Console, args: argparse.Namespace, user: str, config: dict[str, Any]) -> int:
    body = cron_body(
        args.name, args.question, args.cron, user=user, timezone=args.timezone, webhook=args.webhook,
        config=config, enabled=not args.paused,
    )  # fmt: skip
    try:
        cron = await client.http.post("/runs/crons", json=body)
    except httpx.HTTPStatusError as exc:
        console.print(Text(f"The schedule was not added: {refusal(exc)}", "red"))
        return 1
    state = "paused" if args.paused else f"next run {cron.get('next_run_date') or 'as the cron says'}"
    console.print(
        Text(
            f"Schedule {args.name} added: {args.cron!r} ({args.timezone or 'UTC'}), {state}. Each run continues the "
            f"task {args.name}; ./run.sh schedule list shows its digests."
        )
    )
    return 0


async def _list(client: Any, console: Console, user: str, *, as_json: bool) -> int:
    listed = await client.http.get(SCHEDULES_PATH, params={"user": user})
    if as_json:
        console.print_json(json.dumps(listed))
        return 0
    schedules = listed.get("schedules") or []
    if not schedules:
        console.print(Text(f"No schedules for user {listed.get('user', user)}."))
        return 0
    table = Table(title=f"Schedules of {listed.get('user', user)}")
    for column in ("schedule", "cron", "next run", "state", "last run", "outcome", "runs", "cost", "webhook"):
        table.add_column(column, no_wrap=column not in ("schedule", "webhook"))
    for view in schedules:
        last = view.get("last") or {}
        table.add_row(
            view["name"],
            f"{view['cron']} ({view['timezone']})",
            view.get("next_run_at") or "-",
            "active" if view["enabled"] else "paused",
            last.get("finished_at") or "-",
            ("FAILED: " if last.get("failed") else "") + str(last.get("outcome") or last.get("status") or "-"),
            f" {view['runs']} ",
            f"${view['cost_usd']:.4f}",
            view.get("webhook") or "-",
        )
    console.print(table)
    for view in schedules:
        for digest in (view.get("digests") or [])[:SHOWN_DIGESTS]:
            console.print(
                Text(f"{view['name']} · {digest['finished_at']} · {digest['headline']} · {digest['report_path']}")
            )
    return 0


async def _change(client: Any, console: Console, verb: str, name: str, user: str) -> int:
    try:
        view = await client.http.get(f"{SCHEDULES_PATH}/{_quoted(name)}", params={"user": user})
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 404:
            console.print(
                Text(f"No schedule named {name!r} for user {user}: ./run.sh schedule list shows them.", "red")
            )
            return 1
        raise
    if verb == "remove":
        await client.crons.delete(view["cron_id"])
        console.print(Text(f"Schedule {name} removed; its task and digests stay (./run.sh tasks)."))
        return 0
    await client.crons.update(view["cron_id"], enabled=verb == "resume")
    console.print(Text(f"Schedule {name} {'resumed' if verb == 'resume' else 'paused'}."))
    return 0


def _quoted(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="")
