"""A task's digest and "what changed" section in the report's language: the fixed wording is translated once
per language per process by the utility model, checked before it is used, and falls back to English with a
warning when it cannot be; what the run found (findings, figures, URLs) is put in as it is."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest

from deep_research_agent.domain.findings import Finding, Findings
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.names import Role, WarningReason
from deep_research_agent.domain.reader import RunLanguage
from deep_research_agent.evidence.store import HandOver
from deep_research_agent.tasks import middleware, translation
from deep_research_agent.tasks.context import TaskContext
from deep_research_agent.tasks.diff import TaskDiff, section
from deep_research_agent.tasks.digest import (
    digest_section,
    failed_section,
    first_section,
    headline,
    recalled_section,
)
from deep_research_agent.tasks.middleware import TaskMiddleware, finish_task
from deep_research_agent.tasks.store import TaskFinding, TaskRecord, TaskSource
from deep_research_agent.tasks.translation import WordingTranslator
from deep_research_agent.tasks.wording import (
    ENGLISH_WORDING,
    DigestWording,
    WordingError,
    parse_wording,
    translation_request,
)

URL = "https://farms.example/norre-bay"
GONE = "https://farms.example/old-survey"
NEW = "https://farms.example/new-survey"
REPORT = "# Varech de Norre Bay\n\nLa ferme a stocké 1 310 tonnes de carbone [1].\n\n## Sources\n[1] Norre Bay — " + URL
FRENCH = {
    "changed_since": "Ce qui a changé depuis le {since}",
    "nothing_material": "Rien d'important n'a changé : aucun nouveau résultat, aucun chiffre n'a bougé, aucune source n'a disparu.",
    "pages_checked": "Pages modifiées autrement ou nouvelles : {count}.",
    "figures_moved": "Chiffres qui ont bougé",
    "new_findings": "Nouveaux résultats",
    "sources_gone": "Sources disparues",
    "pages_changed": "Pages modifiées",
    "new_pages": "Nouvelles pages",
    "recalled": "Rien d'important n'a changé : l'exécution n'a rien relu.",
    "first_heading": "Ce qui a changé",
    "first_run": "C'est la première exécution de la tâche {task} : rien à comparer pour l'instant. Les suivantes "
    "commenceront par ce qui a changé depuis celle-ci.",
    "failed_heading": "Cette exécution a échoué",
    "failed": "L'exécution s'est terminée par {reason} avant toute comparaison. La planification continue.",
    "since_last_run": "Ce qui a changé depuis la dernière exécution",
    "compared_with": "Comparé à l'exécution du {since}.",
    "nothing_changed": "Rien n'a changé : aucun nouveau résultat ni nouvelle source.",
    "changed_sources": "Sources modifiées",
    "new_sources": "Nouvelles sources",
}
FRENCH_WORDING = DigestWording(**FRENCH)


def diff(**changes: Any) -> TaskDiff:
    return TaskDiff(task="kelp", previous_run_at="2026-12-01T08:00:05Z", **changes)


MOVED = diff(
    new_findings=["The farm stored 1,310 tonnes of carbon."],
    moved_figures=[{"source": URL, "before": "1,240 tonnes", "after": "1,310 tonnes"}],
    gone_sources=[f"{GONE} (HTTP 404 (page not found))"],
    changed_sources=[URL],
    new_sources=[NEW],
)


# --- English stays as it was -----------------------------------------------------------------------


def test_the_english_wording_writes_every_section_as_before():
    assert first_section("kelp") == (
        "## What changed\n\nThis is the first run of the task kelp: there is nothing to compare with yet. "
        "The next runs open with what changed since this one."
    )
    assert recalled_section("2026-12-01T08:00:05Z") == (
        "## What changed since 2026-12-01 08:00 UTC\n\nNothing material changed: the run read nothing again."
    )
    assert failed_section("config_error") == (
        "## This run failed\n\nThe run ended with config_error before it could compare anything. "
        "The schedule goes on: the next run compares with the last run that delivered a report."
    )
    assert digest_section(diff(changed_sources=[URL], new_sources=[NEW])) == (
        "## What changed since 2026-12-01 08:00 UTC\n\nNothing material changed: no new findings, no figure moved "
        "and no source is gone. Pages that changed in other ways or were new: 2."
    )
    assert section(diff()) == (
        "## What changed since the last run\n\nCompared with the run of 2026-12-01T08:00:05Z.\n\n"
        "Nothing changed: no new findings or sources, and every page read again is unchanged."
    )
    assert section(MOVED) == (
        "## What changed since the last run\n\nCompared with the run of 2026-12-01T08:00:05Z.\n\n"
        f"**Figures that moved:**\n- 1,240 tonnes → 1,310 tonnes ({URL})\n\n"
        f"**Sources gone:**\n- {GONE} (HTTP 404 (page not found))\n\n**Changed sources:**\n- {URL}\n\n"
        f"**New sources:**\n- {NEW}\n\n**New findings:**\n- The farm stored 1,310 tonnes of carbon."
    )
    assert all(digest(MOVED, ENGLISH_WORDING) == digest(MOVED) for digest in (digest_section, section))


# --- a translated wording in every section ---------------------------------------------------------


def test_a_french_wording_writes_every_section_in_french_with_what_the_run_found_as_it_is():
    assert digest_section(MOVED, FRENCH_WORDING) == (
        "## Ce qui a changé depuis le 2026-12-01 08:00 UTC\n\n**Chiffres qui ont bougé:**\n"
        f"- 1,240 tonnes → 1,310 tonnes ({URL})\n\n**Nouveaux résultats:**\n- The farm stored 1,310 tonnes of carbon."
        f"\n\n**Sources disparues:**\n- {GONE} (HTTP 404 (page not found))\n\n**Pages modifiées:**\n- {URL}\n\n"
        f"**Nouvelles pages:**\n- {NEW}"
    )
    assert digest_section(diff(new_sources=[NEW]), FRENCH_WORDING).endswith(
        "aucune source n'a disparu. Pages modifiées autrement ou nouvelles : 1."
    )
    assert recalled_section("2026-12-01T08:00:05Z", FRENCH_WORDING) == (
        "## Ce qui a changé depuis le 2026-12-01 08:00 UTC\n\nRien d'important n'a changé : l'exécution n'a rien relu."
    )
    assert first_section("kelp", FRENCH_WORDING).startswith(
        "## Ce qui a changé\n\nC'est la première exécution de la tâche kelp : rien à comparer"
    )
    assert failed_section("model_error", FRENCH_WORDING) == (
        "## Cette exécution a échoué\n\nL'exécution s'est terminée par model_error avant toute comparaison. "
        "La planification continue."
    )
    assert section(MOVED, FRENCH_WORDING).startswith(
        "## Ce qui a changé depuis la dernière exécution\n\nComparé à l'exécution du 2026-12-01T08:00:05Z.\n\n"
        "**Chiffres qui ont bougé:**\n- 1,240 tonnes → 1,310 tonnes"
    )
    assert section(diff(), FRENCH_WORDING).endswith("\n\nRien n'a changé : aucun nouveau résultat ni nouvelle source.")


# --- what a model's translation must be to be used -------------------------------------------------


def test_the_translation_request_sends_the_english_wording_and_names_the_language_and_the_placeholders():
    system, user = translation_request("fr")

    assert "into French" in system and "({count}, {reason}, {since}, {task})" in system
    assert json.loads(user) == ENGLISH_WORDING.model_dump()


def test_a_translation_is_read_from_json_fenced_or_after_a_thinking_block():
    fenced = f"<think>Translate each value.</think>Voici :\n```json\n{json.dumps(FRENCH, ensure_ascii=False)}\n```"

    assert parse_wording(fenced) == FRENCH_WORDING


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("Bien sûr ! Voici la traduction en français de chaque phrase.", "the answer holds no JSON object"),
        (json.dumps({k: v for k, v in FRENCH.items() if k != "failed"}), "the answer has no 'failed'"),
        (json.dumps({**FRENCH, "changed_since": "Ce qui a changé depuis"}), "'changed_since' does not keep its placeholders ({since})"),
        (json.dumps({**FRENCH, "first_run": "Première exécution de {tâche}."}), "'first_run' does not keep its placeholders ({task})"),
        (json.dumps({**FRENCH, "new_pages": "Nouvelles pages {since}"}), "'new_pages' does not keep its placeholders (none)"),
        (json.dumps({**FRENCH, "pages_checked": "Pages {count : {count}."}), "'pages_checked' has a stray brace"),
        (json.dumps({**FRENCH, "sources_gone": "  "}), "'sources_gone' is empty"),
        (json.dumps({**FRENCH, "sources_gone": ["Sources", "disparues"]}), "'sources_gone' is no text"),
        (json.dumps({**FRENCH, "figures_moved": "Chiffres\nqui ont bougé"}), "'figures_moved' runs over several lines"),
        (json.dumps({**FRENCH, "new_pages": "Nouvelles pages " * 20}), "'new_pages' is 319 characters long"),
    ],
    ids=["prose", "missing key", "lost placeholder", "translated placeholder", "added placeholder", "stray brace",
         "empty", "not text", "several lines", "too long"],
)  # fmt: skip
def test_a_translation_that_cannot_be_used_is_refused_with_why(reply: str, why: str):
    with pytest.raises(WordingError) as refused:
        parse_wording(reply)

    assert why in str(refused.value)


# --- the one call, kept per process ----------------------------------------------------------------


class ScriptedUtility:
    """The utility model as the translator's factory builds it: answers each call with the next reply."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.asked: list[tuple[str, Role]] = []
        self.prompts: list[Any] = []

    def __call__(self, slot: str, role: Role) -> Any:
        self.asked.append((slot, role))
        return self

    async def ainvoke(self, messages: Any, **_: Any) -> AIMessage:
        self.prompts.append(messages)
        return AIMessage(content=self.replies.pop(0))


