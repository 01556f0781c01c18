"""Scripted scenarios for the product's agents, shared by the end-to-end tests and the benchmarks.

Each builder scripts one role of the product (``deep_research_agent.names.Role``), which the scripted model
recognises by the ``X-DRA-Agent`` header of its requests, never by prompt text: rewording a prompt changes
no scenario. ``requests_of`` reads the requests one role sent.
"""

from __future__ import annotations

import json
from typing import Any

from deep_research_agent.domain.names import Role
from testkit import scripted_model
from testkit.scripted_model import agent, call, turn


def triage(verdict: str = "RESEARCH", *, delay_s: float | None = None) -> dict[str, Any]:
    """The pre-triage router's verdict call, for every fresh turn of a scenario."""
    return agent(Role.TRIAGE, turn(content=verdict, delay_s=delay_s), repeat_last=True)


def direct_answerer(text: str) -> dict[str, Any]:
    """The reply to a turn the router classified SIMPLE."""
    return agent(Role.DIRECT_ANSWER, turn(content=text), repeat_last=True)


def scenario(
    *agents: dict[str, Any], default: dict[str, Any] | None = None, quirks: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A scripted scenario whose turns are triaged as RESEARCH unless the test scripts its own router; ``quirks``
    make the model server behave like a measured real one (``scripted_model`` QUIRKS)."""
    if not any(a["name"] == Role.TRIAGE for a in agents):
        agents = (triage(), *agents)
    return scripted_model.scenario(*agents, default=default, quirks=quirks)


def findings_json(summary: str, findings: list[dict[str, str]] | None = None, gaps: list[str] | None = None) -> str:
    return json.dumps({"summary": summary, "findings": findings or [], "gaps": gaps or []})


def orchestrator(*turns: dict[str, Any], repeat_last: bool = False) -> dict[str, Any]:
    return agent(Role.ORCHESTRATOR, *turns, repeat_last=repeat_last)


def researcher(*turns: dict[str, Any], repeat_last: bool = False) -> dict[str, Any]:
    return agent(Role.RESEARCH_SUBAGENT, *turns, repeat_last=repeat_last)


def coder(*turns: dict[str, Any]) -> dict[str, Any]:
    return agent(Role.CODING_SUBAGENT, *turns)


def extractor(*turns: dict[str, Any]) -> dict[str, Any]:
    return agent(Role.EXTRACT_SUBAGENT, *turns)


def plan_and_delegate(*briefs: str) -> dict[str, Any]:
    """The orchestrator's planning turn: a todo list plus one parallel task per brief."""
    todos = [{"content": brief, "status": "in_progress"} for brief in briefs] + [
        {"content": "Write the report", "status": "pending"}
    ]
    return turn(
        tool_calls=[call("write_todos", todos=todos)]
        + [call("task", description=brief, subagent_type="research-subagent") for brief in briefs]
    )


def submit(markdown: str) -> dict[str, Any]:
    return turn(tool_calls=[call("submit_report", report_markdown=markdown)])


def message_text(message: dict[str, Any]) -> str:
    """The text of a recorded request message, whether sent as a string or as content parts (prompt caching)."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or ())


def brief_of(request: dict[str, Any]) -> str:
    """The brief a research sub-agent's recorded model request works on: its first user message (the harness
    may speak after it, as the line that starts a unit's research does)."""
    return next(message_text(m) for m in request["body"]["messages"] if m["role"] == "user")


def system_text(body: dict[str, Any]) -> str:
    """The system prompt of a recorded model request."""
    return message_text(body["messages"][0])


def end_of(run: Any) -> tuple[str, str]:
    """The run's single end status as (state, reason); fails when there is not exactly one."""
    assert len(run.end_statuses) == 1, run.end_statuses
    return run.end_statuses[0]["state"], run.end_statuses[0]["reason"]


def requests_of(scripted: Any, role: str) -> list[dict[str, Any]]:
    """The model requests the scripted agent of ``role`` answered."""
    return [r for r in scripted.requests() if r["agent"] == role]


def researcher_reads(url: str, *, query: str, finding: str, quote: str) -> dict[str, Any]:
    """A research sub-agent that searches once, reads one page, then hands back one quoted finding."""
    return researcher(
        turn(tool_calls=[call("web_search", query=query)]),
        turn(tool_calls=[call("web_fetch", url=url)]),
        turn(content=findings_json(finding, [{"finding": finding, "evidence": quote, "source": url}])),
    )


def researcher_finds_then_hangs(url: str, *, finding: str = "The Halvorsen cell reached 412 Wh/kg.") -> dict[str, Any]:
    """A research sub-agent that notes a quoted finding while it searches on, then waits 30 s on its model."""
    partial = findings_json(finding, [{"finding": finding, "evidence": "412 Wh/kg", "source": url}])
    return researcher(
        turn(tool_calls=[call("web_search", query="sodium glass battery")]),
        turn(content=partial, tool_calls=[call("web_search", query="sodium glass battery 2026")]),
        turn(content=findings_json("Too late."), delay_s=30),
    )


def would_ask_but_cannot() -> dict[str, Any]:
    """A model that wants to ask first, run with clarifying off: the tool is not offered, so the run goes on to a
    report on stated assumptions."""
    return scenario(
        orchestrator(
            turn(tool_calls=[call("request_clarification", questions=["Which region?"])]),
            plan_and_delegate("Find kelp farm figures worldwide"),
            submit("# Kelp farms\n\nAssumed: worldwide, recent years.\n\n## Sources\n"),
        ),
        researcher(turn(content=findings_json("Nothing new."))),
    )


# A watched page whose figure changes between two runs of a scheduled task (tests/e2e/test_schedules.py, test_serve.py).
FARM_BEFORE = "In its first year the Norre Bay farm stored 1,240 tonnes of carbon in the seabed."
FARM_AFTER = "In its first year the Norre Bay farm stored 1,310 tonnes of carbon in the seabed."
FARM_CHANGED = "The Norre Bay farm stored 1,310 tonnes of carbon in its first year."


def farm_figure(sentence: str) -> str:
    """The figure a farm sentence states ("1,240 tonnes")."""
    return sentence.split("stored ")[1].split(" of")[0]


def reads_farm(url: str, sentence: str) -> dict[str, Any]:
    """A research unit that reads the farm's page (saying ``sentence``) and hands back its figure."""
    figure = farm_figure(sentence)
    finding = {
        "finding": f"The Norre Bay farm stored {figure} of carbon in its first year.",
        "evidence": f"stored {figure} of carbon",
        "source": url,
    }
    return researcher(
        turn(tool_calls=[call("web_fetch", url=url)]), turn(content=findings_json("The farm's carbon.", [finding]))
    )


def farm_report(figure: str, url: str) -> str:
    """The report that cites the farm's page for ``figure``."""
    return (
        f"# Norre Bay kelp\n\nThe Norre Bay farm stored {figure} of carbon in its first year [1].\n\n"
        f"## Sources\n[1] Norre Bay kelp farm — {url}\n"
    )


def farm_watch(url: str, sentence: str, *others: dict[str, Any]) -> dict[str, Any]:
    """One unit reads the farm's page (saying ``sentence``) and hands back its figure; the report cites it;
    ``others`` script more roles (the digest's ``translation``)."""
    return scenario(
        orchestrator(
            plan_and_delegate("Find how much carbon the Norre Bay farm stored"),
            submit(farm_report(farm_figure(sentence), url)),
        ),
        reads_farm(url, sentence),
        *others,
    )


# A yearly series read from two pages and charted, one point planted wrong (tests/e2e/test_charts.py, the web UI).
CHART_QUESTION = "Chart the yearly generation of the Streymoy turbines since 2019."
CHART_SERIES = [(2019, 41.2, 1), (2020, 44.8, 1), (2021, 47.5, 1), (2022, 52.1, 2), (2023, 58.6, 2)]
# 2024 is in neither page: the planted point, drawn hollow with its reason.
CHART_PLANTED = (2024, 63.9, 2)


def chart_report(early: str, recent: str) -> str:
    points = [{"x": x, "y": y, "cite": c} for x, y, c in (*CHART_SERIES, CHART_PLANTED)]
    chart = {
        "kind": "line",
        "title": "Streymoy turbines, yearly generation",
        "x_label": "Year",
        "y_label": "Generation",
        "unit": "GWh",
        "points": points,
    }
    return (
        "# Streymoy turbine generation\n\n"
        "Generation was 41.2 GWh in 2019 [1] and 58.6 GWh in 2023 [2].\n\n"
        f"```chart\n{json.dumps(chart)}\n```\n\n"
        f"## Sources\n[1] Streymoy turbines: yearly generation 2019 to 2021 — {early}\n"
        f"[2] Streymoy turbines: generation since 2022 — {recent}\n"
    )


def charted_series(early: str, recent: str) -> dict[str, Any]:
    """One unit reads the two Streymoy pages and hands back the series; the orchestrator charts it with one
    planted point. The gate sends the draft back once (the planted point), and the same draft is delivered."""
    reader = researcher(
        turn(tool_calls=[call("web_fetch", url=early), call("web_fetch", url=recent)]),
        turn(
            content=findings_json(
                "Yearly generation 2019-2023.",
                [
                    {"finding": "41.2 GWh in 2019.", "evidence": "generated 41.2 GWh in 2019", "source": early},
                    {
                        "finding": "58.6 GWh in 2023.",
                        "evidence": "In 2023 the turbines produced 58.6 GWh",
                        "source": recent,
                    },
                ],
            )
        ),
    )
    draft = submit(chart_report(early, recent))
    return scenario(
        orchestrator(plan_and_delegate("Find the Streymoy turbines' yearly generation"), draft, repeat_last=True),
        reader,
    )
