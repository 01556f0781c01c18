"""Specification of how MCP listings become a graph's tools (``mcp.listing``): unique tool names, the
events a listing announces, and one readable line for a failure."""

from __future__ import annotations

import httpx
from langchain_core.tools import StructuredTool

from deep_research_agent.mcp.errors import describe
from deep_research_agent.mcp.listing import Listing, _unique_names, listings_digest
from deep_research_agent.mcp.servers import McpServer


def server(label: str, url: str = "http://127.0.0.1:3901/mcp") -> McpServer:
    return McpServer(label=label, url=url, transport="streamable_http", origin="run")


def tool(name: str) -> StructuredTool:
    async def run(**kwargs: object) -> str:
        return name

    return StructuredTool(name=name, description=f"{name} tool", args_schema={"type": "object", "properties": {}}, coroutine=run)


def names(listings: tuple[Listing, ...]) -> list[list[str]]:
    return [[t.name for t in listing.tools] for listing in listings]


def test_tool_names_that_collide_across_servers_or_with_built_in_tools_get_their_servers_label():
    listings = (Listing(server("docs"), (tool("search"), tool("web_fetch"))), Listing(server("wiki"), (tool("search"), tool("page"))))

    renamed = _unique_names(listings, {"web_fetch"})

    assert names(renamed) == [["docs_search", "docs_web_fetch"], ["wiki_search", "page"]]


def test_a_prefixed_name_is_cut_to_what_model_apis_accept():
    [listing] = _unique_names((Listing(server("l" * 40), (tool("t" * 40),)),), {"t" * 40})

    assert len(listing.tools[0].name) == 64


def test_a_ready_listing_announces_its_tools_and_a_failed_one_why():
    ready = Listing(server("docs"), (tool("search"),), cached=True).status()
    failed = Listing(server("dead", "http://u:pw@127.0.0.1:9/mcp?token=abc"), error="cannot connect").status()

    assert ready == {"state": "mcp_ready", "tool_count": 1, "tools": ["search"], "cached": True, "server": "http://127.0.0.1:3901/mcp", "label": "docs"}
    assert failed == {"state": "mcp_error", "detail": "cannot connect", "server": "http://127.0.0.1:9/mcp", "label": "dead"}


def test_a_servers_location_drops_user_info_and_query_and_a_stdio_servers_env():
    assert server("gw", "https://user:secret@gw.test:8443/mcp?key=abc").location == "https://gw.test:8443/mcp"
    stdio = McpServer(label="time", url="", transport="stdio", origin="operator", command="mcp-server-time", args=("--local-timezone", "UTC"))
    assert stdio.location == "stdio: mcp-server-time --local-timezone UTC"


def test_whether_a_listing_came_from_the_cache_does_not_change_the_graph_it_builds():
    fresh, cached = Listing(server("docs"), (tool("search"),)), Listing(server("docs"), (tool("search"),), cached=True)

    assert listings_digest([fresh]) == listings_digest([cached])
    assert listings_digest([fresh]) != listings_digest([Listing(server("docs"), (tool("find"),))])


def test_nested_transport_errors_become_their_innermost_error_in_one_line():
    request = httpx.Request("POST", "http://127.0.0.1:3903/mcp")
    unauthorized = httpx.HTTPStatusError("401", request=request, response=httpx.Response(401, request=request))
    nested = ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("unhandled errors in a TaskGroup", [unauthorized])])

    assert describe(nested) == "HTTP 401 Unauthorized"
    assert describe(ExceptionGroup("g", [httpx.ConnectError("All connection attempts failed")])) == (
        "cannot connect (All connection attempts failed)"
    )
    assert describe(ExceptionGroup("g", [RuntimeError("Session\n  terminated")])) == "Session terminated"