@pytest.fixture
def nothing_translated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(translation, "_TRANSLATED", {})


def test_the_wording_is_asked_of_the_utility_model_once_per_language_and_metered(nothing_translated, run):
    model = ScriptedUtility(json.dumps(FRENCH), json.dumps({**FRENCH, "new_pages": "Neue Seiten"}))
    metered: list[Any] = []
    translator = WordingTranslator(
        model_factory=model, model="utility-model", on_model_response=lambda usage, reply: metered.append(usage)
    )

    first = asyncio.run(translator(run.usage, "fr"))
    again = asyncio.run(translator(run.usage, "fr"))

    assert first == again == FRENCH_WORDING
    assert model.asked == [("utility", Role.TRANSLATION)] and len(model.prompts) == 1 and metered == [run.usage]
    # Another translator of the process (the next run's graph) on the same model pays nothing either.
    other = WordingTranslator(model_factory=ScriptedUtility(), model="utility-model")
    assert asyncio.run(other(run.usage, "fr")) == FRENCH_WORDING


def test_a_wording_that_cannot_be_used_is_not_kept_so_the_next_run_asks_again(nothing_translated, run):
    model = ScriptedUtility("Désolé, je ne peux pas.", json.dumps(FRENCH))
    translator = WordingTranslator(model_factory=model, model="utility-model")

    with pytest.raises(WordingError):
        asyncio.run(translator(run.usage, "fr"))

    assert asyncio.run(translator(run.usage, "fr")) == FRENCH_WORDING and len(model.prompts) == 2


