"""Model servers that behave like the measured local ones (llama-server, llama_cpp.server) still run the research
to a cited report: tool calls written as text, think blocks, 500 on ``content: null``, no streamed usage,
tool names repeated in every streamed delta; arguments that do not fit a tool, empty and cut-off replies,
a halt before any finding, a small context window, few server slots and a client that goes away."""

from __future__ import annotations

import asyncio
import json

import pytest
from langgraph_sdk import get_client

from testkit.agent_server import GRAPH_ID, stream_run
from testkit.scenarios import (
    end_of,
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    researcher_reads,
    scenario,
    submit,
)
from testkit.scripted_model import call, turn
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

    # The example call is the assist's, for a small model to copy (the tier's hosted model is not helped by default).
    run = await stream_run(
        agent_server.url,
        "Who built the Lighthouse of Alexandria, with cited sources?",
        configurable={"model_assist": "on"},
    )

    assert [(e["state"], e["reason"]) for e in run.end_statuses] == [("error", "no_tool_calls")]
    assert "may not support tool calling" in run.end_statuses[0]["detail"]
    assert run.end_statuses[0].get("outcome") is None and not run.values.get("final_report")
    assert [e["reason"] for e in run.statuses("triage")] == ["research_request"]
    orchestrator_requests = [r for r in scripted.requests() if r["agent"] == "orchestrator"]
    assert len(orchestrator_requests) == 2
    nudge = message_text(orchestrator_requests[1]["body"]["messages"][-1])
    assert "needs research, and your reply called no tool" in nudge
    # The example is the call that starts researching this very question, for a small model to copy.
    brief = {
        "description": "Who built the Lighthouse of Alexandria, with cited sources?",
        "subagent_type": "research-subagent",
    }
    assert json.dumps({"name": "task", "arguments": brief}) in nudge
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


async def test_a_plan_written_as_one_todo_for_arguments_runs_as_the_plan(agent_server, scripted, web):
    # The shape Qwen2.5-Coder-0.5B wrote on llama-server once shown the example call: the todo is the arguments.
    article = ARTICLES["pharos-lighthouse"]
    url = web.url(article.path)
    report = f"# The Pharos\n\nIt was built between 280 and 247 BC [1].\n\n## Sources\n[1] {article.title} — {url}\n"
    todo = {"content": "Find when the Pharos was built", "status": "pending"}
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(json.dumps({"name": "write_todos", "arguments": [todo]})),
                turn(
                    tool_calls=[
                        call("task", description="When was the Pharos built?", subagent_type="research-subagent")
                    ]
                ),
                submit(report),
            ),
            researcher_reads(
                url, query="pharos lighthouse", finding="Built 280-247 BC.", quote="between 280 and 247 BC"
            ),
        )
    )

    # Reading one todo as the list is the assist's repair.
    run = await stream_run(
        agent_server.url,
        "When was the Pharos of Alexandria built? Cite sources.",
        configurable={"model_assist": "on"},
        timeout=240,
    )

    assert end_of(run) == ("done", "report_delivered")
    [ran] = [e["detail"] for e in run.statuses("warning") if e["reason"] == "text_tool_calls"]
    assert "(write_todos); they run as tool calls" in ran
    assert run.values["todos"] == [todo]
    assert url in run.values["final_report"]


async def test_a_unit_that_answers_without_any_tool_is_shown_the_search_for_its_brief_and_researches(
    agent_server, scripted, web
):
    # Qwen2.5-Coder-0.5B's first reply as a research sub-agent on llama-server, handed the unit's brief.
    url = web.url(ARTICLES["halvorsen-cell"].path)
    brief = "Find the energy density of sodium-glass batteries"
    reads = researcher_reads(url, query=brief, finding="The Halvorsen cell reached 412 Wh/kg.", quote=QUOTE)
    reads["turns"].insert(0, turn("I'm sorry, but I can't assist with that request."))
    scripted.set_scenario(scenario(orchestrator(plan_and_delegate(brief), submit(_battery_report(url))), reads))

    run = await stream_run(
        agent_server.url,
        "How dense are sodium-glass batteries? Cite sources.",
        configurable={"model_assist": "on"},
        timeout=240,
    )

    assert end_of(run) == ("done", "report_delivered")
    told = message_text(requests_of(scripted, "research-subagent")[1]["body"]["messages"][-1])
    assert "You called no tool in this unit" in told
    # The first search of the prompt's order: the session server's corpus comes before the web.
    assert json.dumps({"name": "corpus_search", "arguments": {"query": brief}}) in told
    assert "Reply with exactly one JSON object" not in told
    assert [e["url"] for e in run.of_type("page_fetched") if e["ok"]] == [url]
    assert url in run.values["final_report"]


