"""Pre-triage, follow-up turns and context compaction through ``langgraph dev`` and the SDK."""

from __future__ import annotations

import pytest

from deep_research_agent.domain.names import Role
from testkit.agent_server import stream_run
from testkit.scenarios import (
    direct_answerer,
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
    triage,
)
from testkit.scripted_model import agent, call, turn
from testkit.web import ARTICLES

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SUMMARY = "## Request\nFind the census figure.\n## Findings\nCapacity factor 47.3 percent.\n## Offloaded files\nNone.\n## Gaps\nNone.\n## Next steps\nReport."


def happy_path(url: str, title: str) -> dict:
    return scenario(
        orchestrator(
            plan_and_delegate("Find the energy density of sodium-glass batteries"),
            submit(f"# Sodium-glass batteries\n\nThey reach 412 Wh/kg [1].\n\n## Sources\n[1] {title} — {url}\n"),
        ),
        researcher_reads(url, query="sodium glass battery", finding="412 Wh/kg", quote="412 Wh/kg"),
    )


async def test_a_greeting_is_answered_in_two_small_calls_without_the_orchestrator(agent_server, scripted, web):
    article = ARTICLES["halvorsen-cell"]
    scripted.set_scenario(happy_path(web.url(article.path), article.title))
    research = await stream_run(agent_server.url, "How dense are sodium-glass batteries?")
    assert end_of(research) == ("done", "report_delivered")
    research_chars = sum(r["body_chars"] for r in scripted.requests())

    scripted.reset()
    scripted.set_scenario(scenario(triage("SIMPLE"), direct_answerer("Hello! What would you like me to research?")))
    greeting = await stream_run(agent_server.url, "hi there")

    assert end_of(greeting) == ("done", "direct_answer")
    assert [(s["detail"], s["reason"]) for s in greeting.statuses("triage")] == [("simple", "classified")]
    assert [r["agent"] for r in scripted.requests()] == ["triage", "direct-answer"]
    greeting_chars = sum(r["body_chars"] for r in scripted.requests())
    assert greeting_chars <= 0.10 * research_chars, f"{greeting_chars:,} chars vs {research_chars:,} for research"
    assert greeting.values["messages"][-1]["content"] == "Hello! What would you like me to research?"
    assert "final_report" not in greeting.values


async def test_a_router_failure_runs_the_full_agent(agent_server, scripted):
    scripted.set_scenario(
        scenario(
            triage("Hmm, hard to say."),
            orchestrator(submit("# Kelp\n\nDone.\n\n## Sources\n")),
        )
    )

    run = await stream_run(agent_server.url, "hi")

    assert [s["detail"] for s in run.statuses("triage")] == ["research"]
    assert end_of(run) == ("done", "report_delivered")


async def test_a_follow_up_on_the_same_thread_is_answered_with_the_earlier_report_in_context(
    agent_server, scripted, web
):
    article = ARTICLES["halvorsen-cell"]
    scripted.set_scenario(happy_path(web.url(article.path), article.title))
    first = await stream_run(agent_server.url, "How dense are sodium-glass batteries?")
    assert end_of(first) == ("done", "report_delivered")

    scripted.reset()
    scripted.set_scenario(
        scenario(
            orchestrator(
                *[turn(content="x")] * 2, turn(content="The report gives 412 Wh/kg for the Halvorsen cell [1].")
            )
        )
    )
    follow_up = await stream_run(agent_server.url, "Which energy density did you find?", thread_id=first.thread_id)

    assert end_of(follow_up) == ("done", "direct_answer")
    [request] = requests_of(scripted, "orchestrator")
    history = " ".join(message_text(m) for m in request["body"]["messages"]) + str(request["body"]["messages"])
    assert "They reach 412 Wh/kg [1]." in history, "the earlier report is not in the follow-up's context"
    assert follow_up.values["final_report"].startswith("# Sodium-glass batteries")


