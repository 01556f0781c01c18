"""Guards through ``langgraph dev`` and the SDK: budgets, the loop and runaway guards, retries, caching.

Every guard binds every role, so most scenarios misbehave in the research sub-agent, where the original
design had no bound at all. Each test asserts the guard's status events and the run's single end status.
"""

from __future__ import annotations

import json
import time

import anyio
import pytest
from langgraph_sdk import get_client

from deep_research_agent.protocol.events import STOP_REQUESTS_NAMESPACE
from deep_research_agent.settings import MODEL_TIERS
from testkit.agent_server import GRAPH_ID, stored_records, stream_run
from testkit.scenarios import (
    end_of,
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    researcher_finds_then_hangs,
    scenario,
    submit,
)
from testkit.scripted_model import call, error, turn
from testkit.web import ARTICLES

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

# Cites nothing: a citation of a page the run never fetched would be sent back by the report gate.
REPORT = "# Sodium batteries\n\nSodium cells are cheaper than lithium cells.\n"
DEGENERATE = "The price path of the token is summarised below.\n" + "".join(f"BTC{2026 + i}, " for i in range(900))


def task_results(run) -> list[str]:
    return [m["content"] for m in run.values["messages"] if m["type"] == "tool" and m["name"] == "task"]


async def test_a_sub_agent_repeating_one_search_forever_is_halted_and_the_report_still_arrives(
    agent_server, scripted, web
):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find sodium battery prices"), submit(REPORT)),
            researcher(turn(tool_calls=[call("web_search", query="sodium battery price")]), repeat_last=True),
        )
    )

    run = await stream_run(agent_server.url, "How cheap are sodium batteries?", timeout=60)

    assert end_of(run) == ("done", "report_delivered")
    detected = run.statuses("loop_detected")
    assert [e["repeats"] for e in detected] == [3, 4], "two nudges per turn at most"
    assert all(e["role"] == "research-subagent" for e in detected)
    halts = run.statuses("loop_halt")
    assert len(halts) == 1 and halts[0]["repeats"] == 6 and halts[0]["role"] == "research-subagent"
    assert len(requests_of(scripted, "research-subagent")) == 6, "the sub-agent made a model call after its halt"
    nudged = requests_of(scripted, "research-subagent")[3]["body"]["messages"][-1]
    assert nudged["role"] == "user" and nudged["name"] == "dra_harness" and "LOOP DETECTED" in message_text(nudged)

    findings = run.of_type("subagent_findings")
    assert len(findings) == 1 and findings[0]["halted"] == "loop_guard"
    assert any("loop guard" in gap for gap in findings[0]["gaps"])
    assert task_results(run)[0].endswith("**Gaps:** " + "; ".join(findings[0]["gaps"]))
    assert run.values["final_report"] == REPORT.strip()
    assert run.of_type("usage")[0]["tool_calls"] == 2 + 6 + 1, "todos and task, six searches, the report"
    assert run.stream_errors() == []


async def test_the_same_tool_with_different_arguments_is_never_a_loop(agent_server, scripted, web):
    pages = [turn(tool_calls=[call("web_search", query="sodium battery price", max_results=n)]) for n in range(1, 8)]
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find sodium battery prices"), submit(REPORT)),
            researcher(*pages, turn(content=findings_json("Prices vary."))),
        )
    )

    run = await stream_run(agent_server.url, "How cheap are sodium batteries?", timeout=60)

    assert end_of(run) == ("done", "report_delivered")
    assert run.statuses("loop_detected") == [] and run.statuses("loop_halt") == []
    assert run.of_type("subagent_findings")[0].get("halted") is None


