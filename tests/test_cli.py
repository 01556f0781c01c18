"""The CLI client, module by module: cli.view (RunView rendering and decisions from synthetic events),
cli.ask (the session and Ctrl-C handling against a fake SDK client), cli.env (the settings helpers), and
the entry point as a subprocess (the no-server fast failure, doctor's secret hygiene). No agent server is
started."""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import httpx
import pytest
from langgraph_sdk.errors import NotFoundError
from rich.console import Console

import deep_research_agent.cli
from deep_research_agent.cli.ask import (
    CLARIFICATION_HEADER,
    NO_ANSWERS_REPLY,
    StopOnInterrupt,
    ask,
    format_clarification_reply,
)
from deep_research_agent.cli.env import default_url
from deep_research_agent.cli.view import RunView
from deep_research_agent.settings.environment import read_dotenv

ROOT = Path(__file__).resolve().parents[1]
TASK = "call_task_1"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make_view(clock: FakeClock | None = None) -> tuple[RunView, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False, color_system=None)
    return RunView(console, clock=clock or FakeClock()), out


def custom(event_type: str, *, sub: bool = False, **fields: Any) -> tuple[str, dict[str, Any]]:
    data = {"type": event_type, "role": "orchestrator", **fields}
    if sub:
        data.update(role="research-subagent", task_id=TASK)
    return ("custom|tools:6f1c" if sub else "custom"), data


def end_status(state: str = "done", **fields: Any) -> tuple[str, dict[str, Any]]:
    detail = (
        "Report delivered with 2 sources seen. Run time 1m 5s." if state == "done" else "Model failed. Run time 0m 9s."
    )
    return custom("status", state=state, reason="r", detail=detail, elapsed_s=65.0, elapsed="1m 5s", **fields)


def feed(view: RunView, parts: Iterable[tuple[str, Any]]) -> None:
    view.start_run()
    for event, data in parts:
        view.handle(event, data)


# --- cli.view: RunView -------------------------------------------------------------------------------


def test_search_results_print_query_and_count() -> None:
    view, out = make_view()
    feed(
        view,
        [
            custom("search_query", sub=True, id="s1", query="EU AI act timeline", source="tavily"),
            custom("search_results", sub=True, id="s1", query="EU AI act timeline", ok=True, count=5, results=[]),
            custom("search_results", id="s2", query="broken query", ok=False, count=0, error="HTTP 432"),
        ],
    )
    text = out.getvalue()
    assert "🔎" in text and "EU AI act timeline → 5 results" in text
    assert "broken query → failed: HTTP 432" in text
    assert view.searches == 2


def test_a_corpus_search_names_its_corpus() -> None:
    view, out = make_view()
    feed(
        view,
        [
            custom("search_query", sub=True, id="s1", query="work_mem default", source="corpus:pg15"),
            custom("search_results", sub=True, id="s1", query="work_mem default", ok=True, count=3, results=[]),
        ],
    )
    assert "work_mem default in pg15 → 3 results" in out.getvalue()


def test_search_query_updates_live_status_with_who_is_searching() -> None:
    view, _ = make_view()
    feed(
        view,
        [
            custom("status", state="subagent_start", sub=True, subagent="research-subagent", model="m/x"),
            custom("search_query", sub=True, id="s1", query="solar prices", source="tavily"),
        ],
    )
    status = view.status_text().plain
    assert "research-subagent #1 searching “solar prices”" in status
    assert "1 sub-agent running" in status


def test_each_source_is_shown_once() -> None:
    view, out = make_view()
    source = custom("source", title="IEA report", url="https://iea.org/r", domain="iea.org")
    feed(view, [source, source, custom("source", title="Other", url="https://b.com/x", domain="b.com")])
    text = out.getvalue()
    assert text.count("IEA report — iea.org") == 1
    assert "Other — b.com" in text
    assert len(view.sources) == 2


def test_markup_in_stream_text_is_printed_literally() -> None:
    view, out = make_view()
    feed(view, [custom("source", title="[bold]Title[/bold]", url="https://x.org", domain="x.org")])
    assert "[bold]Title[/bold] — x.org" in out.getvalue()


