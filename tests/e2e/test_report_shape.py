"""Reports in the reader's language and shape, through ``langgraph dev`` with the scripted model: a French question
under ``auto`` gets a French report whose claims still check out, a Japanese report exports to PDF and Word, an
outline's sections are held to (one missing section is sent back once), and ``brief`` and ``detailed`` are held
to their units (a brief run starts two) and lengths (a report far outside its range is sent back once).

The scripted model answers the same whatever its prompt says, so these tests show what the product does around it:
what each agent is told, what the report gate holds a report to, what the exports render. Whether a real model
follows the length targets is for ``./run.sh eval``.
"""

from __future__ import annotations

import io
import json
from typing import Any

import docx
import httpx
import pytest
from pypdf import PdfReader

from testkit.agent_server import stream_run
from testkit.scenarios import (
    direct_answerer,
    end_of,
    findings_json,
    orchestrator,
    plan_and_delegate,
    requests_of,
    researcher,
    scenario,
    submit,
    system_text,
    triage,
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


async def test_a_simple_question_is_answered_in_the_report_language(agent_server, scripted):
    """The direct answer of a SIMPLE turn is asked for in the run's language; an English one under auto as before."""
    answers = {}
    for question, configurable in (
        ("Qu'est-ce qu'une batterie sodium-verre ?", {}),
        ("What is a sodium-glass battery?", {"report_language": "de"}),
        ("What is a sodium-glass battery?", {}),
    ):
        scripted.reset()
        scripted.set_scenario(scenario(triage("SIMPLE"), direct_answerer("Une batterie.")))
        run = await stream_run(agent_server.url, question, configurable=configurable)
        assert end_of(run) == ("done", "direct_answer")
        answers[question, bool(configurable)] = system_text(requests_of(scripted, "direct-answer")[0]["body"])

    assert answers["Qu'est-ce qu'une batterie sodium-verre ?", False].endswith("Write your answer in French.")
    assert answers["What is a sodium-glass battery?", True].endswith("Write your answer in German.")
    assert "## Language" not in answers["What is a sodium-glass battery?", False]


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


def styled_report(url: str, paragraphs: int) -> str:
    """A report of ``paragraphs`` sections, each one cited sentence and some prose: about 30 words a section."""
    prose = "The sources agree on this figure, and the section sets it against what the question asked about it."
    body = "\n\n".join(f"## Part {n}\n\nThe Halvorsen cell reaches 412 Wh/kg [1]. {prose}" for n in range(paragraphs))
    return f"# Sodium-glass\n\n{body}\n\n## Sources\n[1] {ARTICLE.title} — {url}\n"


def units_started(scripted: Any) -> int:
    return len(requests_of(scripted, "research-subagent")) // 3


async def test_a_brief_run_starts_two_units_and_sends_an_essay_back_once(agent_server, scripted, web):
    url = web.url(ARTICLE.path)
    essay, brief = styled_report(url, 40), styled_report(url, 8)
    scripted.set_scenario(
        scenario(
            orchestrator(plan_and_delegate("Find the density", "Find the cycle life", "Find the cost"),
                         submit(essay), submit(brief)),
            reader_of(url),
        )
    )  # fmt: skip

    run = await stream_run(
        agent_server.url, "How dense are sodium-glass batteries?", configurable={"report_style": "brief"}
    )

    assert end_of(run) == ("done", "report_delivered")
    assert "plan 1-2 research units, and write 300-600 words" in system_text(
        requests_of(scripted, "orchestrator")[0]["body"]
    )
    assert units_started(scripted) == 2 and len(run.statuses("subagent_start")) == 2
    told = json.dumps(requests_of(scripted, "orchestrator")[1]["body"]["messages"])
    assert "this unit was NOT started: the reader asked for a brief report, which has at most 2" in told
    (bounce,) = [s for s in run.statuses("revising") if s.get("reason") == "report_quality"]
    assert "The report is about 1,0" in bounce["detail"] and "brief report of 300-600 words" in bounce["detail"]
    assert run.values["final_report"].count("## Part") == 8
    assert not [s for s in run.statuses("warning") if s.get("reason") == "report_length"]


async def test_a_detailed_report_of_a_few_paragraphs_is_sent_back_once_then_delivered_with_a_warning(
    agent_server, scripted, web
):
    url = web.url(ARTICLE.path)
    briefs = ["Find the density", "Find the cycle life", "Find the cost", "Find the outlook"]
    scripted.set_scenario(
        scenario(orchestrator(plan_and_delegate(*briefs), submit(styled_report(url, 3)), repeat_last=True),
                 reader_of(url))
    )  # fmt: skip

    run = await stream_run(
        agent_server.url, "How dense are sodium-glass batteries?", configurable={"report_style": "detailed"}
    )

    assert end_of(run) == ("done", "report_delivered")
    assert "plan 4-8 research units, and write 2,500-5,000 words" in system_text(
        requests_of(scripted, "orchestrator")[0]["body"]
    )
    assert units_started(scripted) == 4
    (bounce,) = [s for s in run.statuses("revising") if s.get("reason") == "report_quality"]
    assert "cover each angle the research found" in bounce["detail"]
    (warning,) = [s for s in run.statuses("warning") if s.get("reason") == "report_length"]
    assert warning["detail"].endswith("a detailed report is 2,500-5,000 words.")
    assert run.values["final_report"].count("## Part") == 3


async def test_a_detailed_report_of_its_length_is_delivered_at_once(agent_server, scripted, web):
    url = web.url(ARTICLE.path)
    scripted.set_scenario(
        scenario(orchestrator(plan_and_delegate("Find the density"), submit(styled_report(url, 50))), reader_of(url))
    )

    run = await stream_run(
        agent_server.url, "How dense are sodium-glass batteries?", configurable={"report_style": "detailed"}
    )

    assert end_of(run) == ("done", "report_delivered")
    assert not run.statuses("revising") and not [
        s for s in run.statuses("warning") if s.get("reason") == "report_length"
    ]
    assert run.values["final_report"].count("## Part") == 50