async def test_a_degenerate_reply_is_trimmed_and_the_sub_agent_is_nudged_once_to_continue(agent_server, scripted, web):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Track the token price"), submit(REPORT)),
            researcher(turn(content=DEGENERATE), turn(content=findings_json("The token trades near its high."))),
        )
    )

    run = await stream_run(agent_server.url, "Where is the token price going?", timeout=60)

    assert end_of(run) == ("done", "report_delivered")
    runaway = run.statuses("runaway_output")
    assert len(runaway) == 1 and runaway[0]["role"] == "research-subagent" and runaway[0]["reason"] == "repetition"
    assert runaway[0]["chars"] == len(DEGENERATE) and runaway[0]["kept_chars"] < 200
    retry_messages = requests_of(scripted, "research-subagent")[1]["body"]["messages"]
    trimmed, nudge = retry_messages[-2], retry_messages[-1]
    assert trimmed["role"] == "assistant" and message_text(trimmed).endswith("BTC2026")
    assert nudge["name"] == "dra_harness" and "RUNAWAY OUTPUT" in message_text(nudge)
    assert run.statuses("runaway_halt") == []
    assert run.of_type("subagent_findings")[0]["summary"] == "The token trades near its high."


async def test_a_second_runaway_ends_the_sub_agent_and_only_a_small_hand_back_reaches_the_orchestrator(
    agent_server, scripted, web
):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Track the token price"), submit(REPORT)),
            researcher(turn(content=DEGENERATE * 20), repeat_last=True),
        )
    )

    run = await stream_run(agent_server.url, "Where is the token price going?", timeout=60)

    assert end_of(run) == ("done", "report_delivered")
    assert len(run.statuses("runaway_output")) == 1
    halts = run.statuses("runaway_halt")
    assert len(halts) == 1 and halts[0]["role"] == "research-subagent"
    assert len(requests_of(scripted, "research-subagent")) == 2
    hand_back = task_results(run)[0]
    assert len(DEGENERATE * 20) > 50_000 and len(hand_back) < 3_000
    assert run.of_type("subagent_findings")[0]["halted"] == "runaway_guard"


async def test_a_tool_call_ceiling_halts_every_role_and_the_run_ends_with_a_salvaged_report(
    agent_server, scripted, web
):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    partial = findings_json(
        "The Halvorsen cell reached 412 Wh/kg.",
        [{"finding": "The Halvorsen cell reached 412 Wh/kg.", "evidence": "412 Wh/kg", "source": url}],
    )
    searches = [turn(content=partial, tool_calls=[call("web_search", query=f"sodium glass {n}")]) for n in range(12)]
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density of sodium-glass cells"), submit(REPORT)),
            researcher(*searches),
        )
    )

    run = await stream_run(agent_server.url, "How dense?", configurable={"max_tool_calls": 10}, timeout=60)

    assert end_of(run) == ("error", "budget_exhausted")
    soft, halt = run.statuses("budget_soft"), run.statuses("budget_halt")
    assert len(soft) == 1 and soft[0]["reason"] == "tool_calls" and soft[0]["limit"] == 10
    assert len(halt) == 1 and halt[0]["reason"] == "tool_calls"
    assert run.of_type("usage")[0]["tool_calls"] == 10
    assert run.end_statuses[0]["tool_calls"] == 10
    wrap_up = [
        m
        for r in requests_of(scripted, "research-subagent")
        for m in r["body"]["messages"]
        if "WRAP UP NOW" in message_text(m)
    ]
    assert wrap_up and wrap_up[0]["name"] == "dra_harness"

    assert run.of_type("subagent_findings")[0]["halted"] == "budget"
    report = run.of_type("report")
    assert len(report) == 1 and report[0]["partial"] is True
    markdown = report[0]["markdown"]
    assert run.values["final_report"] == markdown
    assert "**Incomplete.**" in markdown and "tool-calls budget is used up" in markdown
    assert "412 Wh/kg [1]" in markdown and f"[1] {ARTICLES['halvorsen-cell'].title} — {url}" in markdown
    assert run.end_statuses[0]["report_chars"] == len(markdown)
    assert requests_of(scripted, "orchestrator")[-1]["turn"] == 0, "the orchestrator made a model call after the halt"
    # The sub-agent only searched: its citation rests on the search-result snippet the run retrieved.
    [citation] = run.values["cited_sources"]
    assert (citation["index"], citation["url"]) == (1, url) and citation["evidence_id"]
    assert citation["evidence_id"] in {e["id"] for e in run.values["evidence"] if e["kind"] == "search_result"}
    assert citation["reason"] in ("snippet_quote_verified", "search_snippet_only")
    # A snippet is not the page: every claim resting on it is delivered marked.
    assert {c["verdict"] for c in run.values["citations"]} == {"source_not_read"}
    assert "412 Wh/kg [1] [unverified]" in markdown
    assert run.of_type("usage")[0]["citations"]["removed"] == 0
    assert run.stream_errors() == []