def test_subagent_lines_show_model_and_tokens() -> None:
    view, out = make_view()
    feed(
        view,
        [
            custom("status", state="subagent_start", sub=True, subagent="research-subagent", model="deepseek/v4"),
            custom(
                "status",
                state="subagent_done",
                sub=True,
                subagent="research-subagent",
                model="deepseek/v4",
                model_calls=7,
                total_tokens=12345,
                tool_calls=9,
            ),
            custom(
                "subagent_findings",
                unit="Market size",
                summary="s",
                findings=[{"finding": "f", "source": "u"}] * 3,
                gaps=["g"],
            ),
        ],
    )
    text = out.getvalue()
    assert "research-subagent #1 started · deepseek/v4" in text
    assert "research-subagent #1 done · deepseek/v4 · 7 model calls · 12,345 tokens · 9 tool calls" in text
    assert "Market size — 3 findings, 1 gap" in text
    assert not view.active


def test_subagent_failure_and_warnings_are_printed() -> None:
    view, out = make_view()
    feed(
        view,
        [
            custom("status", state="subagent_start", sub=True, subagent="research-subagent"),
            custom("status", state="subagent_failed", sub=True, subagent="research-subagent", detail="Boom"),
            custom("status", state="warning", reason="config", detail="Unknown model tier 'x'"),
        ],
    )
    text = out.getvalue()
    assert "✖ research-subagent #1 failed: Boom" in text
    assert "! Unknown model tier 'x'" in text


def test_guards_that_warn_and_guards_that_stop_are_printed_apart_with_their_detail() -> None:
    view, out = make_view()
    feed(
        view,
        [
            custom("status", state="subagent_start", sub=True, subagent="research-subagent"),
            custom("status", state="budget_soft", reason="tool_calls", detail="75% of the tool-call budget is used."),
            custom("status", state="loop_detected", sub=True, repeats=3, detail="web_search repeated"),
            custom("status", state="rate_limited", wait_s=2.0, detail="The endpoint answered 429; retrying in 2.0 s."),
            custom("status", state="loop_halt", sub=True, repeats=6, detail="web_search repeated 6 times; stopped."),
            custom("status", state="budget_halt", reason="tool_calls", detail="The tool-call budget is used up."),
        ],
    )
    lines = out.getvalue().splitlines()
    assert "! 75% of the tool-call budget is used." in lines
    assert "! research-subagent #1: web_search repeated" in lines
    assert "! The endpoint answered 429; retrying in 2.0 s." in lines
    assert "■ research-subagent #1: web_search repeated 6 times; stopped." in lines
    assert "■ The tool-call budget is used up." in lines


def test_model_steps_and_triage_move_the_live_line_without_printing() -> None:
    view, out = make_view()
    feed(view, [custom("status", state="triage", detail="simple", reason="classified")])
    assert view.activity == "answering directly …"

    feed(
        view,
        [
            custom("status", state="subagent_start", sub=True, subagent="research-subagent"),
            custom("status", state="model_call", sub=True, step=3, after=["web_search", "web_fetch", "web_search"]),
        ],
    )

    assert view.activity == "research-subagent #1 thinking (step 3) · reading web_search, web_fetch …"
    assert "model_call" not in out.getvalue() and "triage" not in out.getvalue()


def test_a_compaction_is_printed_with_its_size_before_and_after() -> None:
    view, out = make_view()
    feed(
        view,
        [
            custom("status", state="compacting", tokens_estimate=9_120),
            custom("status", state="compacted", tokens_estimate=2_050, messages_summarized=14, messages_kept=3),
        ],
    )

    assert "⇣ context compacted: 14 messages summarized, ~9,120 → ~2,050 tokens" in out.getvalue().splitlines()


