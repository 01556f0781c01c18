"""Sending a steering message to the run in progress on a thread, as its caller (``POST /steer``, ``./run.sh
steer``, the web UI's composer): the run is found and the message put in the store through the server's API
with the caller's credentials, so the deployment's auth decides whose thread it is and, on Aegra, the item
lands in the caller's scope, where the run's watcher reads it (``delivery/stop.py``, ``delivery/steer.py``).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ..protocol.events import MAX_STEER_CHARS, steer_namespace

if TYPE_CHECKING:
    from langgraph_sdk.client import LangGraphClient

__all__ = ["NoRunningRun", "SteerRequest", "Steered", "send_steering"]


class SteerRequest(BaseModel):
    """The body of ``POST /steer/{thread_id}``."""

    message: str = Field(min_length=1, max_length=MAX_STEER_CHARS, pattern=r"\S", description="What the user typed.")


class Steered(BaseModel):
    """Where the steering message went: the run it steers."""

    thread_id: str
    run_id: str


class NoRunningRun(LookupError):
    """The thread has no run in progress that the caller may steer (or is no thread the caller may read)."""


async def send_steering(client: LangGraphClient, thread_id: str, message: str, *, by: str) -> Steered:
    """Put ``message`` for the run in progress on ``thread_id``; ``by`` names the client (``ask``, ``ui``, ``http``)."""
    # The caller holds a client, so the SDK is loaded already; the command that only validates a message
    # (``./run.sh steer`` refusing an empty one) does not load it.
    from langgraph_sdk.errors import NotFoundError, PermissionDeniedError, UnprocessableEntityError

    request = SteerRequest(message=message)
    try:
        running = await client.runs.list(thread_id, status="running", limit=1)
    except (NotFoundError, PermissionDeniedError, UnprocessableEntityError):
        running = []
    if not running:
        raise NoRunningRun(f"Thread {thread_id} has no run in progress to steer.")
    run_id = str(running[0]["run_id"])
    await client.store.put_item(
        list(steer_namespace(run_id)), uuid.uuid4().hex, {"message": request.message.strip(), "by": by}
    )
    return Steered(thread_id=thread_id, run_id=run_id)
