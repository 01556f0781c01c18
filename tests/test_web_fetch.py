"""Specification of the ``web_fetch`` tool, end to end over real loopback HTTP.

The tool runs inside a one-node LangGraph graph (``run_tools_in_graph``) so it sees a real run: the run
evidence store, and the ``custom`` stream its events go to. The stand-in server is allowed through the SSRF guard
the way an operator would do it, with ``127.0.0.1:<port>`` in the allow-list.
"""

from __future__ import annotations

import asyncio
import email.utils
import re
import threading
import time
import types
import urllib.parse

import anyio
import pytest

from deep_research_agent.tools.fetch import PAGE_PREAMBLE, FetchLimits, build_web_fetch_tool
from deep_research_agent.tools.results import ResultLimits
from testkit.web import (
    ARTICLES,
    FAKE_BLOCK_END,
    INJECTION,
    JUNK_PHRASES,
    NOTES_TEXT,
    PDF_FACTS,
    PDF_TITLE,
    SHORT_FACT,
    SHORT_TITLE,
    WebStandIn,
    closed_port,
    run_tools_in_graph,
)


def fetch_tool(web: WebStandIn, *, max_chars: int = 60_000, limits: FetchLimits = FetchLimits()):
    settings = types.SimpleNamespace(web_fetch=True, fetch_allow_hosts=(web.allow_host,), fetch_cassette_url="")
    tool = build_web_fetch_tool(settings, results=ResultLimits(max_chars=max_chars), limits=limits)
    assert tool is not None
    return tool


async def fetch(web: WebStandIn, path: str, **options):
    return await run_tools_in_graph([(fetch_tool(web, **options), {"url": web.url(path)})])


def test_fetch_tool_is_absent_when_switched_off() -> None:
    settings = types.SimpleNamespace(web_fetch=False, fetch_allow_hosts=())
    assert build_web_fetch_tool(settings) is None


def test_fetch_tool_is_named_web_fetch_and_takes_a_url(web: WebStandIn) -> None:
    tool = fetch_tool(web)
    assert tool.name == "web_fetch"
    assert list(tool.args) == ["url"]


# --------------------------------------------------------------------------
# Happy paths
# --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_short_page_comes_back_as_a_delimited_data_block(
    web: WebStandIn,
) -> None:
    run = await fetch(web, "/short")
    url = web.url("/short")
    assert run.results[0] == (
        f'{PAGE_PREAMBLE}\n<page url="{url}" title="{SHORT_TITLE}">\nTitle: {SHORT_TITLE}\n\n{SHORT_FACT}\n</page>'
    )


@pytest.mark.anyio
async def test_article_page_gives_the_model_its_facts_without_boilerplate(web: WebStandIn) -> None:
    article = ARTICLES["halvorsen-cell"]
    text = (await fetch(web, article.path)).results[0]
    assert f"Title: {article.title}\nAuthor: {article.author}\nDate: {article.date}" in text
    for fact in article.facts:
        assert fact in text
    for junk in JUNK_PHRASES.values():
        assert junk not in text


@pytest.mark.anyio
async def test_successful_fetch_emits_page_fetched_then_a_new_source(web: WebStandIn) -> None:
    article = ARTICLES["norre-bay-kelp"]
    run = await fetch(web, article.path)
    url = web.url(article.path)
    evidence = [e for e in run.evidence.records() if e.kind == "page"]
    assert [e["type"] for e in run.events] == ["page_fetched", "source"]
    assert run.events[0] == {
        "role": "orchestrator",
        "type": "page_fetched",
        "url": url,
        "ok": True,
        "title": article.title,
        "chars": len(evidence[0].text),
    }
    assert run.events[1] == {
        "role": "orchestrator",
        "type": "source",
        "title": article.title,
        "url": url,
        "domain": "127.0.0.1",
    }


@pytest.mark.anyio
async def test_fetching_the_same_page_twice_in_a_run_adds_one_source(web: WebStandIn) -> None:
    tool = fetch_tool(web)
    url = web.url("/short")
    run = await run_tools_in_graph([(tool, {"url": url}), (tool, {"url": url + "/"})])
    assert len(run.of_type("page_fetched")) == 2
    assert [e["url"] for e in run.of_type("source")] == [url]
    assert [s.url for s in run.evidence.sources()] == [url]


@pytest.mark.anyio
async def test_pdf_is_read_page_by_page(web: WebStandIn) -> None:
    run = await fetch(web, "/report.pdf")
    text = run.results[0]
    assert f'title="{PDF_TITLE}"' in text
    assert "[page 1]" in text and "[page 2]" in text
    for fact in PDF_FACTS:
        assert fact in text
    assert run.of_type("page_fetched")[0]["ok"] is True


