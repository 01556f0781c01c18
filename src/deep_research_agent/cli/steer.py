"""The ``steer`` command: send a steering message to the run in progress on a thread, and return.

Contract: ``steer THREAD_ID MESSAGE [--url URL]`` puts the message for the thread's running run
(``service/steering.py``) and prints which run it went to; the run acknowledges it on its own stream
(``status: steer_received``), which ``ask`` shows. Exit 0 once sent; 1 when the thread has no run in progress;
2 for an empty message or when no server answers. Works without a TTY, so a script can steer a run.
"""

from __future__ import annotations

import argparse
import asyncio

from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from ..service.steering import NoRunningRun, SteerRequest, send_steering
from .env import server_missing


async def steer(url: str, thread_id: str, message: str, console: Console) -> int:
    from langgraph_sdk import get_client

    client = get_client(url=url)
    try:
        steered = await send_steering(client, thread_id, message, by="ask")
    except NoRunningRun as exc:
        console.print(Text(str(exc), "red"))
        return 1
    finally:
        await client.aclose()
    console.print(Text(f"Steering sent to run {steered.run_id} on thread {thread_id}."))
    return 0


def cmd_steer(args: argparse.Namespace, console: Console) -> int:
    try:
        SteerRequest(message=args.message)
    except ValidationError:
        console.print(Text("A steering message needs some text.", "red"))
        return 2
    url = args.url.rstrip("/")
    if missing := server_missing(url):
        console.print(Text(missing, "red"))
        return 2
    return asyncio.run(steer(url, args.thread_id, args.message, console))
