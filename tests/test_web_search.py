"""Specification of the ``web_search`` tool against a Tavily-compatible fake on a real loopback socket.

The real tavily-python client talks to the fake (``tavily_api_base_url`` points at it). The tool runs
inside a one-node LangGraph graph (``run_tools_in_graph``), so its events arrive on the ``custom`` stream
and it writes to a real run evidence store. The fake records only a sha256 of the bearer token it received.
"""

from __future__ import annotations

import hashlib
import json
import time
import types
from typing import Any

import pytest
from pydantic import SecretStr

from deep_research_agent.tools.search import KEYLESS_NOTICE, RESULTS_PREAMBLE, build_web_search_tool, hit_urls
from testkit.web import ARTICLES, WebStandIn, closed_port, run_tools_in_graph

KEY = "tvly-dev-run-key-0123456789"
OTHER_KEY = "tvly-dev-other-key-9876543210"
BATTERY_QUERY = "sodium glass battery energy density"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@pytest.fixture(autouse=True)
def fresh_fake(web: WebStandIn) -> None:
    web.tavily_reset()


def search_settings(web: WebStandIn, key: str | None = KEY, **overrides: Any) -> types.SimpleNamespace:
    values = {
        "tavily_api_key": SecretStr(key) if key else None,
        "tavily_api_base_url": web.base_url,
        "web_search": True,
        "web_fetch": False,
        "search_max_results": 6,
        "search_backends": ("tavily",),
        "search_contact_email": "",
    }
    return types.SimpleNamespace(**(values | overrides))


def search_tool(web: WebStandIn, key: str | None = KEY, *, timeout_s: float = 30.0, **overrides: Any):
    tool = build_web_search_tool(search_settings(web, key, **overrides), timeout_s=timeout_s)
    assert tool is not None
    return tool


async def search(web: WebStandIn, query: str = BATTERY_QUERY, key: str | None = KEY, **options: Any):
    return await run_tools_in_graph([(search_tool(web, key, **options), {"query": query})])


def test_search_tool_is_absent_when_switched_off(web: WebStandIn) -> None:
    assert build_web_search_tool(search_settings(web, web_search=False)) is None


def test_search_tool_is_named_web_search_and_takes_a_query_and_optional_count(web: WebStandIn) -> None:
    tool = search_tool(web)
    assert tool.name == "web_search"
    assert list(tool.args) == ["query", "max_results"]


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_results_reach_the_model_as_a_delimited_data_block(web: WebStandIn) -> None:
    article = ARTICLES["halvorsen-cell"]
    text = (await search(web)).results[0]
    assert text.startswith(f'{RESULTS_PREAMBLE}\n<search_results query="{BATTERY_QUERY}" count="1">\n')
    assert f"[1] [{article.title}]({web.url(article.path)})\n{article.snippet}" in text
    assert text.endswith("\n</search_results>")


@pytest.mark.anyio
async def test_with_the_page_reader_on_the_results_are_still_only_the_data_block(web: WebStandIn) -> None:
    """The call that reads the first hit is the assist's decoration (assist/next_step.py), never the tool's."""
    text = (await search(web, web_fetch=True)).results[0]
    assert text.endswith("\n</search_results>") and "web_fetch" not in text


@pytest.mark.anyio
async def test_the_hits_urls_read_back_from_the_block_in_order(web: WebStandIn) -> None:
    text = (await search(web, "lighthouse")).results[0]
    urls = hit_urls(text)
    assert len(urls) == 2 and urls[0] == web.url(ARTICLES["pharos-lighthouse"].path)
    assert all(f"]({url})" in text for url in urls)
    assert hit_urls((await search(web, "zzyzx quux")).results[0]) == []
    assert hit_urls("TOOL ERROR (web_search, transient): the search failed.") == []


@pytest.mark.anyio
async def test_query_without_hits_says_so(web: WebStandIn) -> None:
    text = (await search(web, "zzyzx quux")).results[0]
    assert 'count="0"' in text
    assert "No results." in text


@pytest.mark.anyio
async def test_events_are_query_then_results_then_new_sources(web: WebStandIn) -> None:
    run = await search(web, "kelp carbon grid wind")
    types_in_order = [e["type"] for e in run.events]
    assert types_in_order[:2] == ["search_query", "search_results"]
    assert set(types_in_order[2:]) == {"source"}
    query_event, results_event = run.events[0], run.events[1]
    assert query_event["source"] == "tavily"
    assert results_event["id"] == query_event["id"]
    assert results_event["ok"] is True
    assert results_event["count"] == len(results_event["results"]) == len(types_in_order) - 2
    for hit in results_event["results"]:
        assert set(hit) == {"title", "url", "domain", "snippet"}
        assert hit["domain"] == "127.0.0.1"
        assert len(hit["snippet"]) <= 300
    assert [e["url"] for e in run.of_type("source")] == [hit["url"] for hit in results_event["results"]]


