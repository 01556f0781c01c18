"""A team server that survives, through ``./run.sh serve`` itself (``testkit/serve_process.py``), not a helper
class: two supervised instances on the Postgres and Redis serve starts and keeps under its data directory.

The two instances are one deployment: either streams the same events and joins the other's run, a stop
request sent to either stops a run, and the per-user run limit holds across both. An instance SIGKILLed
while ten runs research is restarted by serve, the other answers throughout, and every run delivers one
report with one end status and its whole ledger; serve stopped (SIGTERM) and started again keeps every
thread and checkpoint, and a thread continues on the other instance. Leases are short (10 s, heartbeat 3 s) so a killed instance's runs
are handed on within seconds. Needs Postgres, Redis and the Aegra environment (``./run.sh test`` installs
them); each start of serve takes a minute or more on a loaded 2-core machine, so the module starts it twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langgraph_sdk import get_client
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from playwright.async_api import async_playwright
from playwright.async_api import expect as async_expect

from deep_research_agent.protocol.events import STOP_REQUESTS_NAMESPACE
from deploy import services
from testkit.agent_server import EVENT_SCHEMA, GRAPH_ID, PROJECT_ROOT, STREAM_MODES, RunResult, stream_run
from testkit.browser import CHROMIUM_ARGS, chromium_executable
from testkit.mcp_caller import Progress, mcp_session, research_then_cancel, text_of, what_others_get
from testkit.scenarios import (
    FARM_AFTER,
    FARM_BEFORE,
    FARM_CHANGED,
    coder,
    end_of,
    farm_watch,
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    researcher_finds_then_hangs,
    researcher_reads,
    scenario,
    submit,
    would_ask_but_cannot,
)
from testkit.scripted_model import call, turn
from testkit.serve_process import ServeProcess, free_port_range
from testkit.sink import SINK_ANSWER, InternalSink
from testkit.web import ARTICLES
from testkit.webhook_receiver import WebhookReceiver
from tests.conftest import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.aegra]

REPORT = "# Sodium\n\nSodium cells are cheaper than lithium cells.\n"
USERS = [f"user-{n}" for n in range(10)]
RUNS_PER_USER = 3
SNIPPET = "Sodium-ion cells cost about 30 % less per kWh than lithium iron phosphate cells (2025 survey)."
SOURCE = "https://batteries.example/sodium-survey"
MCP_QUESTION = "How dense are sodium-glass batteries?"
# The user whose schedule runs on the cron: no other test makes threads of theirs, so their threads are its runs.
WATCHER = "wendy"


def token(user: str) -> str:
    return f"tok-{user}-0123456789abcdef"


class Team:
    """The serve under test and what the tests leave for the next one (threads made before a restart)."""

    def __init__(self, serve: ServeProcess) -> None:
        self.serve = serve
        self.threads: dict[str, str] = {}
        # The schedule the restart must keep: its cron and the webhook posts so far.
        self.schedule: dict[str, Any] = {}

    def client(self, n: int, user: str) -> Any:
        return get_client(url=self.serve.urls[n], api_key=token(user))


@pytest.fixture(scope="module")
def team(model_server, web_server, tmp_path_factory) -> Iterator[Team]:
    if gaps := services.missing():
        pytest.skip(f"./run.sh serve needs {', '.join(gaps)}")
    workdir = Path(tmp_path_factory.mktemp("serve"))
    # PostgreSQL runs as the postgres user, which cannot enter pytest's private temporary folders.
    data_dir = Path(tempfile.mkdtemp(prefix="dra-serve-"))
    data_dir.chmod(0o755)
    settings = agent_env(model_server, web_server)
    env_file = workdir / "agent.env"
    env_file.write_text(f"OPENAI_API_KEY={settings.pop('OPENAI_API_KEY')}\n")
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "DATABASE_URL", "REDIS_URL")},
        **settings,
        "DRA_ENV_FILE": str(env_file),
        "DRA_DATA_DIR": str(data_dir),
        "DRA_PORT": str(free_port_range(2)),
        "DRA_INSTANCES": "2",
        "DRA_AUTH_TOKENS": ",".join(
            f"{user}={token(user)}" for user in [*USERS, "alice", "bob", "carol", "dave", "erin", WATCHER]
        ),
        "DRA_MAX_RUNS_PER_USER": str(RUNS_PER_USER),
        "DRA_SERVE_GRACE_S": "20",
        "WORKER_COUNT": "2",
        "N_JOBS_PER_WORKER": "10",
        "LEASE_DURATION_SECONDS": "10",
        "HEARTBEAT_INTERVAL_SECONDS": "3",
        "REAPER_INTERVAL_SECONDS": "2",
        # Aegra's cron engine looks for due crons every 2 s, and the webhook outbox for finished runs every 1 s.
        "CRON_POLL_INTERVAL_SECONDS": "2",
        "DRA_WEBHOOK_POLL_S": "1",
    }
    serve = ServeProcess(env, workdir / "serve.log").start()
    team = Team(serve)
    try:
        yield team
    finally:
        team.serve.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def research(delay_s: float | None = None) -> dict[str, Any]:
    return scenario(
        orchestrator(plan_and_delegate("Find sodium prices"), submit(REPORT)),
        researcher(turn(content=findings_json("Sodium cells are cheaper."), delay_s=delay_s), repeat_last=True),
    )


def delivered(run: RunResult) -> bool:
    return end_of(run) == ("done", "report_delivered") and run.values["final_report"].startswith("# Sodium")


async def test_serve_says_which_data_it_keeps_and_a_run_delivers(team, scripted):
    scripted.set_scenario(research())

    run = await stream_run(team.client(0, "user-0"), "How cheap are sodium cells?", timeout=180)

    assert delivered(run)
    team.threads["user-0"] = run.thread_id
    out = team.serve.output()
    assert "Data: the Postgres cluster in " in out and "(created now)" in out
    assert "Data: Redis with its append-only file in " in out and "serve delete-data deletes it" in out


def cli(url: str, user: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m deep_research_agent.cli`` (what ``./run.sh ask|kb|tasks`` run) as ``user``, by their token."""
    env = {**os.environ, "COLUMNS": "200", "LANGGRAPH_API_KEY": token(user)}
    return subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", *args, "--url", url],
        capture_output=True, text=True, timeout=240, env=env, cwd=PROJECT_ROOT,
    )  # fmt: skip


