"""The agent's own ``/mcp`` as another agent calls it: the real ``mcp`` Python client over streamable HTTP.

Shared by the ``langgraph dev`` and the ``./run.sh serve`` (Aegra) end-to-end tests, so both drive the
endpoint the same way: a session with a user's bearer token, a call's progress notifications, its text,
and the MCP cancellation notification (the SDK's client sends none of its own).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def mcp_session(server_url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(f"{server_url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


class Progress:
    """The progress notifications of one call."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.messages.append(message or "")

    def thread_id(self) -> str:
        """The thread the call's run went on, as its progress messages name it."""
        [thread_id] = {m.rsplit("(thread ", 1)[1].rstrip(")") for m in self.messages if "(thread " in m}
        return thread_id


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def cancel_last_call(session: ClientSession, reason: str = "the caller gave up") -> None:
    """Sends MCP's ``notifications/cancelled`` for the session's latest request (the call in flight)."""
    request_id = session._request_id - 1  # noqa: SLF001 - the id is not exposed otherwise
    await session.send_notification(
        types.ClientNotification(
            types.CancelledNotification(params=types.CancelledNotificationParams(requestId=request_id, reason=reason))
        )
    )