@pytest.mark.anyio
async def test_sources_are_deduplicated_across_searches_in_a_run(web: WebStandIn) -> None:
    tool = search_tool(web)
    run = await run_tools_in_graph([(tool, {"query": "battery energy"}), (tool, {"query": "battery kelp carbon"})])
    battery, kelp = web.url(ARTICLES["halvorsen-cell"].path), web.url(ARTICLES["norre-bay-kelp"].path)
    second_hits = {hit["url"] for hit in run.of_type("search_results")[1]["results"]}
    assert battery in second_hits
    assert [e["url"] for e in run.of_type("source")] == [battery, kelp]
    assert [s.url for s in run.evidence.sources()] == [battery, kelp]


@pytest.mark.anyio
async def test_every_hit_is_kept_as_search_result_evidence(web: WebStandIn) -> None:
    run = await search(web, "kelp carbon")
    (evidence,) = run.evidence.records()
    article = ARTICLES["norre-bay-kelp"]
    assert (evidence.kind, evidence.url, evidence.title, evidence.text) == (
        "search_result",
        web.url(article.path),
        article.title,
        article.snippet,
    )


@pytest.mark.anyio
async def test_result_count_defaults_to_the_setting_and_is_capped_at_twenty(web: WebStandIn) -> None:
    tool = search_tool(web, search_max_results=4)
    calls = [{"query": "wind"}, {"query": "wind", "max_results": 50}, {"query": "wind", "max_results": 2}]
    await run_tools_in_graph([(tool, args) for args in calls])
    assert [r["max_results"] for r in web.tavily_requests()] == [4, 20, 2]


@pytest.mark.anyio
async def test_empty_query_is_a_permanent_error_without_a_request(web: WebStandIn) -> None:
    text = (await search(web, "   ")).results[0]
    assert text.startswith("TOOL ERROR (web_search, permanent): the query is empty")
    assert web.tavily_requests() == []


# --------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_runs_key_reaches_tavily_as_the_bearer_token(web: WebStandIn) -> None:
    await search(web)
    (request,) = web.tavily_requests()
    assert request["auth_present"] is True
    assert request["keyless"] is False
    assert request["bearer_sha256"] == digest(KEY)


@pytest.mark.anyio
async def test_runs_with_different_keys_each_send_their_own(web: WebStandIn) -> None:
    await search(web, key=KEY)
    await search(web, key=OTHER_KEY)
    await search(web, key=KEY)
    assert [r["bearer_sha256"] for r in web.tavily_requests()] == [digest(KEY), digest(OTHER_KEY), digest(KEY)]


@pytest.mark.anyio
async def test_the_key_never_appears_in_results_or_events(web: WebStandIn) -> None:
    web.tavily_configure(always={"status": 500})
    run = await search(web)
    web.tavily_configure()
    ok_run = await search(web)
    for text in (json.dumps(run.events), json.dumps(ok_run.events), *run.results, *ok_run.results):
        assert KEY not in text


