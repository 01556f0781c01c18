"""Research that keeps watch, on ``langgraph dev``'s own cron engine: ``./run.sh schedule``, the digests, the
webhooks and the web UI's Watching list, with the scripted model and the loopback web.

One test waits on the real cron (every minute, as ``DRA_SCHEDULE_MIN_INTERVAL_S=60`` lets the test servers
run it), on a server of its own that keeps its data on disk: a schedule runs, the server restarts, the page it
reads changes, and the restarted server's next run reports exactly that change; a schedule whose runs fail is
reported failed twice and keeps running; the webhook receiver gets every run. The same server then shows it
all in Chromium. Every bad schedule is refused first,
with nothing created. Sync (not anyio): Playwright's sync API runs outside an event loop.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from playwright.sync_api import Browser, expect

from deep_research_agent.schedules.spec import cron_body
from testkit.agent_server import GRAPH_ID, AgentServer
from testkit.browser import UiPage, headless_chromium
from testkit.mcp_caller import mcp_session, text_of
from testkit.scenarios import FARM_AFTER, FARM_BEFORE, FARM_CHANGED, farm_watch
from testkit.webhook_receiver import WebhookReceiver
from tests.conftest import agent_env

pytestmark = pytest.mark.e2e

WATCH = "kelp-watch"
BROKEN = "broken-watch"
QUESTION = "How much carbon does the Norre Bay kelp farm store?"
BEFORE, AFTER, CHANGED = FARM_BEFORE, FARM_AFTER, FARM_CHANGED
EVERY_MINUTE = "* * * * *"


def schedule(server_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``./run.sh schedule ...`` as a user types it (run.sh passes the server's URL)."""
    return subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "schedule", *args, "--url", server_url],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "220", "NO_COLOR": "1"},
    )  # fmt: skip


def report_over_mcp(server_url: str, thread_id: str) -> Any:
    """The agent's MCP tool ``get_report`` on a thread, as another agent calls it (off this thread's event loop:
    the module's Playwright runs on its own)."""

    async def call() -> Any:
        async with mcp_session(server_url) as session:
            return await session.call_tool("get_report", {"thread_id": thread_id})

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, call()).result()