def test_the_report_is_followed_by_its_claims_coverage_as_the_server_states_it() -> None:
    view, out = make_view()
    flagged = {"claims": 5, "checked": 5, "supported": 3, "flagged": 2}
    flagged["coverage"] = "5 of 5 claims checked; 3 supported, 2 marked [unverified] (citation accuracy 60%)"
    partly = {"claims": 12, "checked": 9, "supported": 9, "flagged": 0}
    partly["coverage"] = "9 of 12 claims checked; 9 supported (citation accuracy 100%)"
    feed(
        view,
        [
            custom("report", markdown="# Findings\n\nX [1].\n", claims=flagged),
            custom("report", markdown="# Again\n", claims=partly),
            custom(
                "report", markdown="# None\n", claims={"claims": 2, "checked": 0, "coverage": "0 of 2 claims checked"}
            ),
        ],
    )
    lines = out.getvalue().splitlines()
    assert any(
        f"! Claims against their sources: {flagged['coverage']} (see the evidence file" in line for line in lines
    )
    assert any(f"! Claims against their sources: {partly['coverage']}" in line for line in lines), (
        "a report with unchecked claims is not shown as all checked"
    )
    assert any("! Claims against their sources: 0 of 2 claims checked" in line for line in lines)
    assert not any("✓" in line for line in lines)


def test_report_is_rendered_as_markdown() -> None:
    view, out = make_view()
    feed(view, [custom("report", markdown="# Findings\n\n- **bold point**\n", partial=True)])
    text = out.getvalue()
    assert "Findings" in text and "bold point" in text
    assert "# Findings" not in text and "**" not in text  # rendered, not echoed raw
    assert "Partial report" in text
    assert view.report is not None


def test_the_reports_sources_print_as_a_list_each_with_its_url() -> None:
    view, out = make_view()
    markdown = (
        "# Findings\n\nGlass cells hold 412 Wh/kg [1], twice the old figure [2].\n\n"
        "## Sources\n[1] Halvorsen cell — https://lab.example/cell\n[2] Survey 2025 — https://survey.example/s\n"
    )

    feed(view, [custom("report", markdown=markdown)])

    lines = [line.strip() for line in out.getvalue().splitlines()]
    assert "• [1] Halvorsen cell (https://lab.example/cell)" in lines
    assert "• [2] Survey 2025 (https://survey.example/s)" in lines


@pytest.mark.parametrize(("state", "code"), [("done", 0), ("error", 1)])
def test_end_status_decides_exit_code_and_detail_is_printed(state: str, code: int) -> None:
    view, out = make_view()
    feed(view, [end_status(state)])
    view.finish()
    text = out.getvalue()
    assert view.exit_code == code
    assert "Run time 1m 5s." in text or "Run time 0m 9s." in text
    assert text.rstrip().endswith("⏱ Run time 1m 5s")


def ai_message(content: str, **fields: Any) -> tuple[str, list[dict[str, Any]]]:
    return "messages/complete", [{"type": "ai", "id": "m1", "content": content, **fields}]


def test_a_run_without_a_report_prints_its_answer_like_a_report_before_the_run_time() -> None:
    view, out = make_view()
    feed(
        view,
        [
            ai_message("", tool_calls=[{"name": "write_todos", "args": {}, "id": "c1"}]),
            ("messages/complete|tools:6f1c", [{"type": "ai", "id": "m0", "content": "a sub-agent's own words"}]),
            ai_message("Hello! **Ask me** a research question."),
            end_status("done"),
        ],
    )
    view.finish()
    text = out.getvalue()
    assert "Answer" in text and "Hello! Ask me a research question." in text, "rendered as Markdown"
    assert "a sub-agent's own words" not in text
    assert text.index("Hello!") < text.index("⏱ Run time")


def test_a_delivered_report_or_clarification_is_not_printed_again_as_an_answer() -> None:
    view, out = make_view()
    feed(view, [custom("report", markdown="# Findings\n"), ai_message("# Findings\n"), end_status("done")])
    feed(view, [custom("clarification", questions=["Which region?"]), ai_message("**1.** Which region?")])
    view.finish()
    text = out.getvalue()
    assert text.count("Findings") == 1 and text.count("Which region?") == 1 and "Answer" not in text


def test_a_run_that_ends_in_error_without_an_answer_prints_the_error_detail_as_its_answer() -> None:
    view, out = make_view()
    feed(view, [end_status("error")])
    view.finish()
    text = out.getvalue()
    assert text.count("Model failed. Run time 0m 9s.") == 2, "on the end line, then framed like a report"
    assert "Error" in text


