"""Scripted scenarios that answer an evaluation suite offline, and a scripted evaluation judge.

``suite_scenario(web)`` scripts every question of a suite alike (the scripted model picks replies by role,
never by question): one research unit searches, reads the Lighthouse of Alexandria page of the web
stand-in and hands back a quoted finding, and the orchestrator submits a report of two checked claims
citing it. Run with ``{"web_fetch": false}``, the same script reads nothing (its fetch is refused), so its
claims cite a page only seen as a search snippet: the "deliberately worse configuration" a comparison must
catch. ``judge_agents(...)`` answer the evaluation judge's roles with RACE scores and
claim verdicts.
"""

from __future__ import annotations

import json
from typing import Any

from deep_research_agent.evaluation.judge import FACT_ROLE, RACE_ROLE
from testkit.scenarios import findings_json, orchestrator, plan_and_delegate, researcher, scenario, submit
from testkit.scripted_model import agent, call, turn
from testkit.web import ARTICLES, WebStandIn

UNIT = "Find the height and building dates of the Lighthouse of Alexandria"
BUILT = "The Lighthouse of Alexandria was built on the island of Pharos between 280 and 247 BC, under Ptolemy I and Ptolemy II [1]."
HEIGHT = "Ancient accounts describe a tower that stood over 100 metres tall [1]."


def pharos(web: WebStandIn) -> str:
    return web.url(ARTICLES["pharos-lighthouse"].path)


def report(web: WebStandIn) -> str:
    return f"# The Lighthouse of Alexandria\n\n{BUILT}\n\n{HEIGHT}\n\n## Sources\n[1] The Lighthouse of Alexandria — {pharos(web)}\n"


def suite_scenario(web: WebStandIn) -> dict[str, Any]:
    url = pharos(web)
    finding = {
        "finding": "The lighthouse stood over 100 metres tall.",
        "evidence": "stood over 100 metres tall",
        "source": url,
    }
    return scenario(
        orchestrator(plan_and_delegate(UNIT), submit(report(web)), turn(content="Delivered."), repeat_last=True),
        researcher(
            turn(tool_calls=[call("web_search", query="lighthouse of alexandria pharos")]),
            turn(tool_calls=[call("web_fetch", url=url)]),
            turn(content=findings_json("The lighthouse's height and dates.", [finding])),
            repeat_last=True,
        ),
    )


def judge_reply(scores: dict[str, float], reference: dict[str, float] | None = None) -> str:
    return json.dumps({"report": scores, **({"reference": reference} if reference else {})})


def verdicts(*labels: str) -> str:
    return json.dumps(
        {
            "verdicts": [
                {"claim": f"C{n}", "verdict": v, "passage": "P1", "reason": "scripted"} for n, v in enumerate(labels, 1)
            ]
        }
    )


def judge_agents(race: str, fact: str) -> list[dict[str, Any]]:
    """The judge's answers to its RACE and claim prompts, for every report of a suite."""
    return [
        agent(RACE_ROLE, turn(content=race), repeat_last=True),
        agent(FACT_ROLE, turn(content=fact), repeat_last=True),
    ]
