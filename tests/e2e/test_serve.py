"""A team server that survives, through ``./run.sh serve`` itself (``testkit/serve_process.py``), not a helper
class: two supervised instances on the Postgres and Redis serve starts and keeps under its data directory.

An instance SIGKILLed while ten runs research is restarted by serve, the other answers throughout, and every
run delivers one report with one end status; serve stopped (SIGTERM) and started again keeps every thread
and checkpoint, and a thread continues. Leases are short (10 s, heartbeat 3 s) so a killed instance's runs
are handed on within seconds. Needs Postgres, Redis and the Aegra environment (``./run.sh test`` installs
them); each start of serve takes a minute or more on a loaded 2-core machine, so the module starts it twice.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from langgraph_sdk import get_client

from deploy import services
from testkit.agent_server import GRAPH_ID, STREAM_MODES, RunResult, stream_run
from testkit.scenarios import (
    end_of,
    findings_json,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    scenario,
    submit,
)
from testkit.scripted_model import turn
from testkit.serve_process import ServeProcess, free_port_range
from tests.conftest import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.aegra]

REPORT = "# Sodium\n\nSodium cells are cheaper than lithium cells.\n"
USERS = [f"user-{n}" for n in range(10)]


def token(user: str) -> str:
    return f"tok-{user}-0123456789abcdef"


class Team:
    """The serve under test and what the tests leave for the next one (threads made before a restart)."""

    def __init__(self, serve: ServeProcess) -> None:
        self.serve = serve
        self.threads: dict[str, str] = {}

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
        "DRA_AUTH_TOKENS": ",".join(f"{user}={token(user)}" for user in USERS),
        "DRA_MAX_RUNS_PER_USER": "0",
        "DRA_SERVE_GRACE_S": "20",
        "WORKER_COUNT": "2",
        "N_JOBS_PER_WORKER": "10",
        "LEASE_DURATION_SECONDS": "10",
        "HEARTBEAT_INTERVAL_SECONDS": "3",
        "REAPER_INTERVAL_SECONDS": "2",
        "CRON_ENABLED": "false",
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


async def test_serve_stopped_and_started_again_keeps_every_thread_and_checkpoint_and_a_thread_continues(team, scripted):
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
            orchestrator(plan_and_delegate("And lithium?"), submit(REPORT + "\nLithium costs more.\n")),
            researcher(turn(content=findings_json("Sodium cells are cheaper.")), repeat_last=True),
        )
    )

    assert "(reused)" in team.serve.output()
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