def test_missing_end_status_is_a_failure_and_run_time_falls_back_to_wall_clock() -> None:
    clock = FakeClock()
    view, out = make_view(clock)
    feed(view, [custom("run_start", protocol_version=1, started_at="2026-01-01T00:00:00Z")])
    clock.now += 125
    view.finish()
    text = out.getvalue()
    assert view.exit_code == 1
    assert "without an end status" in text
    assert "⏱ Run time 2m 5s" in text


def test_stream_error_event_fails_the_run() -> None:
    view, out = make_view()
    feed(view, [end_status("done"), ("error", {"error": "RuntimeError", "message": "worker died"})])
    assert view.exit_code == 1
    assert "worker died" in out.getvalue()


def test_unknown_protocol_version_warns() -> None:
    view, out = make_view()
    feed(view, [custom("run_start", protocol_version=2, started_at="x")])
    assert "protocol v2" in out.getvalue()


def test_plan_items_print_once_and_on_completion() -> None:
    view, out = make_view()
    todo = {"content": "Research unit A", "status": "pending"}
    feed(
        view,
        [
            ("updates", {"tools": {"todos": [todo]}}),
            ("updates", {"tools": {"todos": [todo]}}),
            ("updates", {"tools": {"todos": [{**todo, "status": "completed"}]}}),
        ],
    )
    text = out.getvalue()
    assert text.count("Research unit A") == 2
    assert "☐ Research unit A" in text and "☑ Research unit A" in text


def test_message_chunks_name_the_current_activity() -> None:
    view, _ = make_view()
    feed(
        view,
        [
            ("messages/metadata", {"m1": {"metadata": {"lc_agent_name": "orchestrator"}}}),
            (
                "messages/partial",
                [{"id": "m1", "type": "ai", "content": "", "tool_calls": [{"name": "task", "args": {}}]}],
            ),
        ],
    )
    assert "orchestrator calling task" in view.status_text().plain
    feed(
        view,
        [
            ("messages/metadata|tools:1", {"m2": {"metadata": {"lc_agent_name": "research-subagent"}}}),
            ("messages/complete|tools:1", [{"id": "m2", "type": "tool", "content": "results"}]),
        ],
    )
    assert "research-subagent thinking" in view.status_text().plain


def test_a_stop_asked_by_another_client_is_printed_once() -> None:
    view, out = make_view()
    feed(
        view,
        [
            custom(
                "status", state="stop_requested", reason="now", detail="Stopping: every agent hands back what it has."
            )
        ],
    )

    assert out.getvalue().splitlines() == ["■ Stopping: every agent hands back what it has."]


def test_a_stop_asked_here_is_not_announced_twice() -> None:
    view, out = make_view()
    view.start_run()
    view.stopping("wrap_up")
    view.handle(
        *custom("status", state="stop_requested", reason="wrap_up", detail="Wrapping up: every agent delivers.")
    )

    assert [line for line in out.getvalue().splitlines() if line.startswith("■")] == [
        "■ Wrapping up: the agents deliver what they found and the report is written. Ctrl-C again to stop now."
    ]


# --- cli.ask: clarification and the session ----------------------------------------------------------


def test_clarification_reply_format() -> None:
    reply = format_clarification_reply(["Which region?", "Which  years?"], ["EU", " "])
    assert reply == (
        f"{CLARIFICATION_HEADER}\n1. Q: Which region? A: EU\n2. Q: Which years? A: (no answer; use your assumption)"
    )
    assert CLARIFICATION_HEADER == "Answers to your clarifying questions:"


