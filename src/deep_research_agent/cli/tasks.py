"""``./run.sh tasks`` and the task side of ``./run.sh ask --task NAME``: a user's named tasks on the server.

Contract:
- a task is a thread whose metadata carries ``task`` and ``user_id``; ``task_thread`` finds it with the
  server's thread search, or creates it with that metadata, so the same name continues the same thread;
- ``tasks [--user USER]`` prints one row per task of the user (default: the caller on a shared deployment,
  ``env.store_client``, else ``anonymous``), newest first: name,
  last run (UTC), runs, last status and outcome, cost so far, read from the task records the graph keeps in
  the server's store (``tasks/store.py``); no task prints "No tasks"; exit 2 when no server answers.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..run.owner import ANONYMOUS_USER
from ..tasks.store import TaskRecord, task_namespace
from .env import refusal, server_missing, store_client


async def task_thread(client: Any, name: str, user: str) -> str:
    """The thread of ``user``'s task ``name``: the one its metadata names, else a new one."""
    metadata = {"task": name, "user_id": user}
    found = await client.threads.search(metadata=metadata, limit=1, sort_by="updated_at", sort_order="desc")
    if found:
        return found[0]["thread_id"]
    return (await client.threads.create(metadata=metadata))["thread_id"]


async def user_tasks(client: Any, user: str) -> list[TaskRecord]:
    items: list[dict[str, Any]] = []
    while True:
        page = (await client.store.search_items(list(task_namespace(user)), limit=100, offset=len(items)))["items"]
        items += page
        if len(page) < 100:
            break
    return sorted(
        (TaskRecord.model_validate(item["value"]) for item in items), key=lambda r: r.last_run_at, reverse=True
    )


def render(console: Console, user: str, records: list[TaskRecord]) -> None:
    if not records:
        console.print(Text(f"No tasks for user {user}."))
        return
    table = Table(title=f"Tasks of {user}")
    for column in ("task", "last run", "runs", "status", "outcome", "cost so far"):
        table.add_column(column, no_wrap=column != "task")
    for record in records:
        table.add_row(
            record.name,
            record.last_run_at,
            f" {record.runs} ",
            record.status,
            record.outcome or "-",
            f"${record.cost_usd:.4f}",
        )
    console.print(table)


def cmd_tasks(args: argparse.Namespace, console: Console) -> int:
    url = args.url.rstrip("/")
    if missing := server_missing(url):
        console.print(Text(missing, "red"))
        return 2

    async def listed() -> tuple[str, list[TaskRecord]]:
        client, caller = await store_client(url)
        user = args.user or caller or ANONYMOUS_USER
        return user, await user_tasks(client, user)

    try:
        render(console, *asyncio.run(listed()))
    except httpx.HTTPStatusError as exc:
        console.print(Text(f"The server refused: {refusal(exc)}", "red"))
        return 1
    return 0