async def test_parallel_sub_agents_share_one_tool_call_ceiling_and_all_hand_back(agent_server, scripted):
    searches = [turn(tool_calls=[call("web_search", query=f"sodium price {n}")], delay_s=0.05) for n in range(12)]
    briefs = ("Find cell prices", "Find pack prices", "Find grid storage prices")
    scripted.set_scenario(scenario(orchestrator(plan_and_delegate(*briefs), submit(REPORT)), researcher(*searches)))

    run = await stream_run(agent_server.url, "Prices?", configurable={"max_tool_calls": 10}, timeout=60)

    assert end_of(run) == ("error", "budget_exhausted")
    usage = run.of_type("usage")[0]
    # write_todos and the three task calls count too; the checks and counts interleave on one event loop,
    # so parallel agents never start a call past the ceiling.
    assert usage["tool_calls"] == 10
    assert usage["per_role"]["orchestrator"]["tool_calls"] == 4
    assert [f["halted"] for f in run.of_type("subagent_findings")] == ["budget"] * 3
    assert len(run.statuses("budget_halt")) == 1
    assert run.of_type("report")[0]["partial"] is True


async def test_a_tiny_dollar_ceiling_stops_the_run_on_the_providers_reported_cost(agent_server, scripted, web):
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(
                    tool_calls=plan_and_delegate("Find prices")["tool_calls"],
                    usage={"prompt_tokens": 900, "completion_tokens": 40, "cost": 0.25},
                ),
                submit(REPORT),
            ),
            researcher(turn(content=findings_json("Cheap."))),
        )
    )

    run = await stream_run(agent_server.url, "Prices?", configurable={"max_cost_usd": 0.01}, timeout=60)

    assert end_of(run) == ("error", "budget_exhausted")
    halt = run.statuses("budget_halt")
    assert len(halt) == 1 and halt[0]["reason"] == "cost" and halt[0]["used"] == pytest.approx(0.25, abs=1e-3)
    usage = run.of_type("usage")[0]
    assert usage["cost_usd"] == pytest.approx(0.25, abs=1e-3) and usage["reported_cost_usd"] == pytest.approx(0.25)
    assert usage["limits"] == {
        "max_tool_calls": 200,
        "max_total_tokens": 4_000_000,
        "max_run_seconds": 2700,
        "max_cost_usd": 0.01,
        "recursion_limit": 4500,
    }
    assert usage["compactions"] == 0 and usage["messages_summarized"] == 0
    assert usage["tool_calls"] == 0, "a tool call started after the halt"
    assert requests_of(scripted, "research-subagent") == []
    assert (
        run.of_type("report")[0]["partial"] is True
        and "No research unit returned findings" in run.values["final_report"]
    )


