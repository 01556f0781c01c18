"""Past one machine: two Aegra instances on one Postgres and one Redis, driven through langgraph_sdk.

The deployment is the one ``./run.sh serve`` starts (``deploy/``): migrations once, instances with the
Redis job queue, bearer-token users, the per-user run limit. Its settings reach the agent only through
``DRA_ENV_FILE`` (the model key among them), as Aegra ignores ``langgraph.json``'s ``env``. Leases are
short here (10 s, heartbeat 3 s) so a killed instance's run is handed on within seconds, not a minute.
Skipped where Postgres, Redis or the Aegra environment is missing; ``./run.sh test`` installs all three.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from deep_research_agent.protocol.events import STOP_REQUESTS_NAMESPACE
from deploy import services
from testkit.agent_server import EVENT_SCHEMA, GRAPH_ID, STREAM_MODES, RunResult, stream_run
from testkit.scenarios import (
    end_of,
    findings_json,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    researcher_finds_then_hangs,
    scenario,
    submit,
)
from testkit.scripted_model import turn
from tests.conftest import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.aegra]

RUNS_PER_USER = 3
REPORT = "# Sodium\n\nSodium cells are cheaper than lithium cells.\n"
USERS = [*(f"user-{n}" for n in range(20)), "alice", "bob", "carol", "dave", "erin"]


def token(user: str) -> str:
    return f"tok-{user}-0123456789abcdef"


@dataclass
class Deployment:
    a: services.AegraInstance
    b: services.AegraInstance

    def client(self, instance: services.AegraInstance, user: str) -> LangGraphClient:
        return get_client(url=instance.url, api_key=token(user))

    def other(self, instance: services.AegraInstance) -> services.AegraInstance:
        return self.b if instance is self.a else self.a

    async def executor_of(self, run_id: str, timeout: float = 60.0) -> services.AegraInstance:
        """The instance whose worker picked the run up."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for instance in (self.a, self.b):
                if any("Worker picked up run" in line and run_id in line for line in instance.log().splitlines()):
                    return instance
            await anyio.sleep(0.1)
        raise AssertionError(f"no instance picked up run {run_id}")


@pytest.fixture(scope="module")
def deployment(model_server, web_server, tmp_path_factory) -> Iterator[Deployment]:
    if gaps := services.missing():
        pytest.skip(f"the Aegra deployment needs {', '.join(gaps)}")
    workdir = Path(tmp_path_factory.mktemp("aegra"))
    settings = agent_env(model_server, web_server)
    # The model key reaches the agent only through its env file.
    env_file = workdir / "agent.env"
    env_file.write_text(f"OPENAI_API_KEY={settings.pop('OPENAI_API_KEY')}\nDRA_MAX_RUNS_PER_USER={RUNS_PER_USER}\n")
    with services.PostgresServer() as postgres, services.RedisServer() as redis:
        env = services.aegra_environment(
            postgres.url,
            redis.url,
            **settings,
            DRA_ENV_FILE=str(env_file),
            DRA_AUTH_TOKENS=",".join(f"{user}={token(user)}" for user in USERS),
            WORKER_COUNT="2",
            N_JOBS_PER_WORKER="10",
            LEASE_DURATION_SECONDS="10",
            HEARTBEAT_INTERVAL_SECONDS="3",
            REAPER_INTERVAL_SECONDS="2",
            CRON_ENABLED="false",
        )
        env.pop("OPENAI_API_KEY", None)
        env.pop("DRA_MAX_RUNS_PER_USER", None)
        services.migrate(env)
        a = services.AegraInstance(env, log_path=workdir / "a.log").launch()
        b = services.AegraInstance(env, log_path=workdir / "b.log").launch()
        try:
            a.wait_ready(timeout=240)
            b.wait_ready(timeout=240)
            yield Deployment(a=a, b=b)
        finally:
            a.stop()
            b.stop()


def simple_research(delay_s: float | None = None) -> dict[str, Any]:
    return scenario(
        orchestrator(plan_and_delegate("Find sodium prices"), submit(REPORT)),
        researcher(turn(content=findings_json("Sodium cells are cheaper."), delay_s=delay_s)),
    )


def delivered(run: RunResult) -> bool:
    return end_of(run) == ("done", "report_delivered") and run.values["final_report"].startswith("# Sodium")