async def test_ask_kb_and_tasks_on_serve_show_each_user_what_their_runs_wrote_and_nothing_of_anyone_else(
    team, scripted
):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find sodium prices"), submit(REPORT)),
            researcher(
                turn(tool_calls=[call("remember", text=SNIPPET, source=SOURCE, sync=True)]),
                turn(content=findings_json("Sodium cells are cheaper.")),
            ),
        )
    )
    url = team.serve.urls[0]

    asked = await asyncio.to_thread(
        cli, url, "alice", "ask", "How cheap are sodium cells?", "--no-clarify", "--task", "sodium-watch"
    )
    alice_kb = await asyncio.to_thread(cli, url, "alice", "kb", "list")
    alice_tasks = await asyncio.to_thread(cli, url, "alice", "tasks")
    bob_kb = await asyncio.to_thread(cli, url, "bob", "kb", "list")
    bob_tasks = await asyncio.to_thread(cli, url, "bob", "tasks")
    bob_as_alice = await asyncio.to_thread(cli, url, "bob", "kb", "list", "--user", "alice")

    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert alice_kb.returncode == 0, alice_kb.stdout + alice_kb.stderr
    assert "Dataset 'main' of user 'alice': 1 entry." in alice_kb.stdout and SOURCE in alice_kb.stdout
    assert "alice / main" in alice_kb.stdout
    assert alice_tasks.returncode == 0 and "Tasks of alice" in alice_tasks.stdout
    assert "sodium-watch" in alice_tasks.stdout
    assert "Dataset 'main' of user 'bob': 0 entries." in bob_kb.stdout and "alice" not in bob_kb.stdout
    assert "No tasks for user bob." in bob_tasks.stdout
    assert (
        bob_as_alice.returncode != 0
        and "only its own knowledge base and tasks" in bob_as_alice.stdout + bob_as_alice.stderr
    )
    team.threads["alice"] = (await team.client(0, "alice").threads.search(metadata={"task": "sodium-watch"}))[0][
        "thread_id"
    ]