async def test_a_dollar_ceiling_binds_on_cost_priced_from_the_tier_when_the_provider_reports_none(
    agent_server, scripted
):
    big = {"prompt_tokens": 200_000, "completion_tokens": 1_000}
    tier = MODEL_TIERS["extra-low"]  # the e2e server's tier
    orchestrator_cost, researcher_cost = tier.research.cost_usd(**_priced(big)), tier.subagent.cost_usd(**_priced(big))
    # The orchestrator's first call alone crosses 75 % of the ceiling; the researcher's first call crosses 100 %.
    ceiling = orchestrator_cost / 0.8
    assert orchestrator_cost + researcher_cost > ceiling
    scripted.set_scenario(
        scenario(
            orchestrator(turn(tool_calls=plan_and_delegate("Find prices")["tool_calls"], usage=big), submit(REPORT)),
            researcher(
                turn(tool_calls=[call("web_search", query="sodium battery price")], usage=big),
                turn(content=findings_json("Cheap.")),
            ),
        )
    )

    run = await stream_run(agent_server.url, "Prices?", configurable={"max_cost_usd": ceiling}, timeout=60)

    assert end_of(run) == ("error", "budget_exhausted")
    [soft] = run.statuses("budget_soft")
    [halt] = run.statuses("budget_halt")
    assert soft["reason"] == halt["reason"] == "cost"
    assert halt["used"] == pytest.approx(orchestrator_cost + researcher_cost, rel=0.02), "not priced from the tier"
    usage = run.of_type("usage")[0]
    assert usage["reported_cost_usd"] == 0
    assert usage["per_role"]["orchestrator"]["cost_usd"] == pytest.approx(orchestrator_cost)
    assert usage["per_role"]["research-subagent"]["cost_usd"] == pytest.approx(researcher_cost)
    [researcher_request] = requests_of(scripted, "research-subagent")
    assert any("WRAP UP NOW" in message_text(m) for m in researcher_request["body"]["messages"]), "no wrap-up nudge"
    assert usage["per_role"]["research-subagent"]["tool_calls"] == 0, "the search started after the halt"
    assert run.of_type("report")[0]["partial"] is True


def _priced(usage: dict[str, int]) -> dict[str, int]:
    return {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}


async def test_a_mistyped_dollar_ceiling_refuses_the_run_rather_than_run_it_uncapped(agent_server, scripted):
    scripted.set_scenario(scenario(orchestrator(submit(REPORT))))

    run = await stream_run(agent_server.url, "Prices?", configurable={"max_cost_usd": "$2"}, timeout=60)

    assert end_of(run) == ("error", "config_error")
    assert "configurable.max_cost_usd: '$2' is not a number" in run.end_statuses[0]["detail"]
    assert scripted.requests() == []


async def test_a_token_ceiling_counts_cached_input_at_a_tenth(agent_server, scripted):
    # 50,000 prompt tokens of which 49,000 cached count as 1,000 + 4,900; with 100 output that is 6,000.
    cached = {"prompt_tokens": 50_000, "cached_tokens": 49_000, "completion_tokens": 100}
    fresh = {"prompt_tokens": 5_000, "completion_tokens": 100}
    scripted.set_scenario(
        scenario(
            orchestrator(turn(tool_calls=plan_and_delegate("Find prices")["tool_calls"], usage=cached), submit(REPORT)),
            researcher(turn(tool_calls=[call("web_search", query="sodium battery price")], usage=fresh)),
        )
    )

    run = await stream_run(agent_server.url, "Prices?", configurable={"max_total_tokens": 10_000}, timeout=60)

    assert end_of(run) == ("error", "budget_exhausted")
    [halt] = run.statuses("budget_halt")
    assert halt["reason"] == "tokens" and halt["limit"] == 10_000
    triage = run.of_type("usage")[0]["per_role"]["triage"]
    assert halt["used"] == pytest.approx(6_000 + 5_100 + triage["input_tokens"] + triage["output_tokens"], abs=1)
    assert run.of_type("usage")[0]["cached_tokens"] == 49_000
    assert len(requests_of(scripted, "research-subagent")) == 1, (
        "the cached 50,000-token call alone must not have halted"
    )


async def test_a_wall_clock_ceiling_cuts_a_slow_model_call_and_ends_the_run_near_the_ceiling(
    agent_server, scripted, web
):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find prices"), submit(REPORT)),
            researcher(turn(content=findings_json("Too late."), delay_s=30)),
        )
    )

    started = time.monotonic()
    run = await stream_run(agent_server.url, "Prices?", configurable={"max_run_seconds": 5}, timeout=60)
    took = time.monotonic() - started

    assert end_of(run) == ("error", "budget_exhausted")
    halt = run.statuses("budget_halt")
    assert len(halt) == 1 and halt[0]["reason"] == "time"
    assert 5 <= run.end_statuses[0]["elapsed_s"] < 8 and took < 15, f"the run took {took:.1f} s against a 5 s ceiling"
    assert run.of_type("subagent_findings")[0]["halted"] == "budget"
    assert run.of_type("report")[0]["partial"] is True