def watching(server_url: str, user: str | None = None, name: str = "") -> httpx.Response:
    return httpx.get(f"{server_url}/schedules{'/' + name if name else ''}", params={"user": user} if user else None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with headless_chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def watch_server(model_server, web_server) -> Iterator[AgentServer]:
    """A ``langgraph dev`` of the schedules' own that keeps its data on disk, as ``./run.sh up`` does, so it can be
    restarted between two runs of a schedule (the suite's shared server keeps nothing)."""
    server = AgentServer(agent_env(model_server, web_server), persist=True).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def hooks() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as receiver:
        yield receiver


def test_bad_schedules_are_refused_with_what_to_fix_and_nothing_is_created(agent_server, hooks):
    refused = {
        "not a cron": ({"schedule": "every monday"}, "is not a cron expression: give five fields"),
        "seconds": ({"schedule": "*/30 * * * * *"}, "is not a cron expression"),
        "timezone": ({"timezone": "Mars/Olympus"}, "Unknown timezone 'Mars/Olympus'"),
        "not http": ({"webhook": "ftp://hooks.example/x"}, "only http and https"),
        "private": ({"webhook": "http://10.20.30.40/hook"}, "is a private address"),
        "metadata": ({"webhook": "http://169.254.169.254/latest"}, "cloud metadata"),
        "loopback by name": ({"webhook": f"http://localhost:{hooks.port}/h"}, "loopback"),
        "blank question": ({"input": {"messages": [{"role": "user", "content": "  "}]}}, "question that is not empty"),
    }
    # What ./run.sh schedule add sends, each refused by the server before its cron engine sees it.
    for case, (change, said) in refused.items():
        body = {**cron_body("refused-watch", QUESTION, EVERY_MINUTE, user="anonymous"), **change}
        answer = httpx.post(f"{agent_server.url}/runs/crons", json=body, timeout=30)
        assert answer.status_code == 422 and said in answer.json()["detail"], (case, answer.text)
    # The command prints the server's reason and exits 1; a --config that is no JSON object never leaves it.
    cli = schedule(agent_server.url, "add", "refused-watch", QUESTION, "--cron", "every monday")
    assert cli.returncode == 1 and "The schedule was not added: HTTP 422: 'every monday' is not a cron" in cli.stdout
    bad_config = schedule(
        agent_server.url, "add", "refused-watch", QUESTION, "--cron", "0 8 * * MON", "--config", "[1]"
    )
    assert bad_config.returncode == 2 and "Invalid --config" in bad_config.stdout
    # Through the SDK as well: a cron that names no task is no schedule.
    client = get_sync_client(url=agent_server.url)
    with pytest.raises(httpx.HTTPStatusError) as no_task:
        client.crons.create(
            GRAPH_ID, schedule="0 8 * * MON", input={"messages": [{"role": "user", "content": QUESTION}]}
        )
    assert no_task.value.response.status_code == 422 and "config.configurable.task" in no_task.value.response.text
    assert not [c for c in client.crons.search(limit=100) if c["metadata"].get("schedule") == "refused-watch"]
    assert watching(agent_server.url).json()["schedules"] == []


def test_a_cron_made_through_the_sdk_whose_config_names_a_task_is_a_schedule_like_one_the_command_adds(agent_server):
    client = get_sync_client(url=agent_server.url)
    cron = client.crons.create(
        GRAPH_ID,
        schedule="0 8 * * MON",
        timezone="Europe/Sofia",
        input={"messages": [{"role": "user", "content": QUESTION}]},
        config={"configurable": {"task": "sdk-watch", "max_cost_usd": 0.5}},
    )
    try:
        view = watching(agent_server.url, name="sdk-watch").json()
        assert view["question"] == QUESTION and view["cron"] == "0 8 * * MON" and view["timezone"] == "Europe/Sofia"
        assert view["enabled"] and view["next_run_at"] and view["runs"] == 0
        [stored] = [c for c in client.crons.search(limit=100) if c["cron_id"] == cron["cron_id"]]
        assert stored["metadata"] == {"schedule": "sdk-watch", "user_id": "anonymous"}
        configurable = stored["payload"]["config"]["configurable"]
        assert configurable["schedule"] == "sdk-watch" and configurable["clarify"] is False
        assert configurable["plan_review"] is False and configurable["max_cost_usd"] == 0.5
        listed = schedule(agent_server.url, "list")
        assert listed.returncode == 0 and " sdk-watch " in listed.stdout, listed.stdout
    finally:
        client.crons.delete(cron["cron_id"])
    assert watching(agent_server.url, name="sdk-watch").status_code == 404


def test_a_schedule_runs_on_the_cron_through_a_restart_and_each_digest_says_what_changed(
    watch_server, scripted, web, hooks, browser
):
    url = web.set_page("norre-bay-watch", title="Norre Bay kelp farm", paragraphs=[BEFORE, "It covers 40 hectares."])
    scripted.set_scenario(farm_watch(url, BEFORE))
    client = get_sync_client(url=watch_server.url)
    added = schedule(watch_server.url, "add", WATCH, QUESTION, "--cron", EVERY_MINUTE, "--webhook", hooks.url("watch"))
    assert added.returncode == 0, added.stdout + added.stderr
    assert f"Schedule {WATCH} added" in added.stdout
    broken = schedule(
        watch_server.url, "add", BROKEN, QUESTION, "--cron", EVERY_MINUTE, "--webhook", hooks.url("broken"),
        "--config", '{"base_url": "http://127.0.0.1:9/v1"}',
    )  # fmt: skip
    assert broken.returncode == 0, broken.stdout + broken.stderr
    again = schedule(watch_server.url, "add", WATCH, QUESTION, "--cron", "0 8 * * MON")
    assert again.returncode == 1 and f"There is already a schedule named '{WATCH}'" in " ".join(again.stdout.split())
    watch_id = watching(watch_server.url, name=WATCH).json()["cron_id"]
    try:
        # 1. The first runs: the baseline report, and a failure reported as one.
        first = hooks.wait_for("watch", 1, timeout=150)[0]
        # Paused at once (the SDK, not a command that takes seconds to start), so the page changes between runs;
        # a run the cron started meanwhile (a slow machine) still read the old page, and is waited for.
        client.crons.update(watch_id, enabled=False)
        earlier = hooks.wait_for("watch", len(client.threads.search(metadata={"schedule": WATCH}, limit=20)), 150)
        first_digest = first["values"]["digest"]
        assert first["status"] == "success" and first["metadata"]["schedule"] == WATCH
        assert first_digest["task"] == WATCH and first_digest["since"] is None and not first_digest["failed"]
        # langgraph dev gives its own address as the public one (LANGGRAPH_API_URL), so the link works anywhere.
        assert first_digest["outcome"] == "answered" and first_digest["report_url"] == (
            f"{watch_server.url}/reports/{first['thread_id']}"
        )
        assert first["values"]["final_report"].startswith(
            "# Norre Bay kelp\n\n## What changed\n\nThis is the first run"
        )
        assert "kwargs" not in first, "the run's config never leaves the server"
        failed = hooks.wait_for("broken", 1, timeout=60)[0]
        assert failed["values"]["digest"]["failed"] and failed["values"]["digest"]["status"] == "config_error"
        assert "## This run failed" in failed["values"]["digest"]["markdown"]

        # 2. The server restarts (Ctrl-C, ./run.sh up): its crons, tasks and digests are kept on disk.
        watch_server.restart()
        kept = schedule(watch_server.url, "list")
        assert kept.returncode == 0 and f" {WATCH} " in kept.stdout and f" {BROKEN} " in kept.stdout, kept.stdout
        assert watching(watch_server.url, name=WATCH).json()["runs"] == len(earlier)

        # 3. The page changes; resumed, the next run of the restarted server's cron reports exactly that change.
        web.set_page("norre-bay-watch", title="Norre Bay kelp farm", paragraphs=[AFTER, "It covers 40 hectares."])
        scripted.set_scenario(farm_watch(url, AFTER))
        resumed = schedule(watch_server.url, "resume", WATCH)
        assert resumed.returncode == 0 and f"Schedule {WATCH} resumed." in resumed.stdout
        second = hooks.wait_for("watch", len(earlier) + 1, timeout=100)[-1]
        client.crons.update(watch_id, enabled=False)
        runs = len(client.threads.search(metadata={"schedule": WATCH}, limit=20))
        hooks.wait_for("watch", runs, timeout=150)
        runs += 1  # and the quiet run below
        assert len(hooks.wait_for("broken", 2, timeout=60)) >= 2, "a failed run does not stop the schedule"
        paused = schedule(watch_server.url, "pause", BROKEN)
        assert paused.returncode == 0 and f"Schedule {BROKEN} paused." in paused.stdout
        digest = second["values"]["digest"]
        assert digest["material"] and digest["new_findings"] == [CHANGED] and digest["gone_sources"] == [], digest
        assert digest["moved_figures"] == [{"source": url, "before": "1,240 tonnes", "after": "1,310 tonnes"}]
        assert digest["since"] == earlier[-1]["values"]["digest"]["finished_at"] and digest["outcome"] == "answered"
        report = second["values"]["final_report"]
        assert report.startswith("# Norre Bay kelp\n\n## What changed since ")
        assert f"1,240 tonnes → 1,310 tonnes ({url})" in report and f"- {CHANGED}" in report
        assert "stored 1,310 tonnes of carbon in its first year [1]" in report, "the checked report follows the digest"
        assert second["values"]["claim_summary"]["supported"] == 1
        exported = httpx.get(digest["report_url"], params={"format": "md"})
        assert exported.status_code == 200 and "What changed since" in exported.text
        over_mcp = report_over_mcp(watch_server.url, second["thread_id"])
        assert not over_mcp.isError and "1,240 tonnes → 1,310 tonnes" in text_of(over_mcp)

        # 4. Nothing changed since: a scheduled run (as the cron starts one) delivers the short digest only.
        quiet = client.runs.wait(
            None, GRAPH_ID, input={"messages": [{"role": "user", "content": QUESTION}]},
            config={"configurable": {"task": WATCH, "schedule": WATCH, "user_id": "anonymous", "clarify": False}},
            on_completion="keep",
        )  # fmt: skip
        assert quiet["digest"]["material"] is False and quiet["digest"]["since"] == digest["finished_at"]
        assert quiet["final_report"].startswith("# Norre Bay kelp\n\n## What changed since ")
        assert (
            "Nothing material changed: no new findings, no figure moved and no source is gone." in quiet["final_report"]
        )
        assert "[1]" not in quiet["final_report"] and quiet["citations"] == []

        # 5. The Watching list: the user's own, with the last outcome, cost and digests newest first.
        listing = schedule(watch_server.url, "list")
        assert listing.returncode == 0, listing.stderr
        [row] = [line for line in listing.stdout.splitlines() if f" {WATCH} " in line]
        assert "paused" in row and "answered" in row and f" {runs} " in row and "$" in row
        [broken_row] = [line for line in listing.stdout.splitlines() if f" {BROKEN} " in line]
        assert "FAILED: config_error" in broken_row
        view = watching(watch_server.url, name=WATCH).json()
        assert view["runs"] == runs and [d["material"] for d in view["digests"]][:2] == [False, True]
        assert view["digests"][1]["headline"].startswith("1 figure moved, 1 new finding since ")
        assert view["digests"][-1]["headline"] == "First run: nothing to compare with yet"
        assert watching(watch_server.url, name=BROKEN).json()["runs"] >= 2
        assert watching(watch_server.url, user="bob", name=WATCH).status_code == 404
        other = schedule(watch_server.url, "remove", WATCH, "--user", "bob")
        assert other.returncode == 1 and f"No schedule named '{WATCH}' for user bob" in other.stdout
        assert watching(watch_server.url, user="bob").json()["schedules"] == []

        context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
        try:
            ui = UiPage(context.new_page(), watch_server.url, "watching")
            ui.page.set_default_timeout(20_000)
            ui.open()
            watch = ui.page.locator(f'li.watch[data-schedule="{WATCH}"]')
            expect(watch.locator(".watch-meta")).to_contain_text("Paused")
            expect(watch.locator(".watch-meta")).to_contain_text(f"{runs} runs")
            expect(watch.locator(".digest-headline")).to_have_count(runs)
            expect(watch.locator(".digest-headline").nth(0)).to_contain_text("Nothing material changed since")
            expect(watch.locator(".digest-headline").nth(1)).to_contain_text("1 figure moved, 1 new finding since")
            expect(watch.locator(".digest-headline").last).to_contain_text("First run")
            failing = ui.page.locator(f'li.watch[data-schedule="{BROKEN}"]')
            expect(failing.locator(".watch-meta")).to_contain_text("Last run failed (config error)")
            expect(failing.locator(".digest.failed").nth(1)).to_be_visible()
            ui.screenshot()
            watch.locator(".digest").nth(1).click()
            expect(ui.page.locator("section.report .report-body")).to_contain_text("What changed since")
            expect(ui.page.locator("section.report .report-body")).to_contain_text("1,240 tonnes → 1,310 tonnes")
            assert ui.thread_id == second["thread_id"]
        finally:
            context.close()

        removed = schedule(watch_server.url, "remove", WATCH)
        assert removed.returncode == 0 and f"Schedule {WATCH} removed" in removed.stdout
    finally:
        for cron in client.crons.search(limit=100):  # no later test sees their runs
            client.crons.delete(cron["cron_id"])
    assert watching(watch_server.url).json()["schedules"] == []