def test_a_translator_and_the_middleware_refuse_bad_knobs():
    with pytest.raises(KnobError, match="model"):
        WordingTranslator(model_factory=ScriptedUtility(), model=" ")
    with pytest.raises(KnobError, match="timeout_s"):
        WordingTranslator(model_factory=ScriptedUtility(), model="m", timeout_s=0)
    with pytest.raises(KnobError, match="translator"):
        TaskMiddleware(translator="fr")  # type: ignore[arg-type]


# --- the middleware: the report and the digest say the same, in the run's language -----------------


def earlier_task() -> TaskRecord:
    return TaskRecord(
        name="kelp", user_id="ada", thread_id="t0", created_at="2026-12-01T08:00:00Z", last_run_at="2026-12-01T08:00:05Z",
        last_run_id="r0", last_delivered_at="2026-12-01T08:00:05Z",
        findings=[TaskFinding(finding="The farm stored 1,240 tonnes of carbon.", source=URL)],
        sources=[TaskSource(url=URL, sha256="sha", retrieved_at="2026-12-01T08:00:00Z", thread_id="t0", run_id="r0", evidence_id="e1")],
    )  # fmt: skip


class Translator:
    def __init__(self, answer: DigestWording | Exception) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def __call__(self, usage: Any, language: str) -> DigestWording:
        self.asked.append(language)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def submitted(run, translator: Translator, *, language: str | None, previous: TaskRecord | None) -> str:
    """The report ``submit_report`` delivers through the middleware for a scheduled run told ``language``."""
    run.attachments.attach(TaskContext(name="kelp", user="ada", thread_id="t9", previous=previous, schedule="kelp"))
    run.attachments.attach(RunLanguage(language))
    run.evidence.add_handover(
        HandOver("c1", "Find the carbon", Findings(findings=[Finding(finding="The farm stored 1,310 tonnes of carbon.", source=URL)]))
    )  # fmt: skip
    delivered: list[str] = []

    async def tool(request: ToolCallRequest) -> ToolMessage:
        delivered.append(request.tool_call["args"]["report_markdown"])
        return ToolMessage("Report delivered.", tool_call_id="c2")

    call = {"name": "submit_report", "args": {"report_markdown": REPORT}, "id": "c2"}
    request = ToolCallRequest(tool_call=call, tool=None, state={}, runtime=None)  # type: ignore[arg-type]
    asyncio.run(TaskMiddleware(translator=translator).awrap_tool_call(request, tool))
    return delivered[0]


