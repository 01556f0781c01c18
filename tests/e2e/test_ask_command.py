"""``./run.sh ask`` against the real dev server: a person watching a run from a shell."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from testkit.scenarios import (
    direct_answerer,
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher_finds_then_hangs,
    researcher_reads,
    scenario,
    submit,
    triage,
)
from testkit.scripted_model import call, turn
from testkit.web import ARTICLES

pytestmark = pytest.mark.e2e

REPORT_TITLE = "Sodium-glass batteries"


def ask(url: str, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "ask", "--url", url, *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


def test_ask_streams_a_run_through_to_the_rendered_report_and_the_run_time(agent_server, scripted, web, tmp_path):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the energy density of sodium-glass batteries"),
                submit(f"# {REPORT_TITLE}\n\nThey reach 412 Wh/kg [1].\n\n## Sources\n[1] Halvorsen — {url}\n"),
            ),
            researcher_reads(url, query="sodium glass battery", finding="412 Wh/kg", quote="412 Wh/kg"),
        )
    )
    evidence_file = tmp_path / "out" / "evidence.json"

    done = ask(agent_server.url, "How dense are sodium-glass batteries?", "--evidence", str(evidence_file))

    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "sodium glass battery" in out and "research-subagent" in out
    assert REPORT_TITLE in out and "Run time" in out
    assert out.index(REPORT_TITLE) < out.rindex("Run time")
    first_user_message = [r for r in scripted.requests() if r["agent"] == "orchestrator"][0]["body"]["messages"][1]
    assert message_text(first_user_message) == "How dense are sodium-glass batteries?"
    assert "Claims against their sources: 1 of 1 claim checked; 1 supported (citation accuracy 100%)" in out
    audit = json.loads(evidence_file.read_text())
    assert audit["report"].startswith(f"# {REPORT_TITLE}")
    # Claim → source → the sentence of the source that holds it.
    [claim] = audit["claims"]
    assert (claim["claim"], claim["verdict"]) == ("They reach 412 Wh/kg [1].", "supported")
    [source] = claim["sources"]
    assert source["url"] == url and "reached an energy density of 412 Wh/kg in independent tests" in source["sentence"]
    assert [(c["url"], c["verified"]) for c in audit["cited_sources"]] == [(url, True)]
    assert any(e["url"] == url and "412 Wh/kg" in e["text"] for e in audit["evidence"])
    # The file carries the full texts the thread state leaves out, each matching its hash.
    assert all(
        hashlib.sha256(e["text"].encode()).hexdigest() == e["sha256"] and len(e["text"]) == e["chars"]
        for e in audit["evidence"]
    )


def test_ask_no_clarify_runs_without_request_clarification_and_sends_the_question_as_typed(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(tool_calls=[call("request_clarification", questions=["Which region?"])]),
                submit(f"# {REPORT_TITLE}\n\nAssumed global scope.\n\n## Sources\n"),
            )
        )
    )

    done = ask(agent_server.url, "--no-clarify", "Tell me about batteries")

    assert done.returncode == 0, done.stdout + done.stderr
    assert REPORT_TITLE in done.stdout
    bodies = [r["body"] for r in scripted.requests() if r["agent"] == "orchestrator"]
    assert len(bodies) == 2, "the run asked and waited instead of going on"
    assert all("request_clarification" not in {t["function"]["name"] for t in body["tools"]} for body in bodies)
    [user_message] = [m for m in bodies[-1]["messages"] if m["role"] == "user"]
    assert message_text(user_message) == "Tell me about batteries"


def test_ask_prints_a_direct_answer_like_a_report(agent_server, scripted):
    answer = "Hello! Ask me a research question and I will look it up."
    scripted.set_scenario(scenario(triage("SIMPLE"), direct_answerer(answer)))

    done = ask(agent_server.url, "hello")

    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Answered directly" in out and "Answer" in out
    assert answer in out and out.index(answer) < out.rindex("Run time")


def test_ask_with_no_server_fails_fast_with_a_message():
    done = ask("http://127.0.0.1:9", "Anything", timeout=20)

    assert done.returncode == 2
    assert "./run.sh" in done.stdout + done.stderr


def test_ctrl_c_wraps_up_then_stops_now_and_the_report_of_what_was_found_is_printed(agent_server, scripted, web):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density of sodium-glass batteries"), submit("# Never\n")),
            researcher_finds_then_hangs(url),
        )
    )
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    command = [sys.executable, "-m", "deep_research_agent.cli", "ask", "--url", agent_server.url, "How dense?"]
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as shell:
        deadline = time.monotonic() + 30
        while len(requests_of(scripted, "research-subagent")) < 3:
            assert shell.poll() is None and time.monotonic() < deadline, "the run never reached its slow model call"
            time.sleep(0.05)
        # The sub-agent waits on a 30 s model call: wrapping up lets it finish, stopping now cuts it.
        shell.send_signal(signal.SIGINT)
        time.sleep(1.0)
        shell.send_signal(signal.SIGINT)
        out, err = shell.communicate(timeout=20)

    assert shell.returncode == 0, out + err
    assert "Wrapping up:" in out and "Stopping now:" in out and "stopped_by_user" in out
    assert "412 Wh/kg" in out and "Run time" in out
    assert "Traceback" not in out + err