class FakeClient:
    """Just enough of the async SDK client: each ``runs.stream`` call plays the next script."""

    def __init__(
        self,
        scripts: list[list[tuple[str, Any]] | Exception],
        values: dict[str, Any] | None = None,
        stored: dict[str, Any] | None = None,
    ) -> None:
        self.scripts = scripts
        self.sent: list[dict[str, Any]] = []
        self.values = values or {}
        self.stored = stored or {}
        self.threads = SimpleNamespace(create=self._create, get_state=self._get_state)
        self.runs = SimpleNamespace(stream=self._stream)
        self.http = SimpleNamespace(get=self._http_get)

    async def _http_get(self, path: str) -> Any:
        """The server's custom routes: ``stored`` maps a path to its answer; any other path is a 404."""
        if path not in self.stored:
            response = httpx.Response(404, request=httpx.Request("GET", f"http://server{path}"))
            raise NotFoundError("No evidence is stored.", response=response, body=None)
        return self.stored[path]

    async def _create(self) -> dict[str, Any]:
        return {"thread_id": "t1"}

    async def _get_state(self, thread_id: str) -> dict[str, Any]:
        return {"values": self.values}

    def _stream(self, thread_id: str, assistant_id: str, **kwargs: Any) -> AsyncIterator[Any]:
        self.sent.append({"thread_id": thread_id, "assistant_id": assistant_id, **kwargs})
        script = self.scripts.pop(0)

        async def parts() -> AsyncIterator[Any]:
            if isinstance(script, Exception):
                raise script
            for event, data in script:
                yield SimpleNamespace(event=event, data=data)

        return parts()


def run_ask(client: FakeClient, **kwargs: Any) -> tuple[int, str]:
    view, out = make_view()
    kwargs.setdefault("interactive", False)
    kwargs.setdefault("configurable", {})

    async def go() -> int:
        return await ask(client, view, "What is X?", **kwargs)

    return anyio.run(go), out.getvalue()


def message_of(call: dict[str, Any]) -> str:
    return call["input"]["messages"][0]["content"]


def test_interactive_clarification_sends_one_formatted_follow_up() -> None:
    client = FakeClient(
        [
            [custom("clarification", questions=["Which region?", "Which years?"]), end_status("done")],
            [custom("report", markdown="# R"), end_status("done")],
        ]
    )
    answers = iter(["EU", "2020-2025"])
    code, text = run_ask(client, interactive=True, read_answer=lambda prompt: next(answers))
    assert code == 0
    assert [c["thread_id"] for c in client.sent] == ["t1", "t1"]
    assert message_of(client.sent[0]) == "What is X?"
    assert message_of(client.sent[1]) == (
        "Answers to your clarifying questions:\n1. Q: Which region? A: EU\n2. Q: Which years? A: 2020-2025"
    )
    call = client.sent[0]
    assert call["assistant_id"] == "deep_research_agent"
    assert call["stream_mode"] == ["messages", "updates", "custom"] and call["stream_subgraphs"] is True
    assert "Which region?" in text


def test_non_interactive_sends_the_question_as_typed_with_clarify_off() -> None:
    client = FakeClient([[custom("report", markdown="# R"), end_status("done")]])
    code, _ = run_ask(client, configurable={"model_tier": "low"})
    assert message_of(client.sent[0]) == "What is X?"
    assert client.sent[0]["config"]["configurable"] == {"clarify": False, "model_tier": "low"}
    assert code == 0


def test_non_interactive_answers_a_clarification_once_when_the_config_turned_clarifying_on() -> None:
    clarify = [custom("clarification", questions=["Which region?"]), end_status("done")]
    client = FakeClient([clarify, clarify])
    code, _ = run_ask(client, configurable={"clarify": True})
    assert client.sent[0]["config"]["configurable"] == {"clarify": True}
    assert message_of(client.sent[0]) == "What is X?"
    assert message_of(client.sent[1]) == NO_ANSWERS_REPLY
    assert len(client.sent) == 2  # once: a second clarification gets no further reply
    assert code == 0


def test_stream_exception_exits_1_and_still_prints_run_time() -> None:
    client = FakeClient([RuntimeError("connection reset")])
    code, text = run_ask(client)
    assert code == 1
    assert "The stream failed: RuntimeError: connection reset" in text
    assert "⏱ Run time" in text.strip().splitlines()[-1]


