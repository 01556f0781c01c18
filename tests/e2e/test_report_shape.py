"""Reports in the reader's language and shape, through ``langgraph dev`` with the scripted model: a French question
under ``auto`` gets a French report whose claims still check out, a Japanese report exports to PDF and Word, an
outline's sections are held to (one missing section is sent back once), and ``brief`` and ``detailed`` ask for
different plans and lengths.

The scripted model answers the same whatever its prompt says, so these tests show what the product does around it:
what each agent is told, what the report gate holds a report to, what the exports render. Whether a real model
follows the length targets is for ``./run.sh eval``.
"""

from __future__ import annotations

import io
from typing import Any

import docx
import httpx
import pytest
from pypdf import PdfReader

from testkit.agent_server import stream_run
from testkit.scenarios import (
    end_of,
    findings_json,
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

ARTICLE = ARTICLES["halvorsen-cell"]
QUOTE = "reached an energy density of 412 Wh/kg in independent tests"


def reader_of(url: str, *, query: str = "Halvorsen sodium glass battery") -> dict[str, Any]:
    """A research unit that searches, reads the Halvorsen article and hands back one quoted finding."""
    return researcher(
        turn(tool_calls=[call("web_search", query=query)]),
        turn(tool_calls=[call("web_fetch", url=url)]),
        turn(content=findings_json("412 Wh/kg.", [{"finding": "412 Wh/kg", "evidence": QUOTE, "source": url}])),
        repeat_last=True,
    )


def claim_counts(run: Any) -> tuple[int, int, int]:
    (event,) = run.of_type("report")
    return event["claims"]["claims"], event["claims"]["supported"], event["claims"]["flagged"]


async def test_a_french_question_under_auto_gets_a_french_report_whose_claims_check_out(agent_server, scripted, web):
    url = web.url(ARTICLE.path)
    report = (
        "# Les batteries sodium-verre\n\n"
        "La cellule Halvorsen atteint 412 Wh/kg [1]. Selon la source, elle a « "
        f"{QUOTE} » (en anglais) [1].\n\n"
        f"## Sources\n[1] {ARTICLE.title} — {url}\n"
    )
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Trouver la densité énergétique des cellules Halvorsen"),
                submit(report),
                repeat_last=True,
            ),
            reader_of(url, query="densité énergétique batterie sodium verre Halvorsen"),
        )
    )

    run = await stream_run(
        agent_server.url, "Quelle est la densité énergétique des batteries sodium-verre de la cellule Halvorsen ?"
    )

    assert end_of(run) == ("done", "report_delivered")
    assert run.statuses("revising") == [], "the first draft checks out: it is delivered as written"
    orchestrator_prompt = system_text(requests_of(scripted, "orchestrator")[0]["body"])
    assert "## Report language" in orchestrator_prompt and "clarifying questions in French" in orchestrator_prompt
    research_prompt = system_text(requests_of(scripted, "research-subagent")[0]["body"])
    assert "Search in French, and in English too" in research_prompt
    assert run.values["final_report"] == report.strip()
    assert claim_counts(run) == (2, 2, 0), "the figure and the English quote check out against the English page"
    (event,) = run.of_type("report")
    assert event["claims"]["language"] == "fr"
    assert (
        "a translated paraphrase is checked for meaning only by the claim judge"
        in event["claims"]["not_checked_in_language"]
    )


async def test_an_english_question_under_auto_is_prompted_as_before(agent_server, scripted, web):
    url = web.url(ARTICLE.path)
    report = f"# Sodium-glass\n\nThe Halvorsen cell reaches 412 Wh/kg [1].\n\n## Sources\n[1] {ARTICLE.title} — {url}\n"
    scripted.set_scenario(scenario(orchestrator(plan_and_delegate("Find the density"), submit(report)), reader_of(url)))

    run = await stream_run(agent_server.url, "How dense are the Halvorsen sodium-glass batteries?")

    assert end_of(run) == ("done", "report_delivered")
    prompts = [
        system_text(r["body"]) for r in scripted.requests() if r["agent"] in ("orchestrator", "research-subagent")
    ]
    assert prompts and not any("## Report language" in p or "## Search languages" in p for p in prompts)


async def test_a_japanese_report_exports_to_pdf_and_word_readably(agent_server, scripted, web):
    url = web.url(ARTICLE.path)
    body = "ハルヴォルセン電池のエネルギー密度は412 Wh/kgに達した [1]。"
    report = f"# ナトリウムガラス電池\n\n{body}\n\n## 背景\n\n独立した試験で測定された。\n\n## Sources\n[1] {ARTICLE.title} — {url}\n"
    scripted.set_scenario(scenario(orchestrator(plan_and_delegate("密度を調べる"), submit(report)), reader_of(url)))

    run = await stream_run(
        agent_server.url, "ナトリウムガラス電池のエネルギー密度は？", configurable={"report_language": "ja"}
    )

    assert end_of(run) == ("done", "report_delivered")
    assert "in Japanese" in system_text(requests_of(scripted, "orchestrator")[0]["body"])
    async with httpx.AsyncClient(base_url=agent_server.url, timeout=60) as client:
        pdf_answer = await client.get(f"/reports/{run.thread_id}", params={"format": "pdf"})
        docx_answer = await client.get(f"/reports/{run.thread_id}", params={"format": "docx"})
    pdf_text = "".join(
        "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf_answer.content)).pages).split()
    )
    assert "ナトリウムガラス電池" in pdf_text and "412Wh/kg" in pdf_text and "背景" in pdf_text
    document = docx.Document(io.BytesIO(docx_answer.content))
    docx_text = "\n".join(p.text for p in document.paragraphs)
    assert "ナトリウムガラス電池" in docx_text and "独立した試験で測定された。" in docx_text


