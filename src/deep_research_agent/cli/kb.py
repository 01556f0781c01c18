"""``kb``: an operator lists, exports or deletes a user's knowledge-base dataset on the agent server.

Contract (through the SDK's ``client.store`` API, so it works against any LangGraph server's store):
- ``kb list [--user U] [--dataset D]`` prints one line per entry (id, when, source, the start of its text)
  and the count; without ``--user`` and ``--dataset`` it first lists every user and dataset that holds entries;
- ``kb export [--user U] [--dataset D] [--out FILE]`` writes the dataset as JSON lines, one entry per line
  (``id`` plus the stored value), to FILE or stdout;
- ``kb delete --user U [--dataset D] --yes`` deletes every entry of the dataset and prints how many; without
  ``--yes`` it deletes nothing and exits 2;
- ``--user`` defaults to the caller on a shared deployment (``./run.sh serve``, which shows each caller only
  its own entries: ``env.store_client``), else to ``anonymous`` (the user of a run without auth or
  ``user_id``), and ``--dataset`` to ``main``; exit 2 when no server answers, else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from ..knowledge.namespace import DEFAULT_DATASET, KNOWLEDGE_NAMESPACE, knowledge_namespace
from ..run.owner import ANONYMOUS_USER, label_value
from .env import refusal, server_missing, store_client

_PAGE = 100


def dataset_namespace(user: str, dataset: str) -> list[str]:
    return list(knowledge_namespace(user, dataset))


def cmd_kb(args: argparse.Namespace, console: Console) -> int:
    if missing := server_missing(args.url.rstrip("/")):
        console.print(Text(missing, "red"))
        return 2
    if args.kb_action == "delete" and not args.yes:
        console.print("[red]Nothing deleted:[/red] pass --yes to delete every entry of the dataset.")
        return 2
    try:
        return asyncio.run(_run(args, console))
    except httpx.HTTPStatusError as exc:
        console.print(f"[red]The server refused:[/red] {escape(refusal(exc))}")
        return 1


async def _run(args: argparse.Namespace, console: Console) -> int:
    client, caller = await store_client(args.url)
    user, dataset = args.user or caller or ANONYMOUS_USER, args.dataset or DEFAULT_DATASET
    namespace = dataset_namespace(user, dataset)
    if args.kb_action == "list":
        if args.user is None and args.dataset is None:
            await _print_datasets(client, console)
        items = await _items(client, namespace)
        console.print(f"Dataset {dataset!r} of user {user!r}: {len(items)} entr{'y' if len(items) == 1 else 'ies'}.")
        for item in items:
            value = item["value"]
            text = " ".join(str(value.get("text", "")).split())
            console.print(f"{item['key']}  {value.get('remembered_at', '')}  {escape(str(value.get('source', '')))}")
            console.print(f"    {escape(text[:160])}{'…' if len(text) > 160 else ''}")
        return 0
    if args.kb_action == "export":
        items = await _items(client, namespace)
        lines = "".join(json.dumps({"id": item["key"], **item["value"]}, ensure_ascii=False) + "\n" for item in items)
        if args.out:
            Path(args.out).write_text(lines, encoding="utf-8")
            console.print(f"Exported {len(items)} entries of dataset {dataset!r} of user {user!r} to {args.out}.")
        else:
            sys.stdout.write(lines)
        return 0
    items = await _items(client, namespace)
    for item in items:
        await client.store.delete_item(namespace, item["key"])
    console.print(f"Deleted {len(items)} entries of dataset {dataset!r} of user {user!r}.")
    return 0


async def _items(client: Any, namespace: list[str]) -> list[dict[str, Any]]:
    """Every item of exactly this namespace (a search by prefix would also reach longer namespaces)."""
    items: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = (await client.store.search_items(namespace, limit=_PAGE, offset=offset))["items"]
        offset += len(page)
        items += [item for item in page if list(item["namespace"]) == namespace]
        if len(page) < _PAGE:
            items.sort(key=lambda item: (item.get("created_at") or "", item["key"]))
            return items


async def _print_datasets(client: Any, console: Console) -> None:
    found = await client.store.list_namespaces(prefix=list(KNOWLEDGE_NAMESPACE), max_depth=4, limit=1000)
    pairs = sorted((label_value(ns[2]), label_value(ns[3])) for ns in (found.get("namespaces") or []) if len(ns) == 4)
    if not pairs:
        console.print("No knowledge-base entries on this server yet.")
        return
    console.print("Users and datasets with entries:")
    for user, dataset in pairs:
        console.print(f"  {escape(user)} / {escape(dataset)}")