def _battery_report(url: str) -> str:
    title = ARTICLES["halvorsen-cell"].title
    return f"# Sodium-glass batteries\n\nThe Halvorsen cell reached 412 Wh/kg in independent tests [1].\n\n## Sources\n[1] {title} — {url}\n"


async def test_arguments_that_do_not_fit_a_tool_reach_the_model_as_a_permanent_tool_error_with_an_example(
    agent_server, scripted, web
):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the energy density of sodium-glass batteries"), submit(_battery_report(url))
            ),
            researcher(
                # The 0.5B model's shape: a list where the tool takes a string, under a name the tool does not know.
                turn(tool_calls=[call("web_search", q=["sodium glass battery"])]),
                turn(tool_calls=[call("web_search", query="sodium glass battery energy density")]),
                turn(tool_calls=[call("web_fetch", url=url)]),
                turn(
                    content=findings_json(
                        "412 Wh/kg.",
                        [{"finding": "The Halvorsen cell reached 412 Wh/kg.", "evidence": QUOTE, "source": url}],
                    )
                ),
            ),
        )
    )

    run = await stream_run(agent_server.url, "How dense are sodium-glass batteries? Cite sources.", timeout=240)

    assert end_of(run) == ("done", "report_delivered")
    told = requests_of(scripted, "research-subagent")[1]["body"]["messages"][-1]
    assert told["role"] == "tool"
    text = message_text(told)
    assert text.startswith(
        "TOOL ERROR (web_search, permanent): the arguments do not fit the tool (web_search needs query)"
    )
    example = json.loads(text.split("arguments like this: ", 1)[1])
    assert example["name"] == "web_search" and set(example["arguments"]) == {"query"}
    assert "Error invoking tool" not in text
    assert len(web.tavily_requests()) == 1, "the call that did not fit never reached the search backend"


async def test_an_empty_reply_and_a_reply_cut_off_before_any_text_are_each_asked_for_once_more(
    agent_server, scripted, web
):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    reads = researcher_reads(
        url, query="sodium glass battery", finding="The Halvorsen cell reached 412 Wh/kg.", quote=QUOTE
    )
    reads["turns"][0] = {**reads["turns"][0], "blank_times": 1, "blank_finish_reason": "length"}
    planning = {**plan_and_delegate("Find the energy density of sodium-glass batteries"), "blank_times": 1}
    scripted.set_scenario(scenario(orchestrator(planning, submit(_battery_report(url))), reads))

    run = await stream_run(agent_server.url, "How dense are sodium-glass batteries? Cite sources.", timeout=240)

    assert end_of(run) == ("done", "report_delivered")
    retried = [e["detail"] for e in run.statuses("warning") if e["reason"] == "empty_reply"]
    assert len(retried) == 2
    assert any("(empty); asking it once more" in d for d in retried)
    assert any("(cut off at the output cap); asking it once more" in d for d in retried)
    # Each blank reply was asked for again, once: the same conversation twice, then the next turn.
    assert [r["turn"] for r in requests_of(scripted, "orchestrator")] == [0, 0, 1]
    assert [r["turn"] for r in requests_of(scripted, "research-subagent")] == [0, 0, 1, 2]
    assert run.values["final_report"] and url in run.values["final_report"]


async def test_a_halt_before_any_unit_handed_over_a_finding_says_none_were(agent_server, scripted):
    searches = [turn(tool_calls=[call("web_search", query=f"sodium price {n}")]) for n in range(6)]
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find cell prices", "Find pack prices"), submit("# r")),
            researcher(*searches),
        )
    )

    run = await stream_run(agent_server.url, "Prices?", configurable={"max_tool_calls": 6}, timeout=120)

    assert end_of(run) == ("error", "budget_exhausted")
    handed = run.of_type("subagent_findings")
    assert len(handed) == 2 and all(h["halted"] == "budget" and not h["findings"] for h in handed)
    detail = run.end_statuses[0]["detail"]
    assert "no research unit had handed over findings" in detail
    assert "from the findings of" not in detail and "research units" not in detail
    assert "every finding: no research unit handed any over" in run.values["final_report"]