def test_the_evidence_file_holds_the_report_its_claims_and_sources_from_state_and_the_texts_from_the_evidence_route(
    tmp_path: Path,
) -> None:
    claim = {
        "claim": "X is 4 m [1] [unverified].",
        "indexes": [1],
        "verdict": "unsupported_number",
        "tokens": ["4 m"],
        "detail": "4 m not in the text of [1]",
        "sources": [{"index": 1, "url": "u", "title": "U", "evidence_id": "ev1", "sentence": "X is 3 m."}],
    }
    cited = [
        {
            "index": 1,
            "url": "u",
            "title": "U",
            "evidence_id": "ev1",
            "verified": True,
            "reason": "page_retrieved",
            "detail": "",
        }
    ]
    values = {
        "final_report": "# R",
        "sources": [{"url": "u"}],
        "citations": [claim],
        "cited_sources": cited,
        "evidence": [{"id": "ev1", "chars": 4}],
        "messages": [],
    }
    stored = [{"run_id": "r1", "id": "ev1", "chars": 4, "text": "page"}]
    client = FakeClient([[end_status("done")]], values=values, stored={"/evidence/t1": stored})
    target = tmp_path / "out" / "evidence.json"
    code, text = run_ask(client, evidence=target)
    assert code == 0
    assert json.loads(target.read_text()) == {
        "question": "What is X?",
        "report": "# R",
        "sources": [{"url": "u"}],
        "claims": [claim],
        "cited_sources": cited,
        "evidence": stored,
    }
    assert str(target) in text.replace("\n", "")


def test_a_thread_with_no_stored_evidence_gets_an_empty_evidence_list(tmp_path: Path) -> None:
    client = FakeClient([[end_status("done")]], values={"final_report": "# R"})
    target = tmp_path / "evidence.json"
    code, _ = run_ask(client, evidence=target)
    assert code == 0
    assert json.loads(target.read_text())["evidence"] == []


# --- cli.ask: Ctrl-C during a run --------------------------------------------------------------------


class FakeStore:
    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.items: list[tuple[list[str], str, dict]] = []

    async def put_item(self, namespace: list[str], key: str, value: dict) -> None:
        if self.fails:
            raise ConnectionError("down")
        self.items.append((namespace, key, value))


async def stream_under(stop: StopOnInterrupt, run_id: str | None, started: asyncio.Event) -> None:
    """A stand-in for streaming a run: sits in the run until it is abandoned."""
    with stop:
        stop.run_id = run_id
        started.set()
        await asyncio.sleep(30)


async def interrupt(store: FakeStore, run_id: str | None, times: int) -> tuple[list, str, bool]:
    """Ctrl-C ``times`` times while a run streams; returns the stop requests sent, the output, and whether
    the run was abandoned."""
    view, out = make_view()
    stop, started = StopOnInterrupt(SimpleNamespace(store=store), view), asyncio.Event()
    streaming = asyncio.create_task(stream_under(stop, run_id, started))
    await started.wait()
    for _ in range(times):
        stop.interrupted()
        await asyncio.sleep(0.01)
    abandoned = streaming.done()
    streaming.cancel()
    await asyncio.gather(streaming, return_exceptions=True)
    return store.items, out.getvalue(), abandoned


def test_the_first_interrupt_asks_the_run_to_wrap_up_and_keeps_streaming() -> None:
    sent, printed, abandoned = asyncio.run(interrupt(FakeStore(), "run-1", times=1))

    assert sent == [(["deep_research_agent", "stop_requests"], "run-1", {"mode": "wrap_up", "by": "ask"})]
    assert "■ Wrapping up:" in printed and not abandoned


def test_the_second_interrupt_asks_the_run_to_stop_now() -> None:
    sent, printed, abandoned = asyncio.run(interrupt(FakeStore(), "run-1", times=2))

    assert [value["mode"] for _, _, value in sent] == ["wrap_up", "now"]
    assert "■ Stopping now:" in printed and not abandoned


def test_the_third_interrupt_abandons_the_run() -> None:
    sent, printed, abandoned = asyncio.run(interrupt(FakeStore(), "run-1", times=3))

    assert len(sent) == 2 and "✖ Abandoning the run." in printed and abandoned


def test_an_interrupt_before_the_run_has_an_id_abandons_it() -> None:
    sent, _, abandoned = asyncio.run(interrupt(FakeStore(), None, times=1))

    assert sent == [] and abandoned


def test_a_stop_request_that_cannot_be_sent_says_so_and_the_run_goes_on() -> None:
    _, printed, abandoned = asyncio.run(interrupt(FakeStore(fails=True), "run-1", times=1))

    assert "Could not ask the run to stop (ConnectionError); Ctrl-C again to go further." in printed
    assert not abandoned