async def test_a_burst_of_rate_limits_is_waited_out_visibly_then_the_run_succeeds(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(
                turn(
                    tool_calls=[call("submit_report", report_markdown=REPORT)],
                    error=error(429, "Rate limit reached", retry_after=0.1),
                    error_times=4,
                )
            )
        )
    )

    run = await stream_run(agent_server.url, "Sodium?", configurable={"max_retries": 4}, timeout=60)

    assert end_of(run) == ("done", "report_delivered")
    waits = run.statuses("rate_limited")
    assert [w["attempt"] for w in waits] == [1, 2, 3, 4]
    assert all(0.1 <= w["wait_s"] <= 0.12 and w["model"] == "deepseek/deepseek-v4-flash" for w in waits)
    assert all(w["role"] == "orchestrator" and w["reason"] == "HTTP 429" for w in waits)
    assert [r["status"] for r in requests_of(scripted, "orchestrator")] == [429, 429, 429, 429, 200], (
        "hidden client retries"
    )
    assert len(run.statuses("model_call")) == 1, "the heartbeat is per model step, not per attempt"
    assert run.statuses("model_unavailable") == []


async def test_rate_limits_beyond_the_retry_count_make_the_model_unavailable(agent_server, scripted):
    scripted.set_scenario(
        scenario(orchestrator(turn(content="never", error=error(503, "Overloaded", retry_after=0.05), error_times=9)))
    )

    run = await stream_run(agent_server.url, "Sodium?", configurable={"max_retries": 2}, timeout=60)

    assert end_of(run) == ("error", "model_error")
    assert len(run.statuses("rate_limited")) == 2
    unavailable = run.statuses("model_unavailable")
    assert len(unavailable) == 1 and unavailable[0]["attempt"] == 3 and unavailable[0]["reason"] == "HTTP 503"
    assert "503" in run.end_statuses[0]["detail"]
    assert len(requests_of(scripted, "orchestrator")) == 3


async def test_a_rejected_key_fails_fast_without_retries(agent_server, scripted):
    scripted.set_scenario(scenario(orchestrator(turn(error=error(401, "Incorrect API key provided")))))

    run = await stream_run(agent_server.url, "Sodium?", configurable={"max_retries": 5}, timeout=60)

    assert end_of(run) == ("error", "model_error")
    assert "401" in run.end_statuses[0]["detail"] and "OPENAI_API_KEY" in run.end_statuses[0]["detail"]
    assert len(requests_of(scripted, "orchestrator")) == 1
    assert run.statuses("rate_limited") == [] and run.statuses("model_unavailable") == []


async def test_a_context_overflow_fails_fast_and_says_to_compact_sooner(agent_server, scripted):
    overflow = error(400, "This model's maximum context length is 131072 tokens. Please reduce the length.")
    scripted.set_scenario(scenario(orchestrator(turn(error=overflow))))

    run = await stream_run(agent_server.url, "Sodium?", configurable={"max_retries": 5}, timeout=60)

    assert end_of(run) == ("error", "model_error")
    detail = run.end_statuses[0]["detail"]
    assert "(400): This model's maximum context length is 131072 tokens" in detail
    assert "lower DRA_COMPACTION_TOKENS" in detail
    assert len(requests_of(scripted, "orchestrator")) == 1 and run.statuses("rate_limited") == []


async def test_a_sub_agent_whose_model_call_raises_fails_alone_and_the_run_goes_on(agent_server, scripted, web):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find prices"), submit(REPORT)),
            researcher(turn(error=error(500, "upstream exploded"))),
        )
    )

    run = await stream_run(agent_server.url, "Prices?", timeout=60)

    assert end_of(run) == ("done", "report_delivered")
    failed = run.statuses("subagent_failed")
    assert len(failed) == 1 and failed[0]["role"] == "research-subagent"
    assert [e["role"] for e in run.statuses("model_unavailable")] == ["research-subagent"]
    assert task_results(run)[0].startswith("TOOL ERROR (task, transient)")
    assert run.stream_errors() == []


