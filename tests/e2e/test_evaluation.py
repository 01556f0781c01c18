"""The evaluation harness end to end: ``python -m deep_research_agent.evaluation`` (``./run.sh eval``) runs a
suite through the session's ``langgraph dev`` with scripted models, the way a user runs it, and what it
writes is what these tests read: ``scorecard.json``, ``scorecard.md``, its progress lines and exit status.

The scripted suite scenario (``testkit/eval_scenarios.py``) answers every question alike: one unit reads
the web stand-in's Lighthouse of Alexandria page and the report makes two claims citing it. Run with
``web_fetch`` off, the same script reads nothing, which is the worse configuration ``compare`` must catch.
A second ``langgraph dev`` talks to the model and search stand-ins and reads its pages through a cassette
proxy, which records a suite and then replays it with the stand-ins out of the loop and the web stopped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deep_research_agent.evaluation.cassette import Cassette, CassetteServer
from deep_research_agent.evaluation.judge import FACT_ROLE, RACE_ROLE
from deep_research_agent.evaluation.scorecard import METRICS, Scorecard
from deep_research_agent.evaluation.suite import load_suite
from testkit.agent_server import AgentServer
from testkit.eval_scenarios import judge_agents, judge_reply, suite_scenario, verdicts
from testkit.ports import free_port
from testkit.scenarios import requests_of, scenario
from testkit.web import WebStandIn, closed_port
from tests.conftest import agent_env

pytestmark = [pytest.mark.e2e]

PROJECT = Path(__file__).resolve().parents[2]
SUBSET = "hist-01,tech-01,sci-01,med-01,econ-01,fr-01"
# Recording and replaying are the same for any number of questions; three keep the pair of runs short.
CASSETTE_SUBSET = "hist-01,tech-01,fr-01"
RUN_METRICS = [m.name for m in METRICS if not m.name.startswith("judge_")]


def run_eval(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DRA_EVAL_JUDGE")}
    return subprocess.run(
        [sys.executable, "-m", "deep_research_agent.evaluation", *args],
        cwd=PROJECT, env={**environ, **(env or {})}, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def card_of(out: Path) -> Scorecard:
    return Scorecard.load(out / "scorecard.json")


@pytest.fixture
def suite_scripted(scripted: Any, web: Any) -> Any:
    scripted.set_scenario(suite_scenario(web))
    return scripted


def test_the_shipped_suite_runs_and_writes_a_scorecard_with_every_metric(
    agent_server: AgentServer, suite_scripted: Any, tmp_path: Path
) -> None:
    out = tmp_path / "starter"
    done = run_eval("--suite", "starter", "--url", agent_server.url, "--out", str(out), "--concurrency", "5",
                    "--fail-under", "citation_accuracy=1.0")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    card = card_of(out)
    shipped = load_suite("starter")
    assert [q.id for q in card.questions] == [q.id for q in shipped.questions] and len(card.questions) == 20
    assert card.complete and not card.problems and card.config == {"clarify": False}
    progress = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(progress) == 20 and progress[-1].startswith("[20/20]")
    for metric in RUN_METRICS:
        assert card.summary[metric].n == 20, metric
    history = next(q for q in card.questions if q.id == "hist-01")
    assert (history.end_state, history.end_reason, history.outcome) == ("done", "report_delivered", "answered")
    assert (history.claims, history.supported, history.flagged, history.citation_accuracy) == (2, 2, 0, 1.0)
    assert history.effective_citations == 1 and history.fabricated_citations == []
    assert history.sources_read == 1 and history.sources_seen >= 1
    assert history.model_calls >= 4 and history.total_tokens > 0 and history.cost_usd > 0 and history.wall_s > 0
    assert [(f.fact, f.in_report, f.supported) for f in history.facts] == [("Ptolemy", True, True)]
    http = next(q for q in card.questions if q.id == "tech-01")
    assert [f.supported for f in http.facts] == [False, False] and http.fact_recall == 0.0
    markdown = (out / "scorecard.md").read_text()
    for metric in (m for m in METRICS if m.name in RUN_METRICS):
        assert f"### {metric.label}" in markdown
    assert re.search(r"^hist-01 +│█{30}│ 1$", markdown, re.MULTILINE), "the citation accuracy bar of hist-01"


def test_a_scripted_judges_scores_and_its_prompts_reach_the_scorecard(
    agent_server: AgentServer, scripted: Any, web: Any, model_server: Any, tmp_path: Path
) -> None:
    race = judge_reply(
        {"comprehensiveness": 6, "depth": 4, "instruction_following": 8, "readability": 10},
        reference={"comprehensiveness": 6, "depth": 6, "instruction_following": 8, "readability": 10},
    )
    base = suite_scenario(web)
    scripted.set_scenario(scenario(*base["agents"], *judge_agents(race, verdicts("supported", "not_supported"))))
    env = {"DRA_EVAL_JUDGE_MODEL": "judge-model", "DRA_EVAL_JUDGE_BASE_URL": model_server.base_url,
           "DRA_EVAL_JUDGE_API_KEY": "sk-judge-key-0123456789"}  # fmt: skip
    out = tmp_path / "judged"
    done = run_eval(
        "--suite", "starter", "--only", "hist-01,tech-01", "--url", agent_server.url, "--out", str(out), env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    card = card_of(out)
    assert card.judge is not None and card.judge.model == "judge-model" and card.judge.date
    assert [p.name for p in card.judge.prompts] == ["race", "fact"] and all(
        len(p.sha256) == 64 for p in card.judge.prompts
    )
    with_reference = next(q for q in card.questions if q.id == "hist-01").judge
    assert with_reference is not None and with_reference.race is not None and with_reference.race.against_reference
    assert with_reference.race.depth == pytest.approx(0.4) and with_reference.race.readability == 0.5
    assert (with_reference.fact_claims, with_reference.fact_supported, with_reference.fact_accuracy) == (2, 1, 0.5)
    absolute = next(q for q in card.questions if q.id == "tech-01").judge
    assert absolute is not None and absolute.race is not None and not absolute.race.against_reference
    assert absolute.race.comprehensiveness == pytest.approx(0.6)
    assert card.summary["judge_overall"].n == 2 and card.summary["judge_fact_accuracy"].mean == 0.5
    fact_request = requests_of(scripted, FACT_ROLE)[0]["body"]
    assert "stood over 100 metres tall" in json.dumps(fact_request["messages"])
    assert requests_of(scripted, RACE_ROLE) and "sk-judge-key" not in (out / "scorecard.json").read_text()


def test_compare_reports_the_regression_a_worse_configuration_causes(
    agent_server: AgentServer, suite_scripted: Any, tmp_path: Path
) -> None:
    good, worse = tmp_path / "good", tmp_path / "worse"
    assert run_eval("--suite", "starter", "--only", SUBSET, "--url", agent_server.url, "--out", str(good),
                    "--concurrency", "3").returncode == 0  # fmt: skip
    ran_worse = run_eval("--suite", "starter", "--only", SUBSET, "--url", agent_server.url, "--out", str(worse),
                         "--concurrency", "3", "--config", '{"web_fetch": false}', "--fail-under", "citation_accuracy=1")  # fmt: skip
    assert ran_worse.returncode == 1 and "FAIL: citation_accuracy mean 0.0 is under 1.0" in ran_worse.stdout
    assert card_of(worse).config == {"web_fetch": False, "clarify": False}

    compared = run_eval("compare", str(good), str(worse), "--fail-on-regression")
    assert compared.returncode == 1, compared.stdout + compared.stderr
    verdict = compared.stdout.strip().splitlines()[-1]
    assert verdict.startswith("Verdict: regression: citation_accuracy -1 (p=0.0312)"), compared.stdout
    rows = {
        line.split()[0]: line for line in compared.stdout.splitlines() if line and line.split()[0] == "sources_read"
    }
    assert rows["sources_read"].endswith("worse")

    same = run_eval("compare", str(good), str(good), "--fail-on-regression")
    assert same.returncode == 0 and same.stdout.strip().endswith("Verdict: no significant difference")


@pytest.fixture(scope="module")
def cassette_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def cassette_agent(model_server: Any, web_server: Any, cassette_port: int) -> Iterator[AgentServer]:
    """A ``langgraph dev`` whose model and search endpoints and page source are a cassette proxy on ``cassette_port``."""
    env = {
        **agent_env(model_server, web_server),
        "OPENAI_BASE_URL": f"http://127.0.0.1:{cassette_port}/model",
        "TAVILY_API_BASE_URL": f"http://127.0.0.1:{cassette_port}/search",
        "DRA_FETCH_CASSETTE_URL": f"http://127.0.0.1:{cassette_port}/page",
    }
    server = AgentServer(env).start()
    try:
        yield server
    finally:
        server.stop()


def comparable(card: Scorecard) -> list[dict[str, Any]]:
    return [q.model_dump(exclude={"thread_id", "wall_s"}) for q in card.questions]


def test_a_recorded_cassette_replays_offline_with_its_pages_to_the_same_scorecard(
    cassette_agent: AgentServer, scripted: Any, model_server: Any, cassette_port: int, tmp_path: Path
) -> None:
    """Every answer cites a page the run read: its web is a stand-in of its own, stopped before the replay."""
    tape = tmp_path / "starter.cassette.json"
    recorded, replayed = tmp_path / "recorded", tmp_path / "replayed"
    args = ["--suite", "starter", "--only", CASSETTE_SUBSET, "--url", cassette_agent.url, "--concurrency", "3"]
    with WebStandIn() as pages:
        scripted.set_scenario(suite_scenario(pages))
        upstreams = {"model_upstream": model_server.base_url, "search_upstream": pages.base_url}
        with CassetteServer(
            tape, mode="record", port=cassette_port, fetch_allow_hosts=(pages.allow_host,), **upstreams
        ):
            assert run_eval(*args, "--out", str(recorded)).returncode == 0
    entries = Cassette.load(tape).entries
    assert Counter(e.kind for e in entries) == {"model": len(scripted.requests()), "search": 3, "page": 3}
    assert "sk-e2e-model-key" not in tape.read_text()
    assert all(q.sources_read == 1 and q.citation_accuracy == 1.0 for q in card_of(recorded).questions)

    scripted.reset()
    with CassetteServer(tape, mode="replay", port=cassette_port) as replay:
        done = run_eval(*args, "--out", str(replayed), "--fail-under", "citation_accuracy=1.0")
        assert replay.misses == []
    assert done.returncode == 0, done.stdout + done.stderr
    assert scripted.requests() == []
    assert comparable(card_of(replayed)) == comparable(card_of(recorded))
    assert card_of(replayed).summary["citation_accuracy"].mean == 1.0


def test_a_malformed_suite_line_is_reported_and_the_other_questions_run(
    agent_server: AgentServer, suite_scripted: Any, tmp_path: Path
) -> None:
    suite = tmp_path / "mixed.jsonl"
    lines = [
        json.dumps({"id": "ok-1", "question": "How tall was the Lighthouse of Alexandria?", "facts": ["100 metres"]}),
        '{"id": "broken", "question": ',
        json.dumps({"id": "no-question"}),
        json.dumps({"id": 7, "topic": "history", "language": "en", "prompt": "When was the Pharos built?"}),
    ]
    suite.write_text("\n".join(lines) + "\n")
    out = tmp_path / "mixed"
    done = run_eval("--suite", str(suite), "--url", agent_server.url, "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mixed line 2: not JSON" in done.stderr and "mixed line 3: not a question (check question)" in done.stderr
    card = card_of(out)
    assert [q.id for q in card.questions] == ["ok-1", "7"] and card.complete
    assert [p.split(":")[0] for p in card.problems] == ["mixed line 2", "mixed line 3"]
    assert card.questions[0].facts[0].supported


def test_an_unreachable_server_gives_a_clear_error_and_a_scorecard_of_failed_questions(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    out = tmp_path / "nowhere"
    done = run_eval("--suite", "starter", "--only", "hist-01,tech-01", "--url", url, "--out", str(out))
    assert done.returncode == 2 and f"ERROR: No agent server at {url}" in done.stderr
    card = card_of(out)
    assert not card.complete and [q.ok for q in card.questions] == [False, False]
    assert all("No agent server" in (q.error or "") for q in card.questions)
    assert "INCOMPLETE" in (out / "scorecard.md").read_text()


def test_a_failing_judge_leaves_the_runs_scores_and_says_why(
    agent_server: AgentServer, suite_scripted: Any, tmp_path: Path
) -> None:
    env = {"DRA_EVAL_JUDGE_MODEL": "judge-model", "DRA_EVAL_JUDGE_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"}
    out = tmp_path / "judge-down"
    done = run_eval("--suite", "starter", "--only", "hist-01", "--url", agent_server.url, "--out", str(out), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    question = card_of(out).questions[0]
    assert question.ok and question.citation_accuracy == 1.0
    assert question.judge is not None and question.judge.race is None
    assert "the judge's endpoint failed: OpenAIConnectionError: Connection error" in (question.judge.error or "")
    assert "PROBLEM: hist-01: the judge failed" in done.stdout and "judge failed" in done.stdout.splitlines()[1]


def test_a_judge_that_answers_no_scores_is_that_questions_judge_error(
    agent_server: AgentServer, scripted: Any, web: Any, model_server: Any, tmp_path: Path
) -> None:
    scripted.set_scenario(scenario(*suite_scenario(web)["agents"], *judge_agents("I would rather not grade.", "{}")))
    env = {"DRA_EVAL_JUDGE_MODEL": "judge-model", "DRA_EVAL_JUDGE_BASE_URL": model_server.base_url}
    out = tmp_path / "judge-garbage"
    done = run_eval("--suite", "starter", "--only", "hist-01", "--url", agent_server.url, "--out", str(out), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    card = card_of(out)
    assert card.complete and card.questions[0].citation_accuracy == 1.0
    assert card.questions[0].judge is not None
    assert card.questions[0].judge.error == "the judge answered no JSON object: 'I would rather not grade.'"
    assert card.summary["judge_overall"].n == 0


def test_an_unknown_suite_and_a_bad_config_are_refused_with_exit_2(agent_server: AgentServer, tmp_path: Path) -> None:
    missing = run_eval("--suite", "no-such-suite", "--url", agent_server.url, "--out", str(tmp_path / "x"))
    assert missing.returncode == 2 and "No suite 'no-such-suite'" in missing.stderr and "starter" in missing.stderr
    bad = run_eval("--suite", "starter", "--config", "[1]", "--url", agent_server.url, "--out", str(tmp_path / "y"))
    assert bad.returncode == 2 and "--config must be a JSON object" in bad.stderr