OUTLINE = ["Contexte", "Performances", "Limites", "Perspectives"]


def outlined_report(url: str, sections: list[str]) -> str:
    body = "\n\n".join(
        f"## {heading}\n\n" + ("La cellule atteint 412 Wh/kg [1]." if heading == "Performances" else "Texte.")
        for heading in sections
    )
    return f"# Rapport\n\nRésumé.\n\n{body}\n\n## Sources\n[1] {ARTICLE.title} — {url}\n"


async def test_an_outline_of_four_sections_is_followed_and_a_missing_one_is_sent_back_once(agent_server, scripted, web):
    url = web.url(ARTICLE.path)
    missing = outlined_report(url, ["Contexte", "Performances", "Perspectives"])
    complete = outlined_report(url, OUTLINE)
    scripted.set_scenario(
        scenario(orchestrator(plan_and_delegate(*OUTLINE), submit(missing), submit(complete)), reader_of(url))
    )

    run = await stream_run(
        agent_server.url, "Où en sont les batteries sodium-verre ?", configurable={"report_outline": OUTLINE}
    )

    assert end_of(run) == ("done", "report_delivered")
    orchestrator_prompt = system_text(requests_of(scripted, "orchestrator")[0]["body"])
    assert "1. Contexte\n2. Performances\n3. Limites\n4. Perspectives" in orchestrator_prompt
    bounces = [s for s in run.statuses("revising") if s.get("reason") == "report_quality"]
    assert len(bounces) == 1 and 'section "Limites" is missing' in bounces[0]["detail"]
    delivered = run.values["final_report"]
    assert [line[3:] for line in delivered.splitlines() if line.startswith("## ")] == [*OUTLINE, "Sources"]
    assert "does not follow the outline" not in delivered


async def test_a_report_still_missing_a_section_after_its_one_revision_is_delivered_with_a_note(
    agent_server, scripted, web
):
    url = web.url(ARTICLE.path)
    missing = outlined_report(url, ["Contexte", "Performances", "Perspectives"])
    scripted.set_scenario(
        scenario(orchestrator(plan_and_delegate("Tout"), submit(missing), repeat_last=True), reader_of(url))
    )

    run = await stream_run(agent_server.url, "Où en sont les batteries ?", configurable={"report_outline": OUTLINE})

    assert end_of(run) == ("done", "report_delivered")
    assert len([s for s in run.statuses("revising") if s.get("reason") == "report_quality"]) == 1
    delivered = run.values["final_report"]
    note = 'this report does not follow the outline you gave: it has no section "Limites".'
    assert note in delivered and delivered.index(note) < delivered.index("## Sources")


async def test_a_bad_outline_language_or_style_ends_the_run_before_any_model_call(agent_server, scripted):
    scripted.set_scenario(scenario())
    for configurable, said in (
        ({"report_language": "elvish"}, "report_language 'elvish' is not a language code"),
        ({"report_style": "epic"}, "Use one of: brief, standard, detailed"),
        ({"report_outline": [f"Part {n}" for n in range(300)]}, "300 sections; a report follows at most 30"),
    ):
        run = await stream_run(agent_server.url, "Anything?", configurable=configurable)
        assert end_of(run) == ("error", "config_error")
        assert said in run.end_statuses[0]["detail"]
    assert scripted.requests() == []


async def test_brief_and_detailed_differ_in_the_plan_they_ask_for_and_the_report_delivered(agent_server, scripted, web):
    url = web.url(ARTICLE.path)
    sentence = "The Halvorsen cell reaches 412 Wh/kg [1]."
    sources = f"\n\n## Sources\n[1] {ARTICLE.title} — {url}\n"
    runs = {}
    for style, briefs, paragraphs in (
        ("brief", ["Find the density"], 1),
        ("detailed", ["Find the density", "Find the cycle life", "Find the cost", "Find the outlook"], 12),
    ):
        report = "# Sodium-glass\n\n" + "\n\n".join(f"## Part {n}\n\n{sentence}" for n in range(paragraphs)) + sources
        scripted.set_scenario(scenario(orchestrator(plan_and_delegate(*briefs), submit(report)), reader_of(url)))
        run = await stream_run(
            agent_server.url, "How dense are sodium-glass batteries?", configurable={"report_style": style}
        )
        assert end_of(run) == ("done", "report_delivered")
        prompt = system_text(requests_of(scripted, "orchestrator")[0]["body"])
        units = len(requests_of(scripted, "research-subagent")) // 3
        runs[style] = (prompt, units, len(run.values["final_report"].split()))

    assert "plan 1-2 research units, and write 300-600 words" in runs["brief"][0]
    assert "plan 4-8 research units, and write 2,500-5,000 words" in runs["detailed"][0]
    assert runs["brief"][1] == 1 and runs["detailed"][1] == 4
    assert runs["detailed"][2] > 5 * runs["brief"][2]
