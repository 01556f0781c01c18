"""Steering a run while it runs, through ``langgraph dev`` and the SDK: ``POST /steer`` and ``./run.sh steer``'s
code put the message on the run's channel; the run acknowledges it at once and the orchestrator reads it at
its next step, while the units already running finish and keep what they found; a drop stops the running unit
about its topic; a line typed on ``ask``'s terminal steers the run ``ask`` streams."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time

import anyio
import httpx
import pytest
from langgraph_sdk import get_client
from rich.console import Console

from deep_research_agent.cli.steer import steer
from deep_research_agent.protocol.events import STOP_REQUESTS_NAMESPACE
from testkit.agent_server import RunResult, stream_run
from testkit.scenarios import (
    brief_of,
    end_of,
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    scenario,
    submit,
)
from testkit.scripted_model import call, turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

REPORT = "# Sodium batteries\n\nSodium cells are cheaper than lithium cells and last for many charge cycles.\n"
STEER = "Also cover how many charge cycles sodium cells last"


def slow_researcher(summary: str) -> dict:
    """A research sub-agent whose search takes 2 s, long enough to steer the run while it runs."""
    return researcher(
        turn(tool_calls=[call("web_search", query="sodium battery")], delay_s=2.0),
        turn(content=findings_json(summary)),
    )


def task_briefs(run: RunResult) -> list[str]:
    return [
        tool_call["args"]["description"]
        for message in run.values["messages"]
        if message["type"] == "ai"
        for tool_call in message.get("tool_calls") or ()
        if tool_call["name"] == "task"
    ]


async def steer_mid_run(
    agent_server, scripted, send, *, question: str = "How good are sodium batteries?", units_running: int = 1
) -> tuple[RunResult, float]:
    """Stream a run and, once ``units_running`` sub-agents have called their model, ``send(thread_id)`` a
    steering message; returns the run and the ``time.monotonic()`` the message was sent at."""
    client = get_client(url=agent_server.url)
    thread_id = (await client.threads.create())["thread_id"]
    outcome: dict = {}

    async def research() -> None:
        outcome["run"] = await stream_run(client, question, thread_id=thread_id, timeout=90)

    async with anyio.create_task_group() as group:
        group.start_soon(research)
        with anyio.fail_after(30):
            while len(requests_of(scripted, "research-subagent")) < units_running:
                await anyio.sleep(0.05)
        outcome["sent"] = time.monotonic()
        await send(thread_id)
    return outcome["run"], outcome["sent"]


def acknowledged_after(run: RunResult, sent: float) -> float:
    """Seconds from sending the steering message to its ``steer_received`` status reaching this client."""
    [arrived] = [
        at
        for (name, data), at in zip(run.parts, run.arrived, strict=True)
        if name.split("|")[0] == "custom" and data.get("state") == "steer_received"
    ]
    return arrived - sent


async def test_a_steering_message_is_acknowledged_and_the_orchestrator_follows_it_keeping_the_unit_done_before(
    agent_server, scripted, web
):
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find sodium battery prices"),
                turn(tool_calls=[call("task", description=STEER, subagent_type="research-subagent")]),
                submit(REPORT),
            ),
            slow_researcher("Sodium cells are cheaper than lithium cells."),
        )
    )

    async def send(thread_id: str) -> None:
        async with httpx.AsyncClient(base_url=agent_server.url, timeout=10) as http:
            answer = await http.post(f"/steer/{thread_id}", json={"message": STEER})
        assert answer.status_code == 202, answer.text
        assert answer.json()["thread_id"] == thread_id

    run, sent = await steer_mid_run(agent_server, scripted, send)

    assert end_of(run) == ("done", "report_delivered")
    [ack] = run.statuses("steer_received")
    assert ack["message"] == STEER, "the feed shows the message as the user typed it"
    assert acknowledged_after(run, sent) < 2.0, "the steering message was not acknowledged within 2 s"
    first_call, next_call = (r["body"]["messages"] for r in requests_of(scripted, "orchestrator")[:2])
    assert STEER not in " ".join(message_text(m) for m in first_call)
    assert f'1. "{STEER}"' in message_text(next_call[-1]), "the orchestrator's next call did not carry the steering"
    assert task_briefs(run) == ["Find sodium battery prices", STEER], "the units dispatched"
    findings = [f["summary"] for f in run.of_type("subagent_findings")]
    assert findings[0] == "Sodium cells are cheaper than lithium cells.", "the unit done before the steer was lost"
    assert len(findings) == 2
    assert [m["content"] for m in run.values["messages"] if m["type"] == "human"] == [
        "How good are sodium batteries?"
    ], "the steering message entered the thread as a new user turn"
    assert run.of_type("report")[0]["markdown"].startswith("# Sodium batteries")
    left = await get_client(url=agent_server.url).store.search_items(list(STOP_REQUESTS_NAMESPACE))
    assert left == {"items": []}, "the served steering message was left in the store"


async def test_steering_through_a_tls_terminating_proxy_is_accepted(agent_server, scripted, web):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find sodium battery prices"), submit(REPORT)),
            slow_researcher("Sodium cells are cheaper than lithium cells."),
        )
    )
    answers: list[httpx.Response] = []

    async def send(thread_id: str) -> None:
        async with httpx.AsyncClient(base_url=agent_server.url, timeout=10) as http:
            answers.append(
                await http.post(f"/steer/{thread_id}", json={"message": STEER}, headers={"X-Forwarded-Proto": "https"})
            )

    run, _ = await steer_mid_run(agent_server, scripted, send)

    [answer] = answers
    assert answer.status_code == 202, answer.text
    assert answer.json() == {"thread_id": run.thread_id, "run_id": run.run_id}
    assert [ack["message"] for ack in run.statuses("steer_received")] == [STEER]


async def test_finish_now_from_the_steer_command_wraps_up_and_delivers_what_was_found(agent_server, scripted, web):
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find sodium battery prices"),
                turn(tool_calls=[call("task", description="Find cycle life", subagent_type="research-subagent")]),
                submit(REPORT),
            ),
            slow_researcher("Sodium cells are cheaper than lithium cells."),
        )
    )
    console = Console(record=True, width=200)

    async def send(thread_id: str) -> None:
        assert await steer(agent_server.url, thread_id, "finish now", console) == 0

    run, _ = await steer_mid_run(agent_server, scripted, send)

    assert "Steering sent to run" in console.export_text()
    assert end_of(run) == ("done", "report_delivered")
    assert [s["state"] for s in run.statuses() if s["state"] in ("steer_received", "stop_requested")] == [
        "steer_received",
        "stop_requested",
    ]
    assert run.statuses("stop_requested")[0]["reason"] == "wrap_up"
    assert [f["summary"] for f in run.of_type("subagent_findings")] == ["Sodium cells are cheaper than lithium cells."]
    assert task_briefs(run)[0] == "Find sodium battery prices"
    [report] = run.of_type("report")
    assert report["partial"] is False and report["markdown"].startswith("# Sodium batteries")
    orchestrator_sent = " ".join(message_text(m) for m in requests_of(scripted, "orchestrator")[-1]["body"]["messages"])
    assert "WRAP UP NOW: the user asked this research run to finish now" in orchestrator_sent


async def test_steering_a_thread_with_no_run_in_progress_or_without_a_message_is_refused(agent_server):
    thread_id = (await get_client(url=agent_server.url).threads.create())["thread_id"]
    async with httpx.AsyncClient(base_url=agent_server.url, timeout=10) as http:
        idle = await http.post(f"/steer/{thread_id}", json={"message": "also cover X"})
        empty = await http.post(f"/steer/{thread_id}", json={"message": "   "})
        garbled = await http.post(f"/steer/{thread_id}", content=b"not json")
    assert idle.status_code == 404 and "no run in progress" in idle.json()["detail"]
    assert empty.status_code == 422 and garbled.status_code == 422
    assert "message" in empty.json()["detail"]


NORWAY = "Find 2025 kelp farm output in Norway"
SCOTLAND = "Find 2025 kelp farm output in Scotland"
PARTIAL = "Partial: the first survey counts 40 farms."
COMPLETE = "Complete: Norway's farms landed 2,000 tonnes in 2025."


async def test_a_drop_stops_the_running_unit_about_its_topic_which_hands_over_what_it_found_while_the_other_finishes(
    agent_server, scripted, web
):
    report = "# Kelp farms\n\nNorway's kelp farms grew; Scotland was left out at the user's request.\n"
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate(NORWAY, SCOTLAND), submit(report)),
            researcher(
                # Both units note a partial finding as they search; the model takes 2 s to answer, time to steer.
                turn(content=findings_json(PARTIAL), tool_calls=[call("web_search", query="kelp farms")], delay_s=2.0),
                turn(content=findings_json(COMPLETE)),
            ),
        )
    )

    async def send(thread_id: str) -> None:
        async with httpx.AsyncClient(base_url=agent_server.url, timeout=10) as http:
            answer = await http.post(f"/steer/{thread_id}", json={"message": "Drop Scotland, please"})
        assert answer.status_code == 202, answer.text

    run, _ = await steer_mid_run(agent_server, scripted, send, question="How much kelp do farms land?", units_running=2)

    assert end_of(run) == ("done", "report_delivered"), run.end_statuses[0]["detail"]
    unit_ids = {s["task_id"]: brief for s, brief in zip(run.statuses("subagent_start"), task_briefs(run), strict=True)}
    [scotland_id] = [task_id for task_id, brief in unit_ids.items() if brief == SCOTLAND]
    [ack] = run.statuses("steer_received")
    assert ack["dropped_units"] == [scotland_id], "the events do not show which unit the message dropped"
    assert SCOTLAND in ack["detail"]
    asked = [brief_of(r) for r in requests_of(scripted, "research-subagent")]
    assert asked.count(SCOTLAND) == 1, "the dropped unit went on to its next model call"
    assert asked.count(NORWAY) == 2, "the unit not about the dropped topic did not finish"
    handed = {f["task_id"]: f for f in run.of_type("subagent_findings")}
    assert handed[scotland_id]["summary"] == PARTIAL and handed[scotland_id]["halted"] == "user"
    assert any('steering message "Drop Scotland, please"' in gap for gap in handed[scotland_id]["gaps"])
    [norway_id] = set(unit_ids) - {scotland_id}
    assert handed[norway_id]["summary"] == COMPLETE and handed[norway_id].get("halted") is None
    next_call = " ".join(message_text(m) for m in requests_of(scripted, "orchestrator")[1]["body"]["messages"])
    assert '1. "Drop Scotland, please"' in next_call and "which dropped this unit" in next_call
    assert run.values["findings"][norway_id]["summary"] == COMPLETE, "the finished unit's findings were lost"
    assert run.of_type("report")[0]["markdown"].startswith("# Kelp farms")


def ask_command(url: str) -> list[str]:
    return [sys.executable, "-m", "deep_research_agent.cli", "ask", "--url", url, "How good are sodium batteries?"]


ASK_ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}


def steered_scenario() -> dict:
    return scenario(
        orchestrator(
            plan_and_delegate("Find sodium battery prices"),
            turn(tool_calls=[call("task", description=STEER, subagent_type="research-subagent")]),
            submit(REPORT),
        ),
        slow_researcher("Sodium cells are cheaper than lithium cells."),
    )


def test_a_line_typed_on_asks_terminal_steers_the_run_and_the_ack_shows_in_its_stream(agent_server, scripted, web):
    """``ask`` on a real pseudo-terminal (its stdin a pty, as a user's shell gives it), against ``langgraph dev``."""
    scripted.set_scenario(steered_scenario())
    terminal, its_end = pty.openpty()
    try:
        with subprocess.Popen(
            ask_command(agent_server.url), stdin=its_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=ASK_ENV,
        ) as ask:  # fmt: skip
            os.close(its_end)
            deadline = time.monotonic() + 60
            while not requests_of(scripted, "research-subagent") and time.monotonic() < deadline:
                time.sleep(0.05)
            os.write(terminal, f"{STEER}\n".encode())
            out, err = ask.communicate(timeout=120)
    finally:
        os.close(terminal)

    assert ask.returncode == 0, out + err
    assert "Type a message and press Enter to steer this run" in out
    assert f"Steering taken: \u201c{STEER}\u201d" in out, "the ack did not show in the stream"
    steered = " ".join(message_text(m) for m in requests_of(scripted, "orchestrator")[1]["body"]["messages"])
    assert f'1. "{STEER}"' in steered, "the typed line did not reach the orchestrator's next step"
    assert "Sodium batteries" in out


def test_asks_stdin_that_is_no_terminal_is_never_read_as_steering(agent_server, scripted, web):
    scripted.set_scenario(steered_scenario())

    done = subprocess.run(
        ask_command(agent_server.url), input=f"{STEER}\n", capture_output=True, text=True, timeout=120, env=ASK_ENV
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Steering taken" not in done.stdout and "press Enter to steer" not in done.stdout
    orchestrator_read = " ".join(
        message_text(m) for r in requests_of(scripted, "orchestrator") for m in r["body"]["messages"]
    )
    assert "STEERING FROM THE USER" not in orchestrator_read