async def test_a_long_sub_agent_context_is_compacted_and_the_run_goes_on(agent_server, scripted, web):
    url = web.url(ARTICLES["long"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the Arctic wind census capacity factor"),
                submit(f"# Census\n\nA capacity factor of 47.3 percent [1].\n\n## Sources\n[1] Census — {url}\n"),
            ),
            # Compaction folds the first model turn into the summary, so the scripted model (which counts the
            # assistant messages it is shown) hears the second turn twice; the guards see the same thing.
            researcher(
                turn(tool_calls=[call("web_fetch", url=url)]),
                turn(tool_calls=[call("web_fetch", url=web.url("/short"))]),
                turn(
                    content=findings_json(
                        "47.3 percent", [{"finding": "47.3 percent", "evidence": "47.3 percent", "source": url}]
                    )
                ),
            ),
            agent(Role.COMPACTION, turn(content=SUMMARY), repeat_last=True),
        )
    )

    run = await stream_run(agent_server.url, "Arctic wind census?", configurable={"compaction_tokens": 6000})

    assert end_of(run) == ("done", "report_delivered")
    # The figure is the last sentence of an 80,000-character page: the claim check reads the whole page.
    assert run.values["final_report"].endswith("47.3 percent [1].\n\n## Sources\n[1] Census — " + url)
    assert [c["verdict"] for c in run.values["citations"]] == ["supported"]
    compacting, compacted = run.statuses("compacting"), run.statuses("compacted")
    assert compacting and compacted and compacting[0]["role"] == "research-subagent"
    assert compacting[0]["tokens_estimate"] > 6000 > compacted[0]["tokens_estimate"]
    assert compacted[0]["messages_summarized"] >= 1
    after = requests_of(scripted, "research-subagent")[-1]["body"]["messages"]
    sent = " ".join(message_text(m) for m in after)
    assert "Capacity factor 47.3 percent." in sent and "Survey section 200 of the Arctic wind census" not in sent
    usage = run.of_type("usage")[0]
    assert usage["compactions"] >= 1 and usage["messages_summarized"] >= 1
    assert usage["per_role"]["compaction"]["model_calls"] >= 1, "the summarizer's spend must count against the budget"


async def test_a_long_conversation_compacts_the_orchestrator_and_the_follow_up_is_still_answered(
    agent_server, scripted, web
):
    article = ARTICLES["halvorsen-cell"]
    scripted.set_scenario(happy_path(web.url(article.path), article.title))
    first = await stream_run(agent_server.url, "How dense are sodium-glass batteries?")
    assert end_of(first) == ("done", "report_delivered")

    scripted.reset()
    summary = SUMMARY.replace("Find the census figure.", "Energy density of sodium-glass batteries.")
    scripted.set_scenario(
        scenario(
            orchestrator(turn(content="The report gives 412 Wh/kg for the Halvorsen cell [1]."), repeat_last=True),
            agent(Role.COMPACTION, turn(content=summary), repeat_last=True),
        )
    )
    # The thread has outgrown this trigger: the orchestrator compacts before it answers.
    follow_up = await stream_run(
        agent_server.url,
        "Which energy density did you find?",
        thread_id=first.thread_id,
        configurable={"compaction_tokens": 1000},
    )

    assert end_of(follow_up) == ("done", "direct_answer")
    [compacting] = follow_up.statuses("compacting")
    [compacted] = follow_up.statuses("compacted")
    assert compacting["role"] == "orchestrator"
    assert compacted["messages_summarized"] >= 3 and compacted["tokens_estimate"] < compacting["tokens_estimate"]
    [request] = requests_of(scripted, "orchestrator")
    sent = request["body"]["messages"]
    texts = [message_text(m) for m in sent]
    assert any("Energy density of sodium-glass batteries." in t for t in texts), "the summary is not in context"
    assert texts[-1] == "Which energy density did you find?"
    assert "How dense are sodium-glass batteries?" not in " ".join(texts), "the first turn was not summarized"
    assert not any(c["function"]["name"] == "task" for m in sent for c in m.get("tool_calls") or [])
    assert follow_up.values["messages"][-1]["content"] == "The report gives 412 Wh/kg for the Halvorsen cell [1]."
    assert len(follow_up.values["messages"]) < len(first.values["messages"]) + 2
    usage = follow_up.of_type("usage")[0]
    assert usage["compactions"] == 1 and usage["per_role"]["compaction"]["model_calls"] == 1
