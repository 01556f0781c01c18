"""Model servers that behave like the measured local ones (llama-server, llama_cpp.server) still run the research
to a cited report: tool calls written as text, think blocks, 500 on ``content: null``, no streamed usage,
tool names repeated in every streamed delta."""

from __future__ import annotations

import pytest

from testkit.agent_server import stream_run
from testkit.scenarios import orchestrator, plan_and_delegate, researcher_reads, scenario, submit
from testkit.scripted_model import turn
from testkit.web import ARTICLES

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

QUOTE = "reached an energy density of 412 Wh/kg in independent tests"
THOUGHT = "The user wants numbers. I should search first."
STREAMING = {"streaming": True, "streaming_denylist": ["no-such-model"]}
NOT_STREAMING = {"streaming": False}

QUIRKS = {
    "fenced JSON, not streamed": ({"tool_calls_as": "fenced_json"}, NOT_STREAMING),
    "fenced JSON, streamed": ({"tool_calls_as": "fenced_json"}, STREAMING),
    "tool_call tags": ({"tool_calls_as": "tool_call_tags"}, NOT_STREAMING),
    "echoed schema with a stray brace": ({"tool_calls_as": "echoed_schema"}, STREAMING),
    "bare JSON lines": ({"tool_calls_as": "json_lines"}, NOT_STREAMING),
    "think blocks, streamed": ({"think": THOUGHT}, STREAMING),
    "think blocks, not streamed": ({"think": THOUGHT}, NOT_STREAMING),
    "500 on content null": ({"reject_null_content": True}, STREAMING),
    "no streamed usage": ({"no_stream_usage": True}, STREAMING),
    "repeated names in streamed deltas": ({"repeat_stream_names": True}, STREAMING),
    "llama_cpp.server, all at once": (
        {"reject_null_content": True, "no_stream_usage": True, "repeat_stream_names": True, "think": THOUGHT},
        STREAMING,
    ),
}


@pytest.mark.parametrize(("quirks", "configurable"), list(QUIRKS.values()), ids=list(QUIRKS))
async def test_a_quirky_model_server_still_ends_with_a_cited_report(agent_server, scripted, web, quirks, configurable):
    article = ARTICLES["halvorsen-cell"]
    url = web.url(article.path)
    report = (
        "# Sodium-glass batteries\n\nThe Halvorsen cell reached 412 Wh/kg in independent tests [1].\n\n"
        f"## Sources\n[1] {article.title} — {url}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density of sodium-glass batteries"), submit(report)),
            researcher_reads(
                url,
                query="sodium glass battery energy density",
                finding="The Halvorsen cell reached 412 Wh/kg.",
                quote=QUOTE,
            ),
            quirks=quirks,
        )
    )

    run = await stream_run(
        agent_server.url, "How dense are sodium-glass batteries? Cite sources.", configurable=configurable, timeout=240
    )

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]
    final = run.values["final_report"]
    assert url in final and [c["verdict"] for c in run.values["citations"]] == ["supported"]
    assert len(run.statuses("subagent_start")) == 1
    assert [e["url"] for e in run.of_type("page_fetched") if e["ok"]] == [url]
    text_calls = [e for e in run.statuses("warning") if e["reason"] == "text_tool_calls"]
    if "tool_calls_as" in quirks:
        # Every scripted call was written as text: the plan, the delegation, search, fetch, findings, submit.
        assert len(text_calls) >= 4 and all("run as tool calls" in e["detail"] for e in text_calls)
    else:
        assert text_calls == []
    shown = [final, *(m.get("content") for m in run.values["messages"] if isinstance(m.get("content"), str))]
    shown += [str(e) for e in run.of_type("subagent_findings")]
    assert not any("<think>" in text or THOUGHT in text for text in shown if text)
    assert all(r["status"] == 200 for r in scripted.requests())
    usage = run.of_type("usage")[-1]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0


async def test_a_research_question_answered_without_any_tool_ends_with_an_honest_error(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn("The Lighthouse of Alexandria was built by Sostratus and was 100 m tall."),
                turn("It was 100 m tall, built by Sostratus."),
            )
        )
    )

    run = await stream_run(agent_server.url, "Who built the Lighthouse of Alexandria, with cited sources?")

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("error", "no_tool_calls")]
    assert "may not support tool calling" in run.end_statuses[0]["detail"]
    assert run.end_statuses[0].get("outcome") is None and not run.values.get("final_report")
    assert [e["reason"] for e in run.statuses("triage")] == ["research_request"]
    orchestrator_requests = [r for r in scripted.requests() if r["agent"] == "orchestrator"]
    assert len(orchestrator_requests) == 2
    assert "needs research, and your reply called no tool" in str(orchestrator_requests[1]["body"]["messages"][-1])
    last = run.values["messages"][-1]
    assert last["type"] == "ai" and "Sostratus" not in last["content"]


async def test_a_tool_call_the_tools_cannot_take_is_explained_once_with_an_example(agent_server, scripted, web):
    article = ARTICLES["pharos-lighthouse"]
    url = web.url(article.path)
    report = f"# The Pharos\n\nIt was built between 280 and 247 BC [1].\n\n## Sources\n[1] {article.title} — {url}\n"
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn('```json\n{"name": "search_the_web", "arguments": {"q": "pharos"}}\n```'),
                plan_and_delegate("When was the Pharos built?"),
                submit(report),
            ),
            researcher_reads(
                url, query="pharos lighthouse", finding="Built 280-247 BC.", quote="between 280 and 247 BC"
            ),
        )
    )

    run = await stream_run(agent_server.url, "When was the Pharos of Alexandria built?", timeout=240)

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("done", "report_delivered")]
    second = [r for r in scripted.requests() if r["agent"] == "orchestrator"][1]["body"]["messages"][-1]["content"]
    text = second if isinstance(second, str) else " ".join(p.get("text", "") for p in second)
    assert "'search_the_web' is not one of your tools" in text and '{"name": ' in text
