"""The evaluation harness's parts without a server: suites, per-question scores, the judge's answers, the
paired test and the cassette's keys. End to end: ``tests/e2e/test_evaluation.py``."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from deep_research_agent.domain.claims import ClaimRecord, summarise_claims
from deep_research_agent.domain.errors import ToolFailure
from deep_research_agent.evaluation.__main__ import gate_failures
from deep_research_agent.evaluation.cassette import Cassette, CassetteServer, request_key, request_shape
from deep_research_agent.evaluation.compare import compare, paired_permutation_p
from deep_research_agent.evaluation.judge import JudgeError, JudgeSettings, fact_batches, race_scores
from deep_research_agent.evaluation.metrics import fabricated, measure
from deep_research_agent.evaluation.scorecard import QuestionResult, Scorecard, bar_chart, render_markdown
from deep_research_agent.evaluation.suite import SuiteError, load_suite, parse_suite, shipped_suites
from deep_research_agent.tools.fetch import download_via
from testkit.web import ARTICLES, WebStandIn, closed_port

URL = "https://example.org/pharos"


def test_the_shipped_starter_suite_has_twenty_questions_across_domains() -> None:
    suite = load_suite("starter")
    assert "starter" in shipped_suites() and len(suite.questions) == 20 and not suite.problems
    assert len({q.topic for q in suite.questions}) >= 10 and {q.language for q in suite.questions} == {"en", "fr"}
    assert all(q.facts for q in suite.questions)


def test_deep_research_bench_query_lines_are_read_as_they_are() -> None:
    line = {"id": 51, "topic": "Finance & Business", "language": "zh", "prompt": "分析一下..."}
    suite = parse_suite(json.dumps(line, ensure_ascii=False), name="drb", path="query.jsonl")
    (question,) = suite.questions
    assert (question.id, question.question, question.language, question.topic) == (
        "51",
        "分析一下...",
        "zh",
        "Finance & Business",
    )


def test_bad_lines_are_problems_and_a_suite_of_none_is_an_error() -> None:
    text = "\n".join(
        ['{"id": "a", "question": "Q?", "facts": "one fact"}', "not json", '{"id": "a", "question": "again"}']
    )
    suite = parse_suite(text, name="s", path="s.jsonl")
    assert [q.facts for q in suite.questions] == [["one fact"]]
    assert suite.problems == [
        "s line 2: not JSON (Expecting value); skipped.",
        "s line 3: id 'a' repeats an earlier line; skipped.",
    ]
    with pytest.raises(SuiteError, match="no usable question"):
        parse_suite("[]\n", name="s", path="s.jsonl")
    with pytest.raises(SuiteError, match="has no question nope"):
        load_suite("starter", only=["nope"])


def state(report: str, verdicts: list[str], evidence_urls: list[str]) -> dict:
    citations = [
        {
            "claim": f"Claim {n}: the tower stood over 100 metres.",
            "verdict": v,
            "indexes": [1],
            "sources": [{"index": 1, "url": URL, "sentence": "It stood over 100 metres tall."}],
        }
        for n, v in enumerate(verdicts)
    ]
    summary = summarise_claims([ClaimRecord.model_validate(c) for c in citations])
    return {
        "final_report": report,
        "claim_summary": summary.model_dump(mode="json"),
        "citations": citations,
        "evidence": [{"url": u, "kind": "page"} for u in evidence_urls],
        "sources": [{"url": u} for u in evidence_urls],
    }


def test_a_run_is_scored_from_its_state_and_events() -> None:
    from deep_research_agent.evaluation.suite import Question

    question = Question(id="q", question="How tall?", facts=["over 100 metres", "137 metres"])
    events = [
        {"type": "usage", "model_calls": 5, "tool_calls": 3, "input_tokens": 90, "output_tokens": 10,
         "total_tokens": 100, "cost_usd": 0.01},
        {"type": "status", "state": "done", "reason": "report_delivered", "outcome": "partial"},
    ]  # fmt: skip
    values = state(f"The tower stood over 100 metres [1].\n\n[1] {URL}", ["supported", "unsupported_number"], [URL])
    result = measure(question, events, values, thread_id="t", wall_s=1.25)
    assert (result.end_state, result.end_reason, result.outcome) == ("done", "report_delivered", "partial")
    assert (result.claims, result.supported, result.citation_accuracy) == (2, 1, 0.5)
    assert result.coverage == "2 of 2 claims checked; 1 supported, 1 marked [unverified] (citation accuracy 50%)"
    assert result.flagged_by_kind == {"unsupported_number": 1} and result.effective_citations == 1
    assert (result.sources_read, result.model_calls, result.cost_usd) == (1, 5, 0.01)
    assert [(f.in_report, f.supported) for f in result.facts] == [(True, True), (False, False)]
    assert result.fact_recall == 0.5 and result.fabricated_citations == []


def test_a_cited_url_the_run_never_retrieved_is_fabricated() -> None:
    values = state(f"See [1] and https://invented.example/x.\n\n[1] {URL}", ["supported"], [URL])
    assert fabricated(values) == ["https://invented.example/x"]


def test_no_end_status_is_a_failed_question() -> None:
    from deep_research_agent.evaluation.suite import Question

    result = measure(Question(id="q", question="Q?"), [], {}, thread_id="t", wall_s=0)
    assert not result.ok and result.error == "the run ended without an end status"


def test_race_scores_are_shares_against_a_reference_and_tenths_without() -> None:
    reply = json.dumps({"report": dict.fromkeys(("comprehensiveness", "depth", "instruction_following", "readability"), 6),
                        "reference": dict.fromkeys(("comprehensiveness", "depth", "instruction_following", "readability"), 2)})  # fmt: skip
    assert race_scores(f"<think>hm</think>```json\n{reply}\n```", with_reference=True).overall == pytest.approx(0.75)
    assert race_scores(reply, with_reference=False).overall == pytest.approx(0.6)
    with pytest.raises(JudgeError, match="depth score for the report is not a number from 0 to 10"):
        race_scores('{"report": {"comprehensiveness": 5, "depth": 11}}', with_reference=False)
    with pytest.raises(JudgeError, match="no JSON object"):
        race_scores("I cannot grade this.", with_reference=False)


def test_the_fact_judge_sees_each_claim_with_its_sources_sentences() -> None:
    (batch,) = fact_batches(state("", ["supported", "supported"], [URL])["citations"])
    assert batch.user.count("It stood over 100 metres tall.") == 1 and "C2 (cites [1]; its passages: P1)" in batch.user


def test_the_judge_is_configured_apart_from_the_researched_model() -> None:
    assert JudgeSettings.from_env({"OPENAI_API_KEY": "sk-x"}) is None
    settings = JudgeSettings.from_env({"DRA_EVAL_JUDGE_MODEL": "m", "DRA_EVAL_JUDGE_BASE_URL": "http://j/v1"})
    assert settings is not None and (settings.model, settings.base_url) == ("m", "http://j/v1")


def test_the_paired_permutation_test() -> None:
    assert paired_permutation_p([-1.0] * 6) == pytest.approx(2 / 64)
    assert paired_permutation_p([0.0, 0.0]) == 1.0 and paired_permutation_p([]) == 1.0
    assert paired_permutation_p([1.0, -1.0, 1.0, -1.0]) == 1.0
    assert paired_permutation_p([-0.5] * 30) < 0.001


def card(accuracies: list[float | None], fabricated_urls: tuple[str, ...] = ()) -> Scorecard:
    questions = [
        QuestionResult(id=f"q{n}", question="Q?", ok=True, claims=2, citation_accuracy=a,
                       fabricated_citations=list(fabricated_urls))
        for n, a in enumerate(accuracies)
    ]  # fmt: skip
    return Scorecard(suite="s", suite_path="s", suite_sha256="0", server="x", started_at="t", finished_at="t",
                     wall_s=0, complete=True, questions=questions).summarise()  # fmt: skip


def test_a_suite_run_fails_on_a_citation_drop_a_fabricated_citation_or_a_question_that_did_not_end() -> None:
    floor = [("citation_accuracy", 1.0)]
    assert gate_failures(card([1.0] * 3), floor) == []
    assert gate_failures(card([1.0, 0.5, 0.5, 1.0]), floor) == ["citation_accuracy mean 0.75 is under 1.0"]
    assert gate_failures(card([1.0] * 3, (URL,)), floor) == [
        "3 fabricated citation(s): a report cites a URL its run never retrieved"
    ]
    cut_short = card([1.0, None]).model_copy(update={"complete": False})
    assert gate_failures(cut_short, []) == ["not every question ran to an end status"]


def test_compare_gives_one_verdict_line() -> None:
    good, worse = card([1.0] * 6), card([0.5] * 6)
    assert compare(good, worse).verdict == "regression: citation_accuracy -0.5 (p=0.0312)"
    assert compare(worse, good).verdict.startswith("improvement: citation_accuracy +0.5")
    assert compare(good, card([1.0] * 6)).verdict == "no significant difference"
    assert compare(good, card([1.0] * 6, (URL,))).verdict.endswith("; 6 fabricated citation(s) in B")
    assert compare(card([1.0] * 3), card([0.5] * 3)).verdict == "no significant difference"


def test_fewer_claims_checked_is_a_regression_even_when_the_accuracy_over_them_rises() -> None:
    def checked(share: int, accuracy: float) -> Scorecard:
        questions = [
            QuestionResult(id=f"q{n}", question="Q?", ok=True, claims=4, checked=share, citation_accuracy=accuracy)
            for n in range(6)
        ]
        return Scorecard(suite="s", suite_path="s", suite_sha256="0", server="x", started_at="t", finished_at="t",
                         wall_s=0, complete=True, questions=questions).summarise()  # fmt: skip

    verdict = compare(checked(4, 0.75), checked(1, 1.0)).verdict
    assert verdict.startswith("regression: checked_share -0.75"), verdict


def test_a_scorecard_of_another_version_is_refused(tmp_path) -> None:
    path = tmp_path / "scorecard.json"
    path.write_text(json.dumps({**card([1.0]).model_dump(), "version": 99}))
    with pytest.raises(ValueError, match="scorecard version 99"):
        Scorecard.load(path)


def test_the_markdown_report_charts_each_metric_a_question_has() -> None:
    markdown = render_markdown(card([1.0, 0.5, None]))
    assert "### Citation accuracy (supported ÷ checked claims) (higher is better)" in markdown
    assert "Judge: RACE" not in markdown
    assert bar_chart([("a", 2.0), ("bb", 1.0), ("c", None)]) == [
        "a  │██████████████████████████████│ 2",
        "bb │███████████████               │ 1",
        "c  │                              │ –",
    ]


def test_a_cassette_key_ignores_dates_uuids_and_credentials() -> None:
    one = {"messages": [{"role": "system", "content": "Today is 2026-12-01."}], "api_key": "tvly-1"}
    two = {"messages": [{"role": "system", "content": "Today is 2027-01-02."}], "api_key": "tvly-2"}
    assert request_key(one) == request_key(two)
    assert request_key(one) != request_key({"messages": [{"role": "system", "content": "Another prompt."}]})
    body = {"messages": [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A"}]}
    assert request_shape("model", "orchestrator", body).startswith("model:orchestrator:1:")


@pytest.mark.anyio
async def test_a_cassette_records_pages_through_the_fetch_guard_and_replays_them_with_the_web_gone(tmp_path) -> None:
    tape = tmp_path / "pages.cassette.json"
    unrecorded = "http://127.0.0.1:9/never-read"
    with WebStandIn() as pages:
        article, to_metadata = pages.url(ARTICLES["pharos-lighthouse"].path), pages.url("/redirect-to-metadata")
        private = f"http://127.0.0.1:{closed_port()}/private"
        with CassetteServer(
            tape, mode="record", model_upstream="http://unused", fetch_allow_hosts=(pages.allow_host,)
        ) as rec:
            live = [await download_via(rec.page_url, article) for _ in range(2)]
            refused = [await failure_of(download_via(rec.page_url, url)) for url in (to_metadata, private)]
    assert "stood over 100 metres tall" in live[0].body.decode() and live[0].content_type == "text/html"
    assert "redirected to a refused target" in refused[0] and "a loopback address" in refused[1]
    assert [e.kind for e in Cassette.load(tape).entries] == ["page"] * 4

    with CassetteServer(tape, mode="replay") as replay:
        again = [await download_via(replay.page_url, article) for _ in range(2)]
        assert [await failure_of(download_via(replay.page_url, url)) for url in (to_metadata, private)] == refused
        missing = [await failure_of(download_via(replay.page_url, url)) for url in (article, unrecorded)]
    assert again == live, "each recording of a page answers one request"
    assert missing == [
        f"the page source has no answer for {url}: cassette: nothing recorded for page:{url}"
        for url in (article, unrecorded)
    ]


async def failure_of(call: Any) -> str:
    with pytest.raises(ToolFailure) as raised:
        await call
    return raised.value.message


def test_a_client_connection_kept_alive_to_a_stopped_recorder_reaches_the_replay_on_its_port(tmp_path) -> None:
    """The agent server pools its connections: after recording, the replay on the same port must answer them."""
    tape = tmp_path / "pages.cassette.json"
    with httpx.Client() as client:
        with WebStandIn() as pages:
            article = pages.url(ARTICLES["pharos-lighthouse"].path)
            with CassetteServer(
                tape, mode="record", model_upstream="http://unused", fetch_allow_hosts=(pages.allow_host,)
            ) as recorder:
                port = recorder.server.server_address[1]
                recorded = client.post(recorder.page_url, json={"url": article})
        with CassetteServer(tape, mode="replay", port=port) as replay:
            answered = client.post(replay.page_url, json={"url": article})
            assert replay.misses == []
    assert (answered.status_code, answered.text) == (200, recorded.text)