@pytest.mark.anyio
async def test_without_a_key_search_runs_keyless_and_says_so_once_per_run(
    web: WebStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-from-the-environment-not-the-settings")
    tool = search_tool(web, key=None)
    run = await run_tools_in_graph([(tool, {"query": "battery"}), (tool, {"query": "kelp"})])
    requests = web.tavily_requests()
    assert [(r["auth_present"], r["keyless"]) for r in requests] == [(False, True), (False, True)]
    notices = run.of_type("status")
    assert len(notices) == 1
    assert notices[0]["state"] == "keyless_search"
    assert notices[0]["detail"] == KEYLESS_NOTICE
    assert "rate-limited" in KEYLESS_NOTICE and "TAVILY_API_KEY" in KEYLESS_NOTICE
    assert run.events[0]["type"] == "status"  # before the first search
    assert "ERROR" not in run.results[0] and "ERROR" not in run.results[1]


@pytest.mark.anyio
async def test_the_keyless_notice_comes_again_in_the_next_run(web: WebStandIn) -> None:
    first = await search(web, key=None)
    second = await search(web, key=None)
    assert len(first.of_type("status")) == len(second.of_type("status")) == 1


@pytest.mark.anyio
async def test_a_keyed_run_sends_no_keyless_notice(web: WebStandIn) -> None:
    assert (await search(web)).of_type("status") == []


# --------------------------------------------------------------------------
# Failures are classified text, never exceptions
# --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_rejected_key_is_permanent_and_names_the_setting_to_fix(web: WebStandIn) -> None:
    web.tavily_configure(bad_key_sha256=[digest(KEY)])
    run = await search(web)
    assert run.results[0] == (
        "TOOL ERROR (web_search, permanent): Tavily rejected the API key (401). "
        "Fix TAVILY_API_KEY (or configurable apiKeys.TAVILY_API_KEY); do not retry."
    )
    assert len(web.tavily_requests()) == 1  # not retried
    (failed,) = run.of_type("search_results")
    assert (failed["ok"], failed["count"], failed["results"]) == (False, 0, [])
    assert "401" in failed["error"]
    assert run.of_type("source") == []


@pytest.mark.anyio
async def test_rate_limit_is_retried_after_the_servers_retry_after(web: WebStandIn) -> None:
    web.tavily_configure(replies=[{"status": 429, "retry_after": 1}])
    started = time.monotonic()
    run = await search(web)
    assert time.monotonic() - started >= 1.0
    assert len(web.tavily_requests()) == 2
    assert run.results[0].startswith(RESULTS_PREAMBLE)
    assert run.of_type("search_results")[0]["ok"] is True


@pytest.mark.anyio
async def test_rate_limit_with_a_long_retry_after_is_handed_to_the_model_at_once(web: WebStandIn) -> None:
    web.tavily_configure(always={"status": 429, "retry_after": 60})
    started = time.monotonic()
    text = (await search(web)).results[0]
    assert time.monotonic() - started < 5
    assert len(web.tavily_requests()) == 1
    assert text.startswith("TOOL ERROR (web_search, transient): Tavily rate limit reached (429).")
    assert "Retry in about 60 s" in text


@pytest.mark.anyio
async def test_persistent_rate_limit_gives_up_after_two_retries(web: WebStandIn) -> None:
    web.tavily_configure(always={"status": 429, "retry_after": 0.2})
    text = (await search(web)).results[0]
    assert len(web.tavily_requests()) == 3
    assert text.startswith("TOOL ERROR (web_search, transient):")


@pytest.mark.anyio
async def test_keyless_rate_limit_is_transient_and_suggests_a_key(web: WebStandIn) -> None:
    web.tavily_configure(always={"status": 429, "retry_after": 30})
    text = (await search(web, key=None)).results[0]
    assert text.startswith("TOOL ERROR (web_search, transient): keyless Tavily search hit its rate limit (429).")
    assert "Set TAVILY_API_KEY" in text
    assert "Retry in about 30 s" in text


@pytest.mark.anyio
async def test_server_error_is_retried_and_can_recover(web: WebStandIn) -> None:
    web.tavily_configure(replies=[{"status": 500}])
    run = await search(web)
    assert len(web.tavily_requests()) == 2
    assert run.results[0].startswith(RESULTS_PREAMBLE)


@pytest.mark.anyio
@pytest.mark.parametrize("status", [500, 502, 503])
async def test_persistent_server_error_is_transient(web: WebStandIn, status: int) -> None:
    web.tavily_configure(always={"status": status})
    text = (await search(web)).results[0]
    assert text.startswith(f"TOOL ERROR (web_search, transient): Tavily had a server error ({status}).")
    assert len(web.tavily_requests()) == 3


@pytest.mark.anyio
async def test_unreachable_tavily_is_transient(web: WebStandIn) -> None:
    tool = search_tool(web, tavily_api_base_url=f"http://127.0.0.1:{closed_port()}")
    run = await run_tools_in_graph([(tool, {"query": "battery"})])
    assert run.results[0].startswith("TOOL ERROR (web_search, transient): could not reach Tavily (ConnectError).")
    assert run.of_type("search_results")[0]["ok"] is False


@pytest.mark.anyio
async def test_slow_tavily_times_out_as_transient_without_a_retry(web: WebStandIn) -> None:
    web.tavily_configure(replies=[{"delay_s": 2}])
    started = time.monotonic()
    text = (await search(web, timeout_s=0.5)).results[0]
    assert time.monotonic() - started < 1.8
    assert text.startswith("TOOL ERROR (web_search, transient): Tavily did not answer in time.")
    assert len(web.tavily_requests()) == 1


@pytest.mark.anyio
async def test_bad_request_is_permanent_and_asks_to_fix_the_query(web: WebStandIn) -> None:
    web.tavily_configure(always={"status": 400})
    text = (await search(web)).results[0]
    assert text.startswith("TOOL ERROR (web_search, permanent): Tavily rejected the query (400)")
    assert "Fix the query" in text
    assert len(web.tavily_requests()) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("status", [403, 432, 433])
async def test_forbidden_or_plan_limit_is_permanent(web: WebStandIn, status: int) -> None:
    web.tavily_configure(always={"status": status})
    text = (await search(web)).results[0]
    assert text.startswith(f"TOOL ERROR (web_search, permanent): Tavily refused the request ({status})")
    assert "TAVILY_API_KEY" in text
    assert len(web.tavily_requests()) == 1