async def test_the_orchestrators_recursion_limit_ends_the_run_cleanly_with_a_salvaged_report(agent_server, scripted):
    plans = [
        turn(tool_calls=[call("write_todos", todos=[{"content": f"step {n}", "status": "pending"}])]) for n in range(20)
    ]
    scripted.set_scenario(scenario(orchestrator(*plans)))

    run = await stream_run(agent_server.url, "Plan forever.", configurable={"recursion_limit": 40}, timeout=60)

    assert run.stream_errors() == []
    assert end_of(run) == ("error", "recursion_limit")
    limit = run.statuses("recursion_limit")
    assert len(limit) == 1 and limit[0]["limit"] == 40 and limit[0]["used"] < 40
    assert run.of_type("report")[0]["partial"] is True and "recursion limit" in run.values["final_report"]


async def test_a_sub_agents_recursion_limit_hands_back_and_the_orchestrator_still_reports(agent_server, scripted, web):
    searches = [turn(tool_calls=[call("web_search", query=f"sodium {n}")]) for n in range(40)]
    scripted.set_scenario(
        scenario(orchestrator(plan_and_delegate("Find prices"), submit(REPORT)), researcher(*searches))
    )

    run = await stream_run(agent_server.url, "Prices?", configurable={"recursion_limit": 60}, timeout=60)

    assert run.stream_errors() == []
    assert end_of(run) == ("done", "report_delivered")
    limit = run.statuses("recursion_limit")
    assert len(limit) == 1 and limit[0]["role"] == "research-subagent"
    assert run.of_type("subagent_findings")[0]["halted"] == "step_limit"


async def test_every_model_step_is_announced_with_its_role_model_step_and_unit(agent_server, scripted, web):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the cost of sodium cells"), submit(REPORT)),
            researcher(
                turn(tool_calls=[call("web_search", query="sodium cell cost")]), turn(content=findings_json("Cheap."))
            ),
        )
    )

    run = await stream_run(agent_server.url, "How cheap are sodium batteries?", timeout=60)

    beats = [(e["role"], e["step"], e["unit"], e.get("after")) for e in run.statuses("model_call")]
    assert beats == [
        ("orchestrator", 1, "How cheap are sodium batteries?", None),
        ("research-subagent", 1, "Find the cost of sodium cells", None),
        ("research-subagent", 2, "Find the cost of sodium cells", ["web_search"]),
        ("orchestrator", 2, "How cheap are sodium batteries?", ["write_todos", "task"]),
    ]
    assert all(e["model"] for e in run.statuses("model_call"))


async def test_prompt_cache_breakpoints_reach_the_wire_and_can_be_switched_off(agent_server, scripted):
    scripted.set_scenario(scenario(orchestrator(submit(REPORT))))
    await stream_run(agent_server.url, "Summarise sodium batteries.")
    cached = requests_of(scripted, "orchestrator")[0]["body"]["messages"]

    scripted.set_scenario(scenario(orchestrator(submit(REPORT))))
    await stream_run(agent_server.url, "Summarise sodium batteries.", configurable={"prompt_caching": False})
    plain = requests_of(scripted, "orchestrator")[0]["body"]["messages"]

    system, user = cached[0], cached[-1]
    assert system["role"] == "system" and system["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert user["role"] == "user" and user["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in json.dumps(plain)
    assert [message_text(m) for m in plain] == [message_text(m) for m in cached]


async def test_cancelling_a_run_stops_every_role_at_once(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find prices"), submit(REPORT)),
            researcher(turn(content=findings_json("Too late."), delay_s=30)),
        )
    )
    client = get_client(url=agent_server.url)
    thread = await client.threads.create()
    run = await client.runs.create(
        thread["thread_id"], GRAPH_ID, input={"messages": [{"role": "user", "content": "Prices?"}]}
    )
    deadline = time.monotonic() + 20
    while not requests_of(scripted, "research-subagent"):
        assert time.monotonic() < deadline, "the sub-agent never called its model"
        await anyio.sleep(0.05)

    started = time.monotonic()
    await client.runs.cancel(thread["thread_id"], run["run_id"], wait=True)
    took = time.monotonic() - started
    calls_at_cancel = len(scripted.requests())
    await anyio.sleep(1.0)

    assert took < 3, f"cancelling took {took:.1f} s while a sub-agent waited on a 30 s model call"
    assert (await client.runs.get(thread["thread_id"], run["run_id"]))["status"] == "interrupted"
    assert len(scripted.requests()) == calls_at_cancel, "a model call started after the cancel"


