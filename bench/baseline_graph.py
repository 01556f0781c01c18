"""The burst benchmark's baseline: a bare ``create_agent`` graph making the product's model and tool calls.

No middleware, no events, no stores: one ``ChatOpenAI`` over HTTP to the scripted model, a ``web_search``
tool calling the Tavily stand-in through tavily-python and a ``web_fetch`` tool that GETs a page with httpx
and extracts its text with trafilatura in a thread, as the product does; so what it costs per step is
what LangGraph, langchain, the HTTP clients and the extraction cost. The graph, its model and the search client are built
once per process, as a lean deployment would, so the baseline pays no per-run construction. Served next to the product by ``bench.burst`` as graph
``bare_baseline``; its model requests name ``BASELINE_AGENT`` in the ``X-DRA-Agent`` header, the way the
product's name their role, which is how the scripted model tells it apart.
"""

from __future__ import annotations

import asyncio
import functools
import os
from typing import Any

import httpx
import trafilatura
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from tavily import AsyncTavilyClient

from deep_research_agent.modelcalls.models import AGENT_HEADER

BASELINE_AGENT = "bench-baseline"
SYSTEM_PROMPT = "You are the bench baseline agent."


@tool
async def web_search(query: str) -> str:
    """Search the web."""
    found = await _search_client().search(query, max_results=5)
    return "\n".join(f"{r['title']} {r['url']}\n{r['content']}" for r in found.get("results", ()))


@tool
async def web_fetch(url: str) -> str:
    """Read a page."""
    page = await _fetch_client().get(url)
    return await asyncio.to_thread(trafilatura.extract, page.text) or ""


@tool
def note(text: str) -> str:
    """Keep a note."""
    return "noted"


@functools.cache
def _search_client() -> AsyncTavilyClient:
    return AsyncTavilyClient(
        api_key=os.environ.get("TAVILY_API_KEY", "tvly-bench"),
        api_base_url=os.environ["TAVILY_API_BASE_URL"],
        client=httpx.AsyncClient(base_url=os.environ["TAVILY_API_BASE_URL"], timeout=30),
    )


@functools.cache
def _fetch_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=30)


def make_graph(config: Any = None) -> Any:
    return _graph()


@functools.cache
def _graph() -> Any:
    model = ChatOpenAI(
        model="bench-baseline",
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        use_responses_api=False,
        max_retries=0,
        streaming=True,
        stream_usage=True,
        default_headers={AGENT_HEADER: BASELINE_AGENT},
    )
    return create_agent(model, tools=[web_search, web_fetch, note], system_prompt=SYSTEM_PROMPT)
