"""What a client sees of a research unit in flight and of a run stopped mid-unit: progress lines instead of tool
payloads, a draft built from what the units still running had staged and read, and the turn that opens with it."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.runtime import Runtime

from deep_research_agent.delivery.stopped import CONTINUE_OFFER, STOPPED_NOTE, model_view, stopped_run_opening
from deep_research_agent.domain.findings import Findings
from deep_research_agent.domain.names import EvidenceKind
from deep_research_agent.evidence.store import EvidenceStore, HandOver
from deep_research_agent.graph import run_lifecycle
from deep_research_agent.handover.progress import handing_over_line, progress_line
from deep_research_agent.report.salvage import PAGES_READ_HEADING, salvage_report
from deep_research_agent.settings import ResearchConfig

CELLS = "https://a.example/cells"
COSTS = "https://b.example/costs"


@pytest.mark.parametrize(
    ("tool", "args", "title", "line"),
    [
        ("web_search", {"query": "sodium  glass\nbattery"}, "", 'Searched the web for "sodium glass battery"'),
        ("web_fetch", {"url": CELLS}, "Cell tests", f"Read Cell tests — {CELLS}"),
        ("web_fetch", {"url": CELLS}, "", f"Read a.example — {CELLS}"),
        ("corpus_search", {"query": "glass"}, "", 'Searched the local documents for "glass"'),
        ("corpus_read", {"path": "notes.md"}, "", "Read a passage of the local documents"),
        ("task", {"subagent_type": "extract-subagent"}, "", "Got the results of the extract-subagent"),
        ("lookup_prices", {"sku": "x"}, "", "Used lookup_prices"),
    ],
)
def test_each_tool_result_a_client_shows_is_one_progress_line(tool, args, title, line):
    assert progress_line(tool, args, title=title) == line


def test_a_long_query_is_cut_in_its_progress_line():
    line = progress_line("web_search", {"query": "x" * 500})
    assert len(line) < 160 and line.endswith('…"')


def test_the_hand_over_line_names_the_summary_and_counts_the_findings():
    one = Findings.model_validate({"summary": "412 Wh/kg.", "findings": [{"finding": "412 Wh/kg.", "source": CELLS}]})
    assert handing_over_line(one) == "Handing over: 412 Wh/kg. (1 finding)"
    assert handing_over_line(Findings.model_validate({"summary": "Nothing."})) == "Handing over: Nothing. (0 findings)"


def _evidence_of_a_unit_in_flight() -> EvidenceStore:
    evidence = EvidenceStore()
    evidence.add_source(CELLS, title="Cell tests")
    evidence.add_evidence(
        url=CELLS, title="Cell tests", kind=EvidenceKind.PAGE, text="The cell reached 412 Wh/kg.", agent="r"
    )
    evidence.add_source(COSTS, title="Costs [2026]")
    evidence.add_evidence(
        url=COSTS, title="Costs [2026]", kind=EvidenceKind.PAGE, text="Costs fell " + "by a third " * 40, agent="r"
    )
    evidence.add_evidence(
        url="https://c.example", title="C", kind=EvidenceKind.SEARCH_RESULT, text="snippet", agent="r"
    )
    evidence.add_handover(
        HandOver(
            task_id="call-1",
            unit="Find the energy density",
            findings=Findings.model_validate(
                {"summary": "412 Wh/kg.", "findings": [{"finding": "The cell reached 412 Wh/kg.", "source": CELLS}]}
            ),
        )
    )
    return evidence


def test_a_draft_of_units_in_flight_lists_the_pages_no_unit_handed_over_with_their_opening_text():
    report = salvage_report(_evidence_of_a_unit_in_flight(), reason="stopped", in_flight=True)

    head, _, pages = report.partition(PAGES_READ_HEADING)
    assert "## Find the energy density" in head and "412 Wh/kg [1]" in head
    listed = pages.partition("## Sources")[0]
    assert f"> - [Costs (2026)]({COSTS})" in listed and ">   Costs fell by a third" in listed
    assert CELLS not in listed, "a page a unit handed over is cited, not listed again"
    assert "https://c.example" not in listed, "search results are not pages read"
    assert max(len(line) for line in listed.splitlines()) < 260, "each page's text is cut to its opening"


def test_a_draft_of_units_in_flight_includes_findings_staged_but_not_handed_over():
    evidence = EvidenceStore()
    evidence.stage_findings("call-2", Findings.model_validate({"summary": "Costs fell.", "findings": []}))

    assert "Costs fell." in salvage_report(evidence, reason="stopped", in_flight=True)
    assert "Costs fell." not in salvage_report(evidence, reason="stopped"), "only a draft of units in flight"
    assert evidence.staged_for("call-2") is not None, "building a draft takes nothing from the hand-over"


def test_a_turn_opens_with_the_stopped_runs_draft_and_an_offer_to_continue():
    draft = (
        f"# Research findings (incomplete)\n\nThe cell reached 412 Wh/kg [1].\n\n## Sources\n[1] Cell tests — {CELLS}\n"
    )

    opening = stopped_run_opening({"draft_report": draft}, EvidenceStore())

    assert opening is not None and opening.text.startswith(STOPPED_NOTE) and opening.text.endswith(CONTINUE_OFFER)
    assert f"- [1] [Cell tests]({CELLS})" in opening.text, "the draft's Sources are linked"
    assert stopped_run_opening({"draft_report": None}, EvidenceStore()) is None
    assert stopped_run_opening({}, EvidenceStore()) is None


def test_the_model_reads_the_opening_note_before_the_users_message_it_answers():
    question, opening, reply = (
        HumanMessage("continue"),
        stopped_run_opening({"draft_report": "# Draft\n"}, EvidenceStore()),
        AIMessage("On it."),
    )
    assert opening is not None
    earlier = [HumanMessage("How dense?"), AIMessage("Working.")]

    assert model_view([*earlier, question, opening]) == [*earlier, opening, question]
    assert model_view([*earlier, question, opening, reply]) == [*earlier, opening, question, reply]
    assert model_view([*earlier, question, reply]) is None
    assert model_view([]) is None


@pytest.mark.anyio
async def test_a_turn_after_a_run_stopped_mid_call_answers_the_dangling_call_before_the_opening_draft():
    # The run's config, as the graph runtime provides it to every hook of the run.
    var_child_runnable_config.set({"configurable": {"run_id": "after-a-stop", "thread_id": "stopped-thread"}})
    cut_off = AIMessage("", id="a1", tool_calls=[{"name": "task", "args": {"description": "cells"}, "id": "call-1"}])
    state = {"messages": [HumanMessage("How dense?", id="u1"), cut_off, HumanMessage("continue", id="u2")]}
    state["draft_report"] = "# Draft\n"

    settings = ResearchConfig.resolve(
        {"configurable": {"apiKeys": {"OPENAI_API_KEY": "sk-test-000000000000"}}}, environ={}
    )
    update = await run_lifecycle(settings).opening.abefore_agent(state, Runtime())

    assert update["run_error"] is None
    remove_all, *messages = update["messages"]
    assert isinstance(remove_all, RemoveMessage), "the thread's messages are rewritten, not appended to"
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "HumanMessage",
        "AIMessage",
    ]
    answer = messages[2]
    assert answer.tool_call_id == "call-1" and answer.status == "error" and "did not complete" in answer.text
    assert messages[-1].text.startswith(STOPPED_NOTE), "the stopped run's draft still opens the turn, after the answer"