async def test_the_web_ui_on_serve_asks_for_a_token_then_loads_and_its_session_runs_and_reads_only_its_own(
    team, scripted
):
    url = team.serve.urls[1]
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        signed_out = await http.get("/ui")
        wrong = await http.post("/ui/session", data={"token": "not-a-token-0123456789", "next": "/ui"})
        signed_in = await http.post("/ui/session", data={"token": token("alice"), "next": "/ui"})
        cookie = signed_in.headers["set-cookie"]
        page = await http.get("/ui", headers={"Cookie": cookie.split(";")[0]})
        theirs = await http.get(f"/evidence/{team.threads['alice']}", headers={"Cookie": cookie.split(";")[0]})
        not_theirs = await http.get(f"/evidence/{team.threads['user-0']}", headers={"Cookie": cookie.split(";")[0]})
        api = await http.post("/threads/search", json={}, headers={"Cookie": cookie.split(";")[0]})

    async with httpx.AsyncClient(base_url=url, timeout=30) as without_cookie:
        anonymous = await without_cookie.post("/threads/search", json={})

    assert signed_out.status_code == 200 and "Sign in" in signed_out.text and 'action="/ui/session"' in signed_out.text
    assert wrong.status_code == 401 and "not known here" in wrong.text
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/ui"
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    built = (PROJECT_ROOT / "ui" / "dist" / "index.html").is_file()
    assert page.status_code == (200 if built else 503) and "Sign in" not in page.text
    assert theirs.status_code in (200, 404) and "of yours" not in theirs.text
    assert not_theirs.status_code == 404 and "of yours" in not_theirs.json()["detail"]
    assert api.status_code == 200 and [t["thread_id"] for t in api.json()] == [team.threads["alice"]]
    assert anonymous.status_code == 401

    scripted.set_scenario(research())
    through_the_page = get_client(url=url, headers={"Cookie": cookie.split(";")[0]})
    assert delivered(await stream_run(through_the_page, "How cheap are sodium cells?", timeout=180))


async def test_on_serve_a_report_downloads_for_its_owner_only_and_the_agents_mcp_endpoint_serves_its_tools(team):
    url, thread = team.serve.urls[1], team.threads["user-0"]
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        own = await http.get(f"/reports/{thread}", params={"format": "md"}, headers=bearer("user-0"))
        other = await http.get(f"/reports/{thread}", params={"format": "md"}, headers=bearer("alice"))
    async with (
        httpx.AsyncClient(headers=bearer("user-0"), timeout=httpx.Timeout(30, read=120)) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = await session.list_tools()
        report = await session.call_tool("get_report", {"thread_id": thread})

    assert own.status_code == 200, own.text
    assert "# Sodium" in own.text and "Sodium cells are cheaper" in own.text
    assert "attachment" in own.headers["content-disposition"]
    assert other.status_code == 404 and "of yours" in other.json()["detail"]
    assert {tool.name for tool in tools.tools} == {"research", "follow_up", "get_report", "get_evidence"}
    assert not report.isError and "Sodium cells are cheaper" in report.content[0].text


def bearer(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(user)}"}


def cited(url: str) -> str:
    return f"# Sodium-glass batteries\n\nThey reach 412 Wh/kg [1].\n\n## Sources\n[1] Halvorsen — {url}\n"


async def test_mcp_research_on_serve_answers_the_checked_report_with_progress_and_a_second_user_reads_none_of_it(
    team, scripted, web
):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density of sodium-glass batteries"), submit(cited(url))),
            researcher_reads(url, query="sodium glass battery", finding="412 Wh/kg", quote="412 Wh/kg"),
        )
    )
    progress = Progress()

    async with mcp_session(team.serve.urls[0], token("user-3")) as session:
        result = await session.call_tool("research", {"question": MCP_QUESTION}, progress_callback=progress)
    thread_id = (result.structuredContent or {}).get("thread_id", "")
    others = await what_others_get(
        thread_id, other_url=team.serve.urls[1], other_token=token("user-4"), anonymous_url=team.serve.urls[0]
    )

    assert not result.isError, text_of(result)
    text = result.content[0].text
    assert text.startswith("# Sodium-glass batteries") and "## Sources" in text and url in text
    assert "additional_kwargs" not in text_of(result) and "HumanMessage" not in text_of(result)
    facts = result.structuredContent
    assert facts["report"] == text and [source["url"] for source in facts["sources"]] == [url]
    assert (facts["claims"]["claims"], facts["claims"]["supported"], facts["citation_accuracy"]) == (1, 1, 1.0)
    assert (facts["outcome"], facts["end"], facts["partial"]) == ("answered", "done/report_delivered", False)
    assert facts["run_id"] and facts["run_seconds"] > 0
    assert any(m.startswith("Research started") and thread_id in m for m in progress.messages)
    assert any(m.startswith("Research unit started") for m in progress.messages)
    assert any(m.startswith("Research unit done") for m in progress.messages)
    assert any(m.startswith("Source read") for m in progress.messages)
    [user_message] = [m for m in requests_of(scripted, "orchestrator")[0]["body"]["messages"] if m["role"] == "user"]
    assert message_text(user_message) == MCP_QUESTION, "the question is the run's one human message, unchanged"
    for answer in others.tool_answers():
        assert answer.isError and f"No thread {thread_id}" in text_of(answer)
        assert "412 Wh/kg" not in text_of(answer)
    assert others.anonymous_status == 401
    team.threads["user-3"] = thread_id


