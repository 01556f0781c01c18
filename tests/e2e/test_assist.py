"""Where a research unit is told to start, and what a frontier run never reads, through ``langgraph dev``.

The session server runs the tier's hosted models, so ``model_assist`` auto leaves them unhelped: their units
read the prompt's one order of sources ("Where to start") and plain tool results. A run that asks for the
assist (configurable ``model_assist: on``, as a small model gets it under ``DRA_PROFILE=local``) also reads
the first-step line, which names the same first call. Either way a brief naming a corpus is pointed at
``corpus_search`` and a run with a knowledge base at ``query``, never at the web first; and a unit that reads
three pages is never told to stop after the first.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from testkit import corpus as fixture
from testkit.agent_server import RunResult, stream_run
from testkit.scenarios import (
    end_of,
    findings_json,
    message_text,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    scenario,
    submit,
    system_text,
)
from testkit.scripted_model import call, turn
from testkit.web import ARTICLES

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

FLUX_URL = "corpus://handbook/guide/config.html#GUC-FLUX-BUFFER"
FLUX_FINDING = "The flux_buffer setting defaults to four megabytes (4MB)."
STOP_LINES = ("reply with your findings JSON object now", "If this answers the unit")


def unit_texts(scripted: Any) -> list[list[str]]:
    """Each research-unit request's messages, as text, system prompt first."""
    return [[message_text(m) for m in r["body"]["messages"]] for r in requests_of(scripted, "research-subagent")]


def where_to_start(scripted: Any) -> str:
    """The order the "Where to start" section of the research unit's system prompt gives."""
    system = system_text(requests_of(scripted, "research-subagent")[0]["body"])
    return system.split("## Where to start\n", 1)[1].split("\n\n", 1)[0].split("in this order: ", 1)[1]


def first_step_lines(scripted: Any) -> list[str]:
    return [text for texts in unit_texts(scripted) for text in texts if text.startswith("Start with a `")]


async def run_with(
    agent_server: Any, scripted: Any, agents: tuple[dict[str, Any], ...], question: str, **configurable: Any
) -> RunResult:
    """One run as a new user, whose knowledge base holds nothing another test remembered."""
    scripted.set_scenario(scenario(*agents))
    configurable = {"user_id": f"assist-{uuid.uuid4().hex[:8]}", **configurable}
    return await stream_run(agent_server.url, question, configurable=configurable, timeout=90)


@pytest.mark.parametrize("model_assist", ["auto", "on"])
async def test_a_brief_naming_a_corpus_starts_with_corpus_search(agent_server, scripted, test_corpus, model_assist):
    passage = test_corpus.passage_id("flux_buffer")
    written = f"# Flux buffer\n\nThe flux buffer defaults to 4MB [1].\n\n## Sources\n[1] config.html — {FLUX_URL}\n"
    unit = researcher(
        turn(tool_calls=[call("corpus_search", query="default value of flux_buffer", corpus="handbook")]),
        turn(tool_calls=[call("corpus_read", id=passage)]),
        turn(
            content=findings_json(
                FLUX_FINDING, [{"finding": FLUX_FINDING, "evidence": fixture.FLUX_QUOTE, "source": FLUX_URL}]
            )
        ),
    )
    brief = f"Find the default flux_buffer in the {fixture.CORPUS_TITLE} corpus"

    run = await run_with(
        agent_server,
        scripted,
        (orchestrator(plan_and_delegate(brief), submit(written)), unit),
        "What is the default flux_buffer of the Halvorsen engine?",
        model_assist=model_assist,
    )

    assert end_of(run) == ("done", "report_delivered")
    order = where_to_start(scripted)
    assert order.index("the corpus the brief names") < order.index("`corpus_search`") < order.index("`web_search`")
    assert first_step_lines(scripted) == (["Start with a `corpus_search` call."] if model_assist == "on" else [])
    assert not any("web_search" in text for texts in unit_texts(scripted) for text in texts[1:])
    assert run.of_type("search_query")[0]["source"] == "corpus:handbook"