# --- cli.env: settings helpers -----------------------------------------------------------------------


def test_default_url_follows_run_sh() -> None:
    assert default_url({}) == "http://127.0.0.1:2024"
    assert default_url({"PORT": "3000"}) == "http://127.0.0.1:3000"
    assert default_url({"DRA_HOST": "0.0.0.0", "DRA_PORT": "2100", "PORT": "1"}) == "http://127.0.0.1:2100"
    assert default_url({"DRA_URL": "http://h:1/"}) == "http://h:1"


def test_read_dotenv(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("# comment\n\nexport A=1\nB = 'two words'\nC=\"x=y\"\nnot a pair\n")
    assert read_dotenv(env) == {"A": "1", "B": "two words", "C": "x=y"}


# --- the entry point, as a subprocess ----------------------------------------------------------------


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ask_without_server_fails_with_exit_2_instead_of_retrying() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    # A client that retried the connection would outlive the subprocess timeout, which fails the test;
    # a wall-clock bound tighter than that only measures how loaded the machine is.
    result = _cli("ask", "anything", "--url", url, timeout=20)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert f"No agent server at {url}" in output and "./run.sh" in output


def test_doctor_never_prints_secret_values() -> None:
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-secret-xyz",
        "TAVILY_API_KEY": "tvly-secret-abc",
        "DRA_URL": f"http://127.0.0.1:{_closed_port()}",
        "COLUMNS": "200",
    }
    env.pop("LLM_SANDBOX_URL", None)
    result = _cli("doctor", env=env)
    output = result.stdout + result.stderr
    assert "sk-secret-xyz" not in output and "tvly-secret-abc" not in output
    assert "set (OPENAI_API_KEY)" in output
    assert "set (TAVILY_API_KEY)" in output
    assert "not configured (code execution disabled)" in output


def test_the_package_runs_as_a_module_without_warnings_and_exports_its_entry_point() -> None:
    result = subprocess.run(
        [sys.executable, "-W", "error", "-m", "deep_research_agent.cli", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "{ask,steer,tasks,schedule,doctor,corpus,kb}" in result.stdout

    from deep_research_agent.cli.__main__ import main

    assert deep_research_agent.cli.main is main
    assert all(getattr(deep_research_agent.cli, name) is not None for name in deep_research_agent.cli.__all__)


def test_doctor_lists_skills_and_custom_tools_and_names_a_broken_plugin_with_its_error() -> None:
    fixtures = ROOT / "tests" / "fixtures" / "extensions"
    env = {
        **os.environ,
        "DRA_SKILLS_DIR": str(fixtures / "skills_broken"),
        "DRA_CUSTOM_TOOLS_DIR": str(fixtures / "tools"),
        "DRA_URL": f"http://127.0.0.1:{_closed_port()}",
        "COLUMNS": "250",
    }
    result = _cli("doctor", env=env)

    lines = result.stdout.splitlines()
    assert any("skills" in line and "cited-table" in line for line in lines)
    assert any("skills" in line and "'no-front-matter' is skipped" in line for line in lines)
    assert any("custom tools" in line and "catalog_rows" in line and "greeting" in line for line in lines)
    assert any("'broken.py' is skipped: ModuleNotFoundError" in line for line in lines)
    assert not any("private_tool" in line for line in lines)


def test_doctor_reports_a_missing_skills_folder_as_a_warning(tmp_path) -> None:
    env = {
        **os.environ,
        "DRA_SKILLS_DIR": str(tmp_path / "none"),
        "DRA_URL": f"http://127.0.0.1:{_closed_port()}",
        "COLUMNS": "250",
    }
    result = _cli("doctor", env=env)

    assert any(line.strip().startswith("!") and "does not exist" in line for line in result.stdout.splitlines())


@pytest.mark.parametrize(
    "command",
    [
        ("steer", "a-thread", "Focus on Europe"),
        ("tasks",),
        ("kb", "list"),
        ("schedule", "list"),
    ],
)
def test_every_client_command_says_the_same_thing_when_no_server_answers(command: tuple[str, ...]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    result = _cli(*command, "--url", url, timeout=20)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert f"No agent server at {url} — start it with ./run.sh" in output
