"""Specification of how MCP listings become a graph's tools (``mcp.listing``): unique tool names, the
events a listing announces, and one readable line for a failure."""

from __future__ import annotations

import asyncio
import dataclasses

import httpx
import pytest
from langchain_core.tools import StructuredTool

from deep_research_agent.mcp import listing as listing_module
from deep_research_agent.mcp.errors import describe
from deep_research_agent.mcp.listing import Listing, list_tools, listings_digest, unique_names
from deep_research_agent.settings.mcp_servers import McpServer
from testkit.guard_calls import event_fields


def server(label: str, url: str = "http://127.0.0.1:3901/mcp") -> McpServer:
    return McpServer(label=label, url=url, transport="streamable_http", origin="run")


def tool(name: str) -> StructuredTool:
    async def run(**kwargs: object) -> str:
        return name

    return StructuredTool(
        name=name, description=f"{name} tool", args_schema={"type": "object", "properties": {}}, coroutine=run
    )


def names(listings: tuple[Listing, ...]) -> list[list[str]]:
    return [[t.name for t in listing.tools] for listing in listings]


def test_tool_names_that_collide_across_servers_or_with_built_in_tools_get_their_servers_label():
    listings = (
        Listing(server("docs"), (tool("search"), tool("web_fetch"))),
        Listing(server("wiki"), (tool("search"), tool("page"))),
    )

    renamed = unique_names(listings, {"web_fetch"})

    assert names(renamed) == [["docs_search", "docs_web_fetch"], ["wiki_search", "page"]]


def test_names_already_unique_are_renamed_again_only_where_they_meet_a_custom_tool():
    listings = unique_names((Listing(server("units"), (tool("convert_units"), tool("lookup"))),), {"web_fetch"})

    assert names(unique_names(listings, {"web_fetch", "convert_units"})) == [["units_convert_units", "lookup"]]


def test_a_prefixed_name_is_cut_to_what_model_apis_accept():
    [listing] = unique_names((Listing(server("l" * 40), (tool("t" * 40),)),), {"t" * 40})

    assert len(listing.tools[0].name) == 64


def test_a_ready_listing_announces_its_tools_and_a_failed_one_why():
    ready = event_fields(Listing(server("docs"), (tool("search"),), cached=True).status())
    failed = event_fields(
        Listing(server("dead", "http://u:pw@127.0.0.1:9/mcp?token=abc"), error="cannot connect").status()
    )

    assert ready == {
        "type": "status",
        "state": "mcp_ready",
        "tool_count": 1,
        "tools": ["search"],
        "cached": True,
        "server": "http://127.0.0.1:3901/mcp",
        "label": "docs",
    }
    assert failed == {
        "type": "status",
        "state": "mcp_error",
        "detail": "cannot connect",
        "server": "http://127.0.0.1:9/mcp",
        "label": "dead",
    }


def test_a_servers_location_drops_user_info_and_query_and_a_stdio_servers_env():
    assert server("gw", "https://user:secret@gw.test:8443/mcp?key=abc").location == "https://gw.test:8443/mcp"
    stdio = McpServer(
        label="time",
        url="",
        transport="stdio",
        origin="operator",
        command="mcp-server-time",
        args=("--local-timezone", "UTC"),
    )
    assert stdio.location == "stdio: mcp-server-time --local-timezone UTC"


def test_whether_a_listing_came_from_the_cache_does_not_change_the_graph_it_builds():
    fresh, cached = Listing(server("docs"), (tool("search"),)), Listing(server("docs"), (tool("search"),), cached=True)

    assert listings_digest([fresh]) == listings_digest([cached])
    assert listings_digest([fresh]) != listings_digest([Listing(server("docs"), (tool("find"),))])


def test_nested_transport_errors_become_their_innermost_error_in_one_line():
    request = httpx.Request("POST", "http://127.0.0.1:3903/mcp")
    unauthorized = httpx.HTTPStatusError("401", request=request, response=httpx.Response(401, request=request))
    nested = ExceptionGroup(
        "unhandled errors in a TaskGroup", [ExceptionGroup("unhandled errors in a TaskGroup", [unauthorized])]
    )

    assert describe(nested) == "HTTP 401 Unauthorized"
    assert describe(ExceptionGroup("g", [httpx.ConnectError("All connection attempts failed")])) == (
        "cannot connect (All connection attempts failed)"
    )
    assert describe(ExceptionGroup("g", [RuntimeError("Session\n  terminated")])) == "Session terminated"


@pytest.fixture
def counted_fetch(monkeypatch):
    """Listing that takes a moment and counts its round-trips; the cache starts empty."""
    fetched: list[str] = []

    async def fetch(server: McpServer):
        fetched.append(server.label)
        await asyncio.sleep(0.05)
        return [tool("search")]

    monkeypatch.setattr(listing_module, "_fetch", fetch)
    monkeypatch.setattr(listing_module, "_listings", {})
    monkeypatch.setattr(listing_module, "_in_flight", {})
    return fetched


@pytest.mark.anyio
async def test_runs_starting_together_share_one_listing_of_a_server(counted_fetch):
    results = await asyncio.gather(*(list_tools([server("docs")], ttl=600) for _ in range(5)))

    assert counted_fetch == ["docs"]
    assert all(names(listings) == [["search"]] for listings in results)


@pytest.mark.anyio
async def test_with_ttl_zero_every_run_lists_for_itself(counted_fetch):
    await asyncio.gather(*(list_tools([server("docs")], ttl=0) for _ in range(3)))

    assert counted_fetch == ["docs"] * 3


@pytest.mark.anyio
async def test_a_run_cancelled_while_waiting_does_not_cancel_the_listing_others_wait_for(counted_fetch):
    first = asyncio.ensure_future(list_tools([server("docs")], ttl=600))
    second = asyncio.ensure_future(list_tools([server("docs")], ttl=600))
    await asyncio.sleep(0.01)
    first.cancel()

    [listing] = await second

    assert listing.error is None and counted_fetch == ["docs"]


@pytest.mark.anyio
async def test_a_server_the_allowlist_refused_is_never_dialled_and_its_listing_is_the_mcp_error(counted_fetch):
    refused = dataclasses.replace(server("gw"), refused="refused http://10.0.0.5/mcp: not on the allowlist")

    [listing] = await list_tools([refused], ttl=600)

    assert counted_fetch == [] and listing.tools == ()
    status = listing.status()
    assert status.state == "mcp_error" and status.detail == "refused http://10.0.0.5/mcp: not on the allowlist"