@pytest.mark.anyio
async def test_plain_text_is_returned_as_it_is(web: WebStandIn) -> None:
    assert NOTES_TEXT.strip() in (await fetch(web, "/notes.txt")).results[0]


@pytest.mark.anyio
async def test_redirects_are_followed_and_the_final_url_is_shown(web: WebStandIn) -> None:
    text = (await fetch(web, "/redirect-chain?n=3")).results[0]
    assert f'final_url="{web.url("/short")}"' in text
    assert SHORT_FACT in text


# --------------------------------------------------------------------------
# Page content is data
# --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_injected_instructions_stay_inside_the_data_block(web: WebStandIn) -> None:
    text = (await fetch(web, ARTICLES["injected"].path)).results[0]
    assert text.startswith(PAGE_PREAMBLE + "\n<page ")
    assert INJECTION in text
    assert text.index("<page ") < text.index(INJECTION) < text.rindex("</page>")


@pytest.mark.anyio
async def test_a_page_cannot_close_the_data_block_early(web: WebStandIn) -> None:
    text = (await fetch(web, ARTICLES["injected"].path)).results[0]
    assert FAKE_BLOCK_END.removeprefix("</page>") in text
    assert text.count("</page>") == 1
    assert text.endswith("</page>")


# --------------------------------------------------------------------------
# Size: truncation for the model, the whole text for the evidence store
# --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_long_page_is_cut_for_the_model_with_a_note_saying_how_much(web: WebStandIn) -> None:
    run = await fetch(web, ARTICLES["long"].path, max_chars=2_000)
    text = run.results[0]
    (evidence,) = [e for e in run.evidence.records() if e.kind == "page"]
    full = len(evidence.text)
    assert full > 80_000
    body = text[text.index(">\n") + 2 : text.index("\n</page>")]
    shown, note = body.split("\n[Result truncated: ", 1)
    assert len(shown) == 2_000 and evidence.text.startswith(shown)
    assert note.startswith(f"cut to 2,000 of {full:,} characters.") and "No sandbox is attached" in note
    assert "final measurement" not in text


@pytest.mark.anyio
async def test_the_evidence_store_keeps_the_full_text_of_a_truncated_page(web: WebStandIn) -> None:
    run = await fetch(web, ARTICLES["long"].path, max_chars=2_000)
    (evidence,) = [e for e in run.evidence.records() if e.kind == "page"]
    assert evidence.url == web.url(ARTICLES["long"].path)
    assert evidence.title == ARTICLES["long"].title
    assert "final measurement: a fleet-wide capacity factor of 47.3 percent" in evidence.text
    assert run.of_type("page_fetched")[0]["chars"] == len(evidence.text)


@pytest.mark.anyio
async def test_page_within_the_limit_has_no_truncation_note(web: WebStandIn) -> None:
    text = (await fetch(web, "/short")).results[0]
    assert "truncated" not in text


@pytest.mark.anyio
@pytest.mark.parametrize("declared", ["0", "1"], ids=["streamed", "content-length"])
async def test_download_over_five_megabytes_is_refused(web: WebStandIn, declared: str) -> None:
    run = await fetch(web, f"/large?mb=6&declared={declared}")
    assert run.results[0].startswith("TOOL ERROR (web_fetch, permanent):")
    assert "larger than the 5 MB reading limit" in run.results[0]
    assert run.of_type("page_fetched")[0]["ok"] is False
    assert run.evidence.records() == []


# --------------------------------------------------------------------------
# Failures are classified text, never exceptions
# --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_slow_page_times_out_as_a_transient_failure(web: WebStandIn) -> None:
    started = time.monotonic()
    run = await fetch(web, "/slow?delay=3", limits=FetchLimits(timeout_s=0.5))
    assert time.monotonic() - started < 2.5
    assert run.results[0].startswith("TOOL ERROR (web_fetch, transient):")
    assert "did not answer within 0.5 s" in run.results[0]


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "kind"), [("/archive.zip", "application/zip"), ("/image.png", "image/png")])
async def test_binary_file_is_an_unsupported_content_type_error(web: WebStandIn, path: str, kind: str) -> None:
    run = await fetch(web, path)
    assert run.results[0].startswith("TOOL ERROR (web_fetch, permanent): unsupported content type " + kind)
    assert run.of_type("page_fetched")[0]["error"].startswith("unsupported content type " + kind)
    assert run.of_type("source") == []


@pytest.mark.anyio
@pytest.mark.parametrize("status", [404, 410])
async def test_missing_page_is_a_permanent_failure(web: WebStandIn, status: int) -> None:
    text = (await fetch(web, f"/status/{status}")).results[0]
    assert text.startswith("TOOL ERROR (web_fetch, permanent):")
    assert f"does not exist ({status})" in text