async def test_twenty_runs_sent_alternately_to_two_instances_all_deliver_and_both_execute(deployment, scripted):
    scripted.set_scenario(simple_research())
    targets = [deployment.a if n % 2 == 0 else deployment.b for n in range(20)]

    runs = await asyncio.gather(
        *(
            stream_run(deployment.client(target, f"user-{n}"), f"How cheap are sodium cells? ({n})", timeout=240)
            for n, target in enumerate(targets)
        )
    )

    assert all(delivered(run) for run in runs), [run.end_statuses for run in runs if not delivered(run)]
    assert all(len(run.of_type("run_start")) == 1 and not run.stream_errors() for run in runs)
    executors = {(await deployment.executor_of(run.run_id)).port for run in runs}
    assert executors == {deployment.a.port, deployment.b.port}, "one instance executed every run"


async def test_a_thread_created_on_one_instance_continues_on_the_other(deployment, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find sodium prices"),
                submit(REPORT),
                plan_and_delegate("And lithium?"),
                submit(REPORT + "\nLithium costs more.\n"),
            ),
            researcher(turn(content=findings_json("Sodium cells are cheaper.")), repeat_last=True),
        )
    )
    on_a, on_b = deployment.client(deployment.a, "alice"), deployment.client(deployment.b, "alice")

    first = await stream_run(on_a, "How cheap are sodium cells?", timeout=120)
    second = await stream_run(on_b, "And how do lithium cells compare?", thread_id=first.thread_id, timeout=120)

    assert delivered(first) and delivered(second)
    assert "Lithium costs more." in second.values["final_report"]
    humans = [m["content"] for m in second.values["messages"] if m["type"] == "human"]
    assert humans == ["How cheap are sodium cells?", "And how do lithium cells compare?"]
    assert (await on_a.threads.get_state(first.thread_id))["values"]["final_report"] == second.values["final_report"]


async def test_the_same_events_reach_a_client_through_either_instance_and_join_stream_on_the_other(
    deployment, scripted
):
    scripted.set_scenario(simple_research(delay_s=1.0))
    on_a, on_b = deployment.client(deployment.a, "bob"), deployment.client(deployment.b, "bob")

    through_a = await stream_run(on_a, "How cheap are sodium cells?", timeout=120)
    through_b = await stream_run(on_b, "How cheap are sodium cells?", timeout=120)
    thread = await on_a.threads.create()
    created = await on_a.runs.create(
        thread["thread_id"],
        GRAPH_ID,
        input={"messages": [{"role": "user", "content": "How cheap are sodium cells?"}]},
        stream_mode=STREAM_MODES,
        stream_subgraphs=True,
    )
    joined = RunResult(thread_id=thread["thread_id"])
    with anyio.fail_after(120):
        async for part in on_b.runs.join_stream(thread["thread_id"], created["run_id"], stream_mode=STREAM_MODES):
            joined.parts.append((part.event, part.data))

    def shape(run: RunResult) -> list[tuple[str, str | None]]:
        return [(event["type"], event.get("state")) for event in run.events]

    assert shape(through_a) == shape(through_b), "the two instances streamed different events for one scenario"
    assert shape(joined) == shape(through_a), "join_stream on the other instance missed or added events"
    assert not [error.message for event in joined.events for error in EVENT_SCHEMA.iter_errors(event)]
    assert end_of(joined) == ("done", "report_delivered")