async def test_mcp_research_on_serve_of_a_question_that_would_be_clarified_reports_on_stated_assumptions(
    team, scripted
):
    scripted.set_scenario(would_ask_but_cannot())

    async with mcp_session(team.serve.urls[1], token("user-5")) as session:
        result = await session.call_tool("research", {"question": "Tell me about kelp farms."})

    assert not result.isError, text_of(result)
    assert result.content[0].text.startswith("# Kelp farms\n\nAssumed: worldwide")
    assert "Which region?" not in text_of(result)
    assert result.structuredContent["end"] == "done/report_delivered"
    first = requests_of(scripted, "orchestrator")[0]["body"]
    assert "request_clarification" not in {tool["function"]["name"] for tool in first["tools"]}


async def test_cancelling_an_mcp_research_call_on_serve_stops_the_run_and_leaves_the_report_of_what_was_found(
    team, scripted, web
):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density of sodium-glass batteries"), submit("# Never\n")),
            researcher_finds_then_hangs(url),
        )
    )
    async with mcp_session(team.serve.urls[0], token("user-6")) as session:
        cancelled = await research_then_cancel(
            session, MCP_QUESTION, reached=lambda: len(requests_of(scripted, "research-subagent")) >= 3
        )
    runs = await team.client(1, "user-6").runs.list(cancelled.thread_id)

    assert cancelled.answer is None and "cancelled" in str(cancelled.error).lower()
    report = cancelled.report
    assert not report.isError, text_of(report)
    assert "412 Wh/kg" in report.content[0].text and "# Never" not in report.content[0].text
    assert report.structuredContent["outcome"] is not None
    assert len(requests_of(scripted, "orchestrator")) == 1, "the stopped run went on to write its own report"
    assert [run["status"] for run in runs] == ["success"], "the stopped run should end, not hang on its slow call"


async def test_a_run_naming_an_mcp_server_on_a_private_address_is_refused_with_an_mcp_error_and_still_delivers(
    team, scripted
):
    scripted.set_scenario(research())
    private = "http://10.20.30.40:9000/mcp"

    run = await stream_run(
        team.client(1, "user-2"),
        "How cheap are sodium cells?",
        configurable={"mcp_servers": [{"label": "internal", "url": private}]},
        timeout=180,
    )

    [error] = [e for e in run.statuses() if e["state"] == "mcp_error"]
    assert error["label"] == "internal" and error["detail"].startswith(f"refused {private}: this deployment")
    assert "DRA_MCP_ALLOWED_HOSTS" in error["detail"]
    assert not [e for e in run.statuses() if e["state"] == "mcp_ready"]
    assert delivered(run)


async def test_a_runs_own_sandbox_url_on_loopback_is_refused_on_serve_and_nothing_of_the_hosts_answer_reaches_the_user(
    team, scripted
):
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(tool_calls=[call("task", description="List the workspace", subagent_type="coding-subagent")]),
                submit(REPORT),
            ),
            coder(
                turn(tool_calls=[call("execute", command="ls /workspace")]),
                turn(content="STATUS: ok\nSCRIPT: none\nOUTPUT:\n\nNOTES: listed."),
            ),
        )
    )
    client = team.client(0, "user-8")

    with InternalSink() as sink:
        run = await stream_run(
            client, "How cheap are sodium cells?", configurable={"sandbox_url": sink.root_url}, timeout=180
        )
        reached = sink.requests
    state = await client.threads.get_state(run.thread_id)

    assert reached == [], "the server reached the internal host a user named"
    assert end_of(run) == ("error", "config_error")
    [end] = run.statuses("error")
    assert (
        f"refused {sink.root_url}: this deployment allows a run's sandbox URLs only on the hosts the operator "
        in (end["detail"])
    )
    assert "DRA_SANDBOX_ALLOWED_HOSTS (none are listed)" in end["detail"]
    seen = json.dumps([run.parts, state])
    assert SINK_ANSWER not in seen, "the internal host's answer reached the user"
    assert not requests_of(scripted, "orchestrator") and not requests_of(scripted, "coding-subagent")