@pytest.mark.anyio
@pytest.mark.parametrize("status", [429, 500, 503])
async def test_overloaded_or_failing_server_is_a_transient_failure(web: WebStandIn, status: int) -> None:
    text = (await fetch(web, f"/status/{status}")).results[0]
    assert text.startswith("TOOL ERROR (web_fetch, transient):")
    assert f"unavailable right now ({status})" in text
    if status in (429, 503):
        assert "Retry in about 7 s" in text


@pytest.mark.anyio
async def test_a_retry_after_date_tells_the_model_how_long_to_wait(web: WebStandIn) -> None:
    in_30_s = email.utils.formatdate(time.time() + 30, usegmt=True)

    text = (await fetch(web, f"/status/503?retry_after={urllib.parse.quote(in_30_s)}")).results[0]

    assert re.search(r"Retry in about (29|30) s", text), text


@pytest.mark.anyio
async def test_forbidden_page_is_a_permanent_failure(web: WebStandIn) -> None:
    assert (await fetch(web, "/status/403")).results[0].startswith("TOOL ERROR (web_fetch, permanent):")


@pytest.mark.anyio
async def test_refused_url_is_error_text_and_a_failed_page_event(web: WebStandIn) -> None:
    url = "http://192.168.0.1/admin"
    run = await run_tools_in_graph([(fetch_tool(web), {"url": url})])
    prefix = "TOOL ERROR (web_fetch, permanent): "
    assert run.results[0].startswith(prefix + f"refused {url}")
    assert run.of_type("page_fetched") == [
        {
            "role": "orchestrator",
            "type": "page_fetched",
            "url": url,
            "ok": False,
            "chars": 0,
            "error": run.results[0].removeprefix(prefix),
        }
    ]


@pytest.mark.anyio
async def test_connection_refused_is_a_transient_failure() -> None:
    settings = types.SimpleNamespace(web_fetch=True, fetch_allow_hosts=("127.0.0.1",), fetch_cassette_url="")
    tool = build_web_fetch_tool(settings)
    run = await run_tools_in_graph([(tool, {"url": f"http://127.0.0.1:{closed_port()}/"})])
    assert re.match(r"TOOL ERROR \(web_fetch, transient\): could not connect", run.results[0])


@pytest.mark.anyio
async def test_a_burst_of_slow_extractions_leaves_asyncios_shared_thread_pool_free(
    web: WebStandIn, monkeypatch
) -> None:
    """langsmith hops through asyncio's default pool for every middleware layer of every call, so page
    extraction must never occupy it: eight pages stuck in extraction must not stall anything else."""
    import deep_research_agent.tools.fetch as fetch_module

    extracting, release = [], threading.Event()
    real_extract = fetch_module.extract_document

    def stuck_extract(got):
        extracting.append(got)
        release.wait(timeout=30)
        return real_extract(got)

    monkeypatch.setattr(fetch_module, "extract_document", stuck_extract)
    results = []

    async def fetch_short() -> None:
        results.append((await fetch(web, "/short")).results[0])

    async with anyio.create_task_group() as group:
        for _ in range(8):
            group.start_soon(fetch_short)
        with anyio.fail_after(10):
            while not extracting:
                await anyio.sleep(0.01)
        try:
            with anyio.fail_after(5):
                assert await asyncio.get_running_loop().run_in_executor(None, lambda: "free") == "free"
        finally:
            release.set()

    assert len(results) == 8 and all(SHORT_FACT in text for text in results)


@pytest.mark.anyio
async def test_every_fetch_gets_its_own_client_without_keep_alive_but_one_shared_trust_store(
    web: WebStandIn, monkeypatch
) -> None:
    import httpx

    import deep_research_agent.tools.fetch as fetch_module

    clients: list[dict] = []
    loads = []
    real_client, real_context = httpx.AsyncClient, httpx.create_ssl_context

    def recording_client(**options):
        clients.append(options)
        return real_client(**options)

    def counting_context(*args, **kwargs):
        loads.append(1)
        return real_context(*args, **kwargs)

    monkeypatch.setattr(fetch_module.httpx, "AsyncClient", recording_client)
    monkeypatch.setattr(fetch_module.httpx, "create_ssl_context", counting_context)
    fetch_module.shared_tls_context.cache_clear()
    tool = fetch_tool(web)

    await run_tools_in_graph(
        [(tool, {"url": web.url("/short")}), (tool, {"url": web.url(ARTICLES["halvorsen-cell"].path)})]
    )

    assert len(clients) == 2, "a pooled client could carry one host's SNI to another"
    assert all(options["limits"].max_keepalive_connections == 0 for options in clients)
    import ssl

    assert isinstance(clients[0]["verify"], ssl.SSLContext), "each client would load the trust store again"
    assert clients[0]["verify"] is clients[1]["verify"] and len(loads) == 1