def test_a_french_run_opens_its_report_with_the_french_digest_and_its_digest_key_says_the_same(run):
    translator = Translator(FRENCH_WORDING)

    report = submitted(run, translator, language="fr", previous=earlier_task())
    digest = asyncio.run(
        finish_task(None, run, {"final_report": report}, run_id="r9", status="report_delivered", outcome="answered")
    )

    assert translator.asked == ["fr"]
    assert report.startswith(
        "# Varech de Norre Bay\n\n## Ce qui a changé depuis le 2026-12-01 08:00 UTC\n\n**Chiffres qui ont bougé:**\n"
        f"- 1,240 tonnes → 1,310 tonnes ({URL})"
    )
    assert digest is not None and digest.markdown in report and digest.markdown.startswith("## Ce qui a changé depuis")
    assert headline(digest).startswith("1 figure moved, 1 new finding since "), "the web UI's line stays English"


@pytest.mark.parametrize("language", [None, "en"])
def test_a_run_in_english_or_in_the_model_s_choice_asks_for_no_translation(run, language):
    translator = Translator(FRENCH_WORDING)

    report = submitted(run, translator, language=language, previous=None)

    assert translator.asked == [] and report.startswith("# Varech de Norre Bay\n\n## What changed\n\nThis is the first")


def test_a_translation_that_fails_leaves_the_digest_in_english_with_one_warning(run, monkeypatch):
    sent: list[Any] = []
    monkeypatch.setattr(middleware, "emit", sent.append)
    translator = Translator(WordingError("'first_run' does not keep its placeholders ({task}): 'Première.'"))

    report = submitted(run, translator, language="fr", previous=None)
    digest = asyncio.run(
        finish_task(None, run, {"final_report": report}, run_id="r9", status="report_delivered", outcome="answered")
    )

    assert report.startswith("# Varech de Norre Bay\n\n## What changed\n\nThis is the first run of the task kelp")
    assert digest is not None and digest.markdown == first_section("kelp")
    [warning] = [event for event in sent if getattr(event, "reason", None) == WarningReason.DIGEST_IN_ENGLISH]
    assert warning.detail == (
        "The digest's wording could not be put into French (WordingError: 'first_run' does not keep its "
        "placeholders ({task}): 'Première.'); the digest is in English, and the report is delivered all the same."
    )
    assert translator.asked == ["fr"], "asked once per run"