@pytest.mark.parametrize("model_assist", ["auto", "on"])
async def test_a_run_with_a_knowledge_base_starts_with_query(agent_server, scripted, web, model_assist):
    url = web.url(ARTICLES["halvorsen-cell"].path)
    quote = "reached an energy density of 412 Wh/kg in independent tests"
    claim = "The Halvorsen cell reached 412 Wh/kg."
    unit = researcher(
        turn(tool_calls=[call("query", query="Halvorsen cell energy density")]),
        turn(tool_calls=[call("web_search", query="Halvorsen cell energy density")]),
        turn(tool_calls=[call("web_fetch", url=url)]),
        turn(content=findings_json(claim, [{"finding": claim, "evidence": quote, "source": url}])),
    )
    report = f"# Halvorsen cell\n\nThe Halvorsen cell reached 412 Wh/kg [1].\n\n## Sources\n[1] Halvorsen — {url}\n"

    run = await run_with(
        agent_server,
        scripted,
        (orchestrator(plan_and_delegate("Find the energy density of the Halvorsen cell"), submit(report)), unit),
        "What energy density did the Halvorsen cell reach?",
        model_assist=model_assist,
        # Remembering offers the knowledge-base tools to a new user too.
        remember_findings=True,
    )

    assert end_of(run) == ("done", "report_delivered")
    assert run.of_type("run_start")[0]["assist"]["research-subagent"]["on"] is (model_assist == "on")
    assert where_to_start(scripted).startswith("`query` the knowledge base")
    assert first_step_lines(scripted) == (["Start with a `query` call."] if model_assist == "on" else [])


async def test_a_unit_that_reads_three_pages_is_never_told_to_stop_after_the_first(agent_server, scripted, web):
    pages = [web.url(ARTICLES[slug].path) for slug in ("pharos-lighthouse", "pharos-survey", "halvorsen-cell")]
    findings = [
        {
            "finding": "The Pharos was built between 280 and 247 BC.",
            "evidence": "between 280 and 247 BC",
            "source": pages[0],
        },
        {
            "finding": "A survey estimates it stood 137 metres tall.",
            "evidence": "stood 137 metres tall",
            "source": pages[1],
        },
    ]
    unit = researcher(
        turn(tool_calls=[call("web_search", query="Pharos lighthouse height")]),
        *(turn(tool_calls=[call("web_fetch", url=page)]) for page in pages),
        turn(content=findings_json("Built 280–247 BC; estimated 137 m tall.", findings)),
    )
    report = (
        "# The Pharos\n\nIt was built between 280 and 247 BC [1] and stood an estimated 137 metres tall [2].\n\n"
        f"## Sources\n[1] The Lighthouse of Alexandria — {pages[0]}\n[2] Divers map the ruins of the Pharos — {pages[1]}\n"
    )

    run = await run_with(
        agent_server,
        scripted,
        (orchestrator(plan_and_delegate("Find who built the Pharos and how tall it was"), submit(report)), unit),
        "Who built the Pharos and how tall was it? Cite sources.",
    )

    assert end_of(run) == ("done", "report_delivered")
    assert [e["url"] for e in run.of_type("page_fetched") if e["ok"]] == pages
    assert run.of_type("run_start")[0]["assist"]["research-subagent"] == {
        "on": False,
        "reason": "hosted_model",
        "model": "deepseek/deepseek-v4-flash-0731",
    }
    texts = unit_texts(scripted)
    assert len(texts) == 5
    read = [text for text in texts[-1][2:] if text]
    assert read[0].endswith("</search_results>") and all(text.endswith("</page>") for text in read[1:])
    assert not any(line in text for texts_ in texts for text in texts_ for line in STOP_LINES)
    assert first_step_lines(scripted) == []