async def test_no_call_asks_for_more_output_than_the_models_context_window_leaves(agent_server, scripted, web):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the energy density of sodium-glass batteries"), submit(_battery_report(url))
            ),
            researcher_reads(
                url, query="sodium glass battery", finding="The Halvorsen cell reached 412 Wh/kg.", quote=QUOTE
            ),
        )
    )
    window = 12_000
    small = {
        "model_research": "small-local",
        "model_subagent": "small-local",
        "context_windows": [f"small-local={window}"],
        "max_output_tokens": 0,
    }

    run = await stream_run(agent_server.url, "How dense are sodium-glass batteries? Cite sources.", configurable=small)

    assert end_of(run) == ("done", "report_delivered")
    agents = [r for r in scripted.requests() if r["agent"] in ("orchestrator", "research-subagent")]
    assert agents and all(r["body"]["model"] == "small-local" for r in agents)
    for request in agents:
        prompt_tokens = request["body_chars"] // 4
        assert 256 <= request["body"]["max_completion_tokens"] < window - prompt_tokens, request["body"][
            "max_completion_tokens"
        ]
    caps = [r["body"]["max_completion_tokens"] for r in requests_of(scripted, "research-subagent")]
    assert caps == sorted(caps, reverse=True) and caps[0] > caps[-1], "a longer conversation leaves less room"


async def test_one_runs_model_calls_stay_within_its_cap_across_parallel_units(agent_server, scripted, web):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    briefs = ("Find cell density", "Find pack density", "Find grid density")
    slow = researcher(
        turn(tool_calls=[call("web_search", query="sodium glass battery")], delay_s=0.3),
        turn(
            content=findings_json(
                "412 Wh/kg.",
                [{"finding": "The Halvorsen cell reached 412 Wh/kg.", "evidence": "412 Wh/kg", "source": url}],
            ),
            delay_s=0.3,
        ),
    )
    scripted.set_scenario(scenario(orchestrator(plan_and_delegate(*briefs), submit(_battery_report(url))), slow))

    run = await stream_run(
        agent_server.url,
        "How dense are sodium-glass batteries? Cite sources.",
        configurable={"run_model_max_concurrency": 1},
    )

    assert len(run.statuses("subagent_start")) == 3
    assert len(requests_of(scripted, "research-subagent")) == 6
    assert [r["in_flight"] for r in scripted.requests()] == [0] * len(scripted.requests())


async def test_a_client_that_drops_a_cancel_on_disconnect_stream_aborts_the_model_call_and_stops_the_run(
    agent_server, scripted
):
    scripted.set_scenario(scenario(orchestrator(turn(tool_calls=[call("write_todos", todos=[])], delay_s=60))))
    client = get_client(url=agent_server.url)
    thread = await client.threads.create()
    stream = client.runs.stream(
        thread["thread_id"],
        GRAPH_ID,
        input={"messages": [{"role": "user", "content": "How dense are sodium-glass batteries? Cite sources."}]},
        stream_mode=["custom"],
        on_disconnect="cancel",
    )
    parts = []

    async def consume() -> None:
        async for part in stream:
            parts.append(part)

    async def until(condition, timeout: float) -> None:
        async def wait() -> None:
            while not condition():
                await asyncio.sleep(0.1)

        await asyncio.wait_for(wait(), timeout=timeout)

    listening = asyncio.create_task(consume())
    await until(lambda: requests_of(scripted, "orchestrator"), timeout=60)
    listening.cancel()  # the client goes away mid-run: its HTTP stream closes
    await asyncio.gather(listening, return_exceptions=True)

    await until(lambda: requests_of(scripted, "orchestrator")[0]["disconnected"], timeout=30)
    seen = len(scripted.requests())
    run_id = next(p.data["run_id"] for p in parts if p.event == "metadata")
    status = (await client.runs.get(thread["thread_id"], run_id))["status"]
    for _ in range(50):
        if status not in ("pending", "running"):
            break
        await asyncio.sleep(0.2)
        status = (await client.runs.get(thread["thread_id"], run_id))["status"]
    assert status == "interrupted"
    await asyncio.sleep(1)
    assert len(scripted.requests()) == seen, "a model call started after the client went away"
