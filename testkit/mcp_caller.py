"""The agent's own ``/mcp`` as another agent calls it: the real ``mcp`` Python client over streamable HTTP.

Shared by the ``langgraph dev`` and the ``./run.sh serve`` (Aegra) end-to-end tests, so both drive the
endpoint the same way: a session with a user's bearer token, a call's progress notifications, its text,
and the MCP cancellation notification (the SDK's client sends none of its own).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
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


@dataclass
class CancelledResearch:
    """A ``research`` call cancelled mid-run: what the call answered, and the report the stopped run left."""

    answer: types.CallToolResult | None
    error: BaseException | None
    thread_id: str
    report: types.CallToolResult


async def research_then_cancel(
    session: ClientSession, question: str, *, reached: Callable[[], bool], timeout: float = 120
) -> CancelledResearch:
    """Calls ``research``, cancels it once ``reached()`` says the run got to its slow step, then waits for the
    report the stopped run leaves (the cancelled call is answered at once, the report a moment later)."""
    progress = Progress()
    outcome: dict[str, object] = {}

    async def research() -> None:
        try:
            outcome["answer"] = await session.call_tool("research", {"question": question}, progress_callback=progress)
        except Exception as exc:  # noqa: BLE001 - the cancelled call's answer, inspected by the test
            outcome["error"] = exc

    async with anyio.create_task_group() as calls:
        calls.start_soon(research)
        with anyio.fail_after(timeout):
            while not reached():
                await anyio.sleep(0.05)
        await cancel_last_call(session)
    thread_id = progress.thread_id()
    with anyio.fail_after(timeout):
        while (report := await session.call_tool("get_report", {"thread_id": thread_id})).isError:
            assert "no report yet" in text_of(report), text_of(report)
            await anyio.sleep(0.3)
    answer, error = outcome.get("answer"), outcome.get("error")
    assert answer is None or isinstance(answer, types.CallToolResult)
    assert error is None or isinstance(error, BaseException)
    return CancelledResearch(answer=answer, error=error, thread_id=thread_id, report=report)


@dataclass
class OthersAnswers:
    """What a user who does not own a thread gets of it from each tool, and an anonymous caller's status."""

    report: types.CallToolResult
    evidence: types.CallToolResult
    follow_up: types.CallToolResult
    anonymous_status: int

    def tool_answers(self) -> tuple[types.CallToolResult, ...]:
        return self.report, self.evidence, self.follow_up


async def what_others_get(thread_id: str, *, other_url: str, other_token: str, anonymous_url: str) -> OthersAnswers:
    """Asks for the thread's report, evidence and a follow-up as another user, and lists the tools with no token."""
    async with mcp_session(other_url, other_token) as other:
        report = await other.call_tool("get_report", {"thread_id": thread_id})
        evidence = await other.call_tool("get_evidence", {"thread_id": thread_id})
        follow_up = await other.call_tool("follow_up", {"thread_id": thread_id, "question": "And the cost?"})
    async with httpx.AsyncClient(timeout=30) as stranger:
        refused = await stranger.post(
            f"{anonymous_url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    return OthersAnswers(report=report, evidence=evidence, follow_up=follow_up, anonymous_status=refused.status_code)