async def test_either_instance_streams_the_same_events_and_joins_a_run_streaming_on_the_other(team, scripted):
    scripted.set_scenario(research(delay_s=1.0))
    on_a, on_b = team.client(0, "bob"), team.client(1, "bob")

    through_a = await stream_run(on_a, "How cheap are sodium cells?", timeout=180)
    through_b = await stream_run(on_b, "How cheap are sodium cells?", timeout=180)
    thread = await on_a.threads.create()
    created = await on_a.runs.create(
        thread["thread_id"],
        GRAPH_ID,
        input={"messages": [{"role": "user", "content": "How cheap are sodium cells?"}]},
        stream_mode=STREAM_MODES,
        stream_subgraphs=True,
    )
    joined = RunResult(thread_id=thread["thread_id"])
    with anyio.fail_after(180):
        async for part in on_b.runs.join_stream(thread["thread_id"], created["run_id"], stream_mode=STREAM_MODES):
            joined.parts.append((part.event, part.data))

    def shape(run: RunResult) -> list[tuple[str, str | None]]:
        return [(event["type"], event.get("state")) for event in run.events]

    assert delivered(through_a) and delivered(through_b)
    assert shape(through_a) == shape(through_b), "the two instances streamed different events for one scenario"
    assert shape(joined) == shape(through_a), "join_stream on the other instance missed or added events"
    assert not [error.message for event in joined.events for error in EVENT_SCHEMA.iter_errors(event)]