async def test_a_stop_request_sent_to_the_other_instance_stops_the_run(deployment, scripted):
    url = "http://example.invalid/sodium"
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density of sodium-glass cells"), submit(REPORT)),
            researcher_finds_then_hangs(url),
        )
    )
    creator = deployment.client(deployment.a, "dave")
    thread = await creator.threads.create()
    run = await creator.runs.create(
        thread["thread_id"], GRAPH_ID, input={"messages": [{"role": "user", "content": "How dense?"}]}
    )
    executor = await deployment.executor_of(run["run_id"])
    with anyio.fail_after(60):
        while len(requests_of(scripted, "research-subagent")) < 3:
            await anyio.sleep(0.05)
    elsewhere = deployment.client(deployment.other(executor), "dave")

    asked = time.monotonic()
    await elsewhere.store.put_item(list(STOP_REQUESTS_NAMESPACE), run["run_id"], {"mode": "now"})
    with anyio.fail_after(60):
        final = await elsewhere.runs.join(thread["thread_id"], run["run_id"])
    took = time.monotonic() - asked

    assert took < 20, f"the run took {took:.0f} s to stop while its sub-agent waited on a 30 s model call"
    assert "412 Wh/kg" in final["final_report"] and "asked the run to stop" in final["final_report"]
    assert (await creator.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"
    assert (await elsewhere.store.search_items(list(STOP_REQUESTS_NAMESPACE)))["items"] == [], (
        "the request was not deleted once served"
    )


async def test_the_per_user_limit_holds_across_instances_and_frees_as_runs_end(deployment, scripted):
    scripted.set_scenario(simple_research(delay_s=6.0))
    clients = [deployment.client(instance, "carol") for instance in (deployment.a, deployment.b, deployment.a)]
    threads = [(await client.threads.create())["thread_id"] for client in clients]
    held = [
        await client.runs.create(
            thread, GRAPH_ID, input={"messages": [{"role": "user", "content": f"Sodium prices? ({n})"}]}
        )
        for n, (client, thread) in enumerate(zip(clients, threads, strict=True))
    ]
    with anyio.fail_after(90):
        while len(requests_of(scripted, "research-subagent")) < RUNS_PER_USER:
            await anyio.sleep(0.05)

    fourth = await stream_run(deployment.client(deployment.b, "carol"), "One more?", timeout=60)
    other_user = await stream_run(deployment.client(deployment.b, "erin"), "Sodium prices?", timeout=120)

    assert end_of(fourth)[:2] == ("error", "too_many_runs")
    refusal = fourth.end_statuses[0]["detail"]
    assert f"at most {RUNS_PER_USER} per user" in refusal and "3 research runs in progress" in refusal
    assert (
        fourth.values["messages"][-1]["type"] == "ai" and "was not started" in fourth.values["messages"][-1]["content"]
    )
    assert not fourth.of_type("report")
    assert delivered(other_user), "another user's run was refused"
    with anyio.fail_after(120):
        for client, thread, run in zip(clients, threads, held, strict=True):
            assert (await client.runs.join(thread, run["run_id"]))["final_report"].startswith("# Sodium")
    assert delivered(await stream_run(deployment.client(deployment.b, "carol"), "Sodium prices again?", timeout=120))


async def test_a_run_whose_instance_is_killed_resumes_on_the_other_and_delivers_one_report_with_its_whole_ledger(
    deployment, scripted
):
    # Last in the module: the killed instance stays down.
    scripted.set_scenario(simple_research(delay_s=4.0))
    creator = deployment.client(deployment.a, "user-0")
    thread = await creator.threads.create()
    created_at = time.monotonic()
    run = await creator.runs.create(
        thread["thread_id"],
        GRAPH_ID,
        input={"messages": [{"role": "user", "content": "How cheap are sodium cells?"}]},
        stream_mode=STREAM_MODES,
        stream_subgraphs=True,
    )
    executor = await deployment.executor_of(run["run_id"])
    survivor = deployment.other(executor)
    with anyio.fail_after(60):
        while not requests_of(scripted, "research-subagent"):
            await anyio.sleep(0.05)

    executor.kill()
    joined = RunResult(thread_id=thread["thread_id"])
    on_survivor = deployment.client(survivor, "user-0")
    with anyio.fail_after(120):
        async for part in on_survivor.runs.join_stream(thread["thread_id"], run["run_id"], stream_mode=STREAM_MODES):
            joined.parts.append((part.event, part.data))
    took = time.monotonic() - created_at
    state = await on_survivor.threads.get_state(thread["thread_id"])

    assert any("Worker picked up run" in line and run["run_id"] in line for line in survivor.log().splitlines())
    # The run's ledger came along: its run time and usage include the part on the dead instance.
    [end] = joined.end_statuses
    assert end["elapsed_s"] >= took - 5, f"run time {end['elapsed_s']} s for a run of {took:.0f} s"
    [usage] = joined.of_type("usage")
    assert usage["per_role"]["orchestrator"]["model_calls"] == 2, "the planning call before the kill was not counted"
    assert (await on_survivor.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"
    assert len(joined.of_type("report")) == 1 and end_of(joined) == ("done", "report_delivered")
    assert state["values"]["final_report"].startswith("# Sodium")
    deliverables = [m for m in state["values"]["messages"] if m["type"] == "ai" and m["content"].startswith("# Sodium")]
    assert len(deliverables) == 1, "the report was delivered more than once"