async def test_a_stop_request_ends_the_run_at_once_with_a_report_of_what_was_found(agent_server, scripted, web):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the energy density of sodium-glass cells"), submit(REPORT)),
            researcher_finds_then_hangs(url),
        )
    )
    run, took = await run_then_ask_to_stop(agent_server, scripted, {"mode": "now"}, once_researcher_called=3)

    assert end_of(run) == ("done", "stopped_by_user")
    assert took < 5, f"the run took {took:.1f} s to stop while its sub-agent waited on a 30 s model call"
    assert len(run.statuses("stop_requested")) == 1
    assert [f["halted"] for f in run.of_type("subagent_findings")] == ["user"]
    [report] = run.of_type("report")
    assert report["partial"] is True and "412 Wh/kg" in report["markdown"]
    assert "asked the run to stop" in report["markdown"]
    assert len(requests_of(scripted, "orchestrator")) == 1, "the orchestrator made a model call after the stop"
    stored = await stored_records(agent_server.url, run)
    assert stored and list(stored) == [e["id"] for e in run.values["evidence"]], "a stopped run stores its texts too"
    stop_requests = await get_client(url=agent_server.url).store.search_items(list(STOP_REQUESTS_NAMESPACE))
    assert stop_requests == {"items": []}, "the stop request was not deleted once served"


async def test_a_wrap_up_request_stops_new_research_and_the_orchestrator_still_writes_the_report(
    agent_server, scripted, web
):
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find sodium prices"), submit(REPORT)),
            researcher(
                turn(tool_calls=[call("web_search", query="sodium battery price")], delay_s=1.5),
                turn(content=findings_json("Sodium cells are cheaper than lithium cells.")),
            ),
        )
    )
    run, _ = await run_then_ask_to_stop(agent_server, scripted, {"mode": "wrap_up"}, once_researcher_called=1)

    assert end_of(run) == ("done", "report_delivered")
    assert [s["reason"] for s in run.statuses("stop_requested")] == ["wrap_up"]
    assert web.tavily_requests() == [], "a search started after the wrap-up request"
    researcher_sent = " ".join(
        message_text(m) for m in requests_of(scripted, "research-subagent")[-1]["body"]["messages"]
    )
    assert "not run, because the user asked the run to wrap up" in researcher_sent
    assert "WRAP UP NOW: the user asked this research run to finish now" in researcher_sent
    orchestrator_sent = " ".join(message_text(m) for m in requests_of(scripted, "orchestrator")[-1]["body"]["messages"])
    assert "WRAP UP NOW: the user asked this research run to finish now" in orchestrator_sent
    [report] = run.of_type("report")
    assert report["partial"] is False and report["markdown"].startswith("# Sodium batteries")


async def run_then_ask_to_stop(agent_server, scripted, request: dict, *, once_researcher_called: int) -> tuple:
    """Stream a run and, once the research sub-agent has made that many model calls, put a stop request
    for it; returns the run and the seconds from the request to the run's end."""
    client = get_client(url=agent_server.url)
    thread_id = (await client.threads.create())["thread_id"]
    outcome = {}

    async def research() -> None:
        outcome["run"] = await stream_run(client, "How dense?", thread_id=thread_id, timeout=60)
        outcome["ended"] = time.monotonic()

    async with anyio.create_task_group() as group:
        group.start_soon(research)
        with anyio.fail_after(20):
            while len(requests_of(scripted, "research-subagent")) < once_researcher_called:
                await anyio.sleep(0.05)
        [running] = await client.runs.list(thread_id)
        asked = time.monotonic()
        await client.store.put_item(list(STOP_REQUESTS_NAMESPACE), running["run_id"], request)
    return outcome["run"], outcome["ended"] - asked