async def test_a_stop_request_sent_to_the_instance_not_running_the_run_stops_it(team, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density of sodium-glass cells"), submit(REPORT)),
            researcher_finds_then_hangs("http://example.invalid/sodium"),
        )
    )
    creator = team.client(0, "dave")
    thread = await creator.threads.create()
    run = await creator.runs.create(
        thread["thread_id"], GRAPH_ID, input={"messages": [{"role": "user", "content": "How dense?"}]}
    )
    executor = await team.serve.executor_of(run["run_id"])
    with anyio.fail_after(90):
        while len(requests_of(scripted, "research-subagent")) < 3:
            await anyio.sleep(0.05)
    elsewhere = team.client(team.serve.ports.index(executor) ^ 1, "dave")

    asked = time.monotonic()
    await elsewhere.store.put_item(list(STOP_REQUESTS_NAMESPACE), run["run_id"], {"mode": "now"})
    with anyio.fail_after(90):
        final = await elsewhere.runs.join(thread["thread_id"], run["run_id"])
    took = time.monotonic() - asked

    assert took < 25, f"the run took {took:.0f} s to stop while its sub-agent waited on a 30 s model call"
    assert "412 Wh/kg" in final["final_report"] and "asked the run to stop" in final["final_report"]
    assert (await creator.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"
    assert (await elsewhere.store.search_items(list(STOP_REQUESTS_NAMESPACE)))["items"] == [], (
        "the request was not deleted once served"
    )


async def test_the_per_user_run_limit_holds_across_instances_and_frees_as_runs_end(team, scripted):
    scripted.set_scenario(research(delay_s=6.0))
    clients = [team.client(n, "carol") for n in (0, 1, 0)]
    threads = [(await client.threads.create())["thread_id"] for client in clients]
    held = [
        await client.runs.create(
            thread, GRAPH_ID, input={"messages": [{"role": "user", "content": f"Sodium prices? ({n})"}]}
        )
        for n, (client, thread) in enumerate(zip(clients, threads, strict=True))
    ]
    with anyio.fail_after(120):
        while len(requests_of(scripted, "research-subagent")) < RUNS_PER_USER:
            await anyio.sleep(0.05)

    fourth = await stream_run(team.client(1, "carol"), "One more?", timeout=90)
    other_user = await stream_run(team.client(1, "erin"), "Sodium prices?", timeout=180)

    assert end_of(fourth)[:2] == ("error", "too_many_runs")
    refusal = fourth.end_statuses[0]["detail"]
    assert f"at most {RUNS_PER_USER} per user" in refusal and "3 research runs in progress" in refusal
    assert (
        fourth.values["messages"][-1]["type"] == "ai" and "was not started" in fourth.values["messages"][-1]["content"]
    )
    assert not fourth.of_type("report")
    assert delivered(other_user), "another user's run was refused"
    with anyio.fail_after(180):
        for client, thread, run in zip(clients, threads, held, strict=True):
            assert (await client.runs.join(thread, run["run_id"]))["final_report"].startswith("# Sodium")
    assert delivered(await stream_run(team.client(1, "carol"), "Sodium prices again?", timeout=180))


async def test_an_instance_killed_while_ten_runs_research_is_restarted_and_every_run_delivers_one_report(
    team, scripted
):
    scripted.set_scenario(research(delay_s=4.0))
    port_a = team.serve.first_port

    async def join(user: str, thread_id: str, run_id: str) -> RunResult:
        """Follow the run on the instance that stays up, from its start, as a client would."""
        joined = RunResult(thread_id=thread_id)
        async for part in team.client(1, user).runs.join_stream(thread_id, run_id, stream_mode=STREAM_MODES):
            joined.parts.append((part.event, part.data))
        joined.state = await team.client(1, user).threads.get_state(thread_id)
        return joined

    created, joins = [], []
    for n, user in enumerate(USERS):
        client = team.client(n % 2, user)
        thread = await client.threads.create()
        run = await client.runs.create(
            thread["thread_id"],
            GRAPH_ID,
            input={"messages": [{"role": "user", "content": f"How cheap are sodium cells? ({n})"}]},
            stream_mode=STREAM_MODES,
            stream_subgraphs=True,
        )
        created.append((user, thread["thread_id"], run["run_id"]))
        joins.append(asyncio.ensure_future(join(*created[-1])))
    with anyio.fail_after(180):
        while len(requests_of(scripted, "research-subagent")) < 4:
            await anyio.sleep(0.1)

    killed = team.serve.kill_instance(port_a)
    answers: list[int] = []

    async def keep_asking_the_other() -> None:
        async with httpx.AsyncClient(timeout=5) as http:
            while True:
                answers.append((await http.get(f"{team.serve.urls[1]}/health")).status_code)
                await anyio.sleep(0.5)

    watcher = asyncio.ensure_future(keep_asking_the_other())
    try:
        with anyio.fail_after(300):
            runs = await asyncio.gather(*joins)
    finally:
        watcher.cancel()

    assert all(delivered(run) for run in runs), [
        (run.thread_id, run.end_statuses) for run in runs if not delivered(run)
    ]
    assert all(len(run.end_statuses) == 1 and len(run.of_type("report")) == 1 for run in runs)
    assert any(team.serve.pickups(run_id) > 1 for _, _, run_id in created), "no run resumed after the kill"
    executors = {port for port in team.serve.ports for _, _, run_id in created if team.serve.pickups(run_id, port)}
    assert executors == set(team.serve.ports), "one instance executed every run"
    # Every run's ledger is whole: the planning call made before the kill is still counted after it (a call
    # whose reply died with the instance is made again and counted again: it was paid for twice).
    calls = [run.of_type("usage")[-1]["per_role"]["orchestrator"]["model_calls"] for run in runs]
    assert min(calls) >= 2, f"orchestrator calls counted per run: {calls}"
    for (user, thread_id, run_id), run in zip(created, runs, strict=True):
        assert (await team.client(1, user).runs.get(thread_id, run_id))["status"] == "success"
        reports = [m for m in run.values["messages"] if m["type"] == "ai" and m["content"].startswith("# Sodium")]
        assert len(reports) == 1, "a report was delivered twice"
    assert answers and set(answers) == {200}, f"the other instance stopped answering: {answers}"
    out = team.serve.output()
    assert f"the instance on port {port_a} (pid {killed}) was killed by SIGKILL; restarting it in 1 s" in out
    with anyio.fail_after(240):
        while f"the instance on port {port_a} is serving again" not in team.serve.output():
            await anyio.sleep(0.5)
    assert (await httpx.AsyncClient().get(f"{team.serve.urls[0]}/health")).status_code == 200
    team.threads["user-1"] = runs[1].thread_id


WATCH = "kelp-watch-serve"
EVERY_MINUTE = "* * * * *"


@pytest.fixture(scope="module")
def serve_hooks() -> Iterator[WebhookReceiver]:
    """The schedule's webhook receiver, alive until serve's restart at the end of the module."""
    with WebhookReceiver() as receiver:
        yield receiver


async def test_a_schedule_on_serve_runs_on_aegras_cron_through_a_sigkill_and_posts_each_digest_to_its_owner_only(
    team, scripted, web, serve_hooks
):
    url = team.serve.urls[0]
    page = web.set_page(
        "norre-bay-serve", title="Norre Bay kelp farm", paragraphs=[FARM_BEFORE, "It covers 40 hectares."]
    )
    scripted.set_scenario(farm_watch(page, FARM_BEFORE))
    watcher, bob = team.client(1, WATCHER), team.client(1, "bob")
    hooks = serve_hooks
    # The guard stands in front of Aegra's cron engine too: bad schedules never reach it.
    bad_cron = await asyncio.to_thread(cli, url, WATCHER, "schedule", "add", WATCH, "Q?", "--cron", "8 o'clock")
    private = await asyncio.to_thread(
        cli, url, WATCHER, "schedule", "add", WATCH, "Q?", "--cron", EVERY_MINUTE, "--webhook", "http://10.9.8.7/h"
    )
    assert bad_cron.returncode == 1 and "is not a cron expression" in bad_cron.stdout
    assert private.returncode == 1 and "is a private address" in " ".join(private.stdout.split())
    assert await watcher.crons.search() == []
    added = await asyncio.to_thread(
        cli, url, WATCHER, "schedule", "add", WATCH, "How much carbon does the Norre Bay farm store?",
        "--cron", EVERY_MINUTE, "--webhook", hooks.url("serve"),
    )  # fmt: skip
    assert added.returncode == 0, added.stdout + added.stderr
    [cron] = await watcher.crons.search()
    assert cron["enabled"] and cron["next_run_date"] > cron["created_at"], "Aegra starts no run at creation"

    first = (await asyncio.to_thread(hooks.wait_for, "serve", 1, 150))[0]
    # Between the two runs an instance dies (serve restarts it) and the page changes, the schedule paused
    # meanwhile; a run the cron started before the pause (a slow machine) read the old page, and is waited for.
    await watcher.crons.update(cron["cron_id"], enabled=False)
    earlier = await asyncio.to_thread(hooks.wait_for, "serve", len(await watcher.threads.search(limit=50)), 180)
    assert first["status"] == "success" and first["values"]["digest"]["since"] is None
    assert first["values"]["digest"]["task"] == WATCH and first["values"]["digest"]["outcome"] == "answered"
    killed = team.serve.kill_instance(team.serve.first_port)
    web.set_page("norre-bay-serve", title="Norre Bay kelp farm", paragraphs=[FARM_AFTER, "It covers 40 hectares."])
    scripted.set_scenario(farm_watch(page, FARM_AFTER))
    assert (await asyncio.to_thread(cli, team.serve.urls[1], WATCHER, "schedule", "resume", WATCH)).returncode == 0
    second = (await asyncio.to_thread(hooks.wait_for, "serve", len(earlier) + 1, 180))[-1]
    await watcher.crons.update(cron["cron_id"], enabled=False)
    runs = await asyncio.to_thread(hooks.wait_for, "serve", len(await watcher.threads.search(limit=50)), 180)
    paused = await asyncio.to_thread(cli, team.serve.urls[1], WATCHER, "schedule", "pause", WATCH)
    assert paused.returncode == 0, paused.stdout + paused.stderr
    out = team.serve.output()
    assert f"the instance on port {team.serve.first_port} (pid {killed}) was killed by SIGKILL" in out

    digest = second["values"]["digest"]
    assert digest["material"] and digest["new_findings"] == [FARM_CHANGED] and digest["since"] is not None
    assert second["values"]["final_report"].startswith("# Norre Bay kelp\n\n## What changed since ")
    assert "1,240 tonnes → 1,310 tonnes" in second["values"]["final_report"] and "kwargs" not in second
    listed = await watcher.http.get("/schedules")
    [view] = listed["schedules"]
    assert view["name"] == WATCH and not view["enabled"] and view["runs"] == len(runs)
    assert [d["run_id"] for d in view["digests"]] == [run["run_id"] for run in reversed(runs)]
    assert view["digests"][-1]["run_id"] == first["run_id"]
    async with httpx.AsyncClient(base_url=team.serve.urls[1], headers=bearer(WATCHER), timeout=30) as http:
        report = await http.get(second["values"]["digest"]["report_url"], params={"format": "md"})
    assert report.status_code == 200 and "What changed since" in report.text
    # Another user can neither list, read, change nor remove it, nor read its runs.
    for attempt in (
        bob.http.get(f"/schedules/{WATCH}"),
        bob.crons.update(cron["cron_id"], enabled=True),
        bob.crons.delete(cron["cron_id"]),
        bob.threads.get_state(second["thread_id"]),
        bob.http.get(second["values"]["digest"]["report_url"]),
    ):
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await attempt
        assert refused.value.response.status_code == 404
    assert await bob.crons.search() == [] and (await bob.http.get("/schedules"))["schedules"] == []
    assert len(await watcher.crons.search()) == 1
    team.threads[WATCHER] = second["thread_id"]
    team.schedule = {"cron_id": cron["cron_id"], "posted": len(runs)}

    # The web UI's Watching list, signed in with the owner's token, shows the runs and their digests.
    executable = chromium_executable()
    if executable is None:
        pytest.skip("chromium is not installed, and ./run.sh test could not install Debian's chromium package")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        try:
            ui = await browser.new_page()
            ui.set_default_timeout(30_000)
            await ui.goto(f"{team.serve.urls[1]}/ui")
            await ui.fill("input[name=token]", token(WATCHER))
            await ui.press("input[name=token]", "Enter")
            watch = ui.locator(f'li.watch[data-schedule="{WATCH}"]')
            await async_expect(watch.locator(".watch-meta")).to_contain_text("Paused")
            await async_expect(watch.locator(".watch-meta")).to_contain_text(f"{len(runs)} runs")
            await async_expect(watch.locator(".digest-headline")).to_have_count(len(runs))
            await async_expect(watch.locator(".digest-headline").last).to_contain_text("First run")
            changed = watch.locator(".digest-headline", has_text="1 figure moved, 1 new finding since")
            await async_expect(changed).to_have_count(1)
        finally:
            await browser.close()


async def test_serve_stopped_and_started_again_keeps_every_thread_and_checkpoint_and_a_thread_continues(
    team, scripted, web, serve_hooks
):
    # Last in the module: it restarts serve on the same data directory.
    before = {user: await team.client(0, user).threads.get_state(thread) for user, thread in team.threads.items()}
    histories = {
        user: len(await team.client(0, user).threads.get_history(thread, limit=100))
        for user, thread in team.threads.items()
    }

    assert team.serve.stop() == 0
    assert "Draining: the instances take no new runs" in team.serve.output() and "==> Stopped" in team.serve.output()
    team.serve.start()
    scripted.set_scenario(
        scenario(
            # The scripted orchestrator answers by its turn in the conversation: the thread's first two, then these.
            orchestrator(
                plan_and_delegate("Find sodium prices"),
                submit(REPORT),
                plan_and_delegate("And lithium?"),
                submit(REPORT + "\nLithium costs more.\n"),
            ),
            researcher(turn(content=findings_json("Sodium cells are cheaper.")), repeat_last=True),
        )
    )

    assert "(reused)" in team.serve.output()
    [kept] = (await team.client(1, WATCHER).http.get("/schedules"))["schedules"]
    assert kept["name"] == WATCH and kept["runs"] >= 2, "a schedule and its digests outlive a restart"
    for user, thread in team.threads.items():
        after = await team.client(1, user).threads.get_state(thread)
        assert after["values"]["final_report"] == before[user]["values"]["final_report"]
        assert len(await team.client(1, user).threads.get_history(thread, limit=100)) == histories[user]
    follow_up = await stream_run(
        team.client(1, "user-0"), "And how do lithium cells compare?", thread_id=team.threads["user-0"], timeout=180
    )
    assert delivered(follow_up), follow_up.end_statuses
    assert "Lithium costs more." in follow_up.values["final_report"]
    humans = [m["content"] for m in follow_up.values["messages"] if m["type"] == "human"]
    assert humans == ["How cheap are sodium cells?", "And how do lithium cells compare?"]

    # The schedule's cron is in Postgres: resumed on the restarted serve, it runs again, and since its page has
    # not changed, its digest says nothing material changed.
    assert team.schedule, "the schedule test ran before"
    page = web.set_page(
        "norre-bay-serve", title="Norre Bay kelp farm", paragraphs=[FARM_AFTER, "It covers 40 hectares."]
    )
    scripted.set_scenario(farm_watch(page, FARM_AFTER))
    resumed = await asyncio.to_thread(cli, team.serve.urls[0], WATCHER, "schedule", "resume", WATCH)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = (await asyncio.to_thread(serve_hooks.wait_for, "serve", team.schedule["posted"] + 1, 180))[-1]
    await team.client(0, WATCHER).crons.update(team.schedule["cron_id"], enabled=False)
    assert after["status"] == "success" and after["values"]["digest"]["material"] is False
    assert "Nothing material changed" in after["values"]["digest"]["markdown"]
    assert after["values"]["final_report"].startswith("# Norre Bay kelp\n\n## What changed since ")
