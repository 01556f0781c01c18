"""MCP tools for a graph: each server's tool listing, cached, turned into tools research sub-agents call.

Listing a server's tools is a network round-trip (a session handshake plus ``tools/list``), the slowest
part of building a graph, and the graph factory runs on every run. So ``list_tools`` keeps each server's
listing for ``ttl`` seconds, keyed by everything that reaches the server (URL, transport, header digests):
only the first run after a start, or after the TTL, pays for it; ``ttl`` 0 lists on every run. Runs that
start together while a server is being listed wait for that one listing instead of listing again. A
failure is never cached, so the next run tries again. Servers are listed concurrently, each within
``LIST_TIMEOUT_S``, so one server that hangs costs a run that long at most and never stalls the others.

A run's server the deployment's allowlist refused (``McpServer.refused``) is never dialled: its listing is
that refusal, announced as the run's ``mcp_error``.

A stdio server (operator configuration only) is started per session by the MCP client, like it opens
an HTTP session per call. Before connecting, an HTTP server's host name is resolved and refused when it points at a
link-local or metadata address (the URL policy, ``domain/url_policy.py``; settings checked only IP literals). The tools the adapters build open a session of
their own per call, with the server's headers; the MCP transports follow redirects only within the
server's origin, so its credentials never travel elsewhere.

Tool names: a tool whose name another server's tool (or a built-in or custom tool) already has is prefixed
with its server's label (``docs_search``), cut to the 64 characters model APIs accept.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool
from langchain_mcp_adapters.client import MultiServerMCPClient

from ..protocol.events import McpErrorStatus, McpReadyStatus
from ..settings.mcp_servers import SERVER_URLS, McpServer
from .errors import describe

logger = logging.getLogger(__name__)

LIST_TIMEOUT_S = 15.0
_MAX_TOOL_NAME = 64

# One entry per server fingerprint: when it was listed, and its tools.
_listings: dict[str, tuple[float, tuple[BaseTool, ...]]] = {}
# Listings under way, so runs starting together share one round-trip per server.
_in_flight: dict[str, asyncio.Future[Listing]] = {}


@dataclass(frozen=True)
class Listing:
    """What connecting to one server gave: its tools (renamed for the graph), or why it failed."""

    server: McpServer
    tools: tuple[BaseTool, ...] = ()
    error: str | None = None
    cached: bool = False

    def status(self) -> McpReadyStatus | McpErrorStatus:
        """The ``mcp_ready`` or ``mcp_error`` status this listing announces at the start of a run."""
        server, label = self.server.location, self.server.label
        if self.error is not None:
            return McpErrorStatus(server=server, label=label, detail=self.error)
        names = [tool.name for tool in self.tools]
        return McpReadyStatus(server=server, label=label, tool_count=len(names), tools=names, cached=self.cached)

    def identity(self) -> dict[str, Any]:
        """What shapes a graph built from this listing: the tools' names and schemas, or the error."""
        return {
            "server": self.server.fingerprint(),
            "error": self.error,
            "tools": [[tool.name, tool.description, tool.args] for tool in self.tools],
        }


@dataclass
class OpeningStatuses:
    """A run's attachment: what each of its MCP connections gave (``Listing.status``), found by the graph
    factory before the run started, and announced by the lifecycle right after ``run_start``."""

    statuses: list[McpReadyStatus | McpErrorStatus] = field(default_factory=list)


def listings_digest(listings: Sequence[Listing]) -> str:
    return hashlib.sha256(
        json.dumps([l.identity() for l in listings], sort_keys=True, default=str).encode()
    ).hexdigest()


async def list_tools(
    servers: Sequence[McpServer], *, ttl: float, reserved_names: Collection[str] = ()
) -> tuple[Listing, ...]:
    """Every server's listing, from the cache when it is younger than ``ttl``; names made unique."""
    listings = await asyncio.gather(*(_listing(server, ttl) for server in servers))
    return unique_names(listings, reserved_names)


async def _listing(server: McpServer, ttl: float) -> Listing:
    if server.refused is not None:
        return Listing(server, error=server.refused)
    key = json.dumps(server.fingerprint(), sort_keys=True)
    entry = _listings.get(key)
    if entry is not None and ttl > 0 and time.monotonic() - entry[0] < ttl:
        return Listing(server, entry[1], cached=True)
    if ttl <= 0:
        return await _list_now(server, key)
    pending = _in_flight.get(key)
    if pending is None or pending.get_loop() is not asyncio.get_running_loop():
        pending = asyncio.ensure_future(_list_now(server, key))
        _in_flight[key] = pending
        pending.add_done_callback(lambda done: _in_flight.pop(key, None) if _in_flight.get(key) is done else None)
    # Shielded: one run that is cancelled while it waits must not cancel the listing the others wait for.
    return await asyncio.shield(pending)


async def _list_now(server: McpServer, key: str) -> Listing:
    try:
        if server.transport != "stdio":
            await SERVER_URLS.target(server.url)  # a name resolving to a link-local or metadata address raises
        tools = await asyncio.wait_for(_fetch(server), LIST_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - any failure is this server's mcp_error, never the run's
        detail = (
            describe(exc)
            if not isinstance(exc, TimeoutError)
            else f"listing its tools took over {LIST_TIMEOUT_S:.0f} s"
        )
        logger.warning("MCP server %s (%s) is not available: %s", server.label, server.location, detail)
        _listings.pop(key, None)
        return Listing(server, error=detail)
    if server.tools is not None:
        allowed = set(server.tools)
        tools = [tool for tool in tools if tool.name in allowed]
    _listings[key] = (time.monotonic(), tuple(tools))
    return Listing(server, tuple(tools))


async def _fetch(server: McpServer) -> list[BaseTool]:
    connection: dict[str, Any]
    if server.transport == "stdio":
        connection = {
            "transport": "stdio",
            "command": server.command,
            "args": list(server.args),
            "env": server.env_values() or None,
        }
    else:
        connection = {"transport": server.transport, "url": server.url, "headers": server.header_values()}
    # Tool errors raise, so each call classifies them itself (``calls``) instead of reading them as results.
    client = MultiServerMCPClient({server.label: connection}, handle_tool_errors=False)  # type: ignore[dict-item]
    return await client.get_tools(server_name=server.label)


def unique_names(listings: Sequence[Listing], reserved: Collection[str]) -> tuple[Listing, ...]:
    """``listings`` with every tool name unique among them and outside ``reserved``."""
    taken = set(reserved)
    counts: dict[str, int] = {}
    for listing in listings:
        for tool in listing.tools:
            counts[tool.name] = counts.get(tool.name, 0) + 1
    renamed = []
    for listing in listings:
        tools = []
        for tool in listing.tools:
            name = tool.name
            if counts[name] > 1 or name in taken:
                name = f"{listing.server.label}_{name}"[:_MAX_TOOL_NAME]
            taken.add(name)
            tools.append(tool if name == tool.name else tool.model_copy(update={"name": name}))
        renamed.append(Listing(listing.server, tuple(tools), listing.error, listing.cached))
    return tuple(renamed)
