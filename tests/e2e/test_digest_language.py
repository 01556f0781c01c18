"""A scheduled run's digest in the report's language, through ``langgraph dev`` with the scripted model: the first
French run asks the utility model (requests named ``translation``, metered under that role) for the digest's
wording once, and it and the next run open their reports with the French digest that the ``digest`` state key
carries too; a translation that comes back as prose leaves the digest in English with a warning, and the report
is delivered all the same.

Runs are started as the cron starts them (``configurable.schedule``), as ``tests/e2e/test_schedules.py`` does
for its quiet run: the cron engine itself is tested there."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph_sdk import get_client

from deep_research_agent.domain.names import Role
from deep_research_agent.tasks.wording import ENGLISH_WORDING
from testkit.agent_server import stream_run
from testkit.scenarios import FARM_AFTER, FARM_BEFORE, end_of, farm_watch, message_text, requests_of
from testkit.scripted_model import agent, turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

USER = "camille@example.org"
QUESTION = "Combien de carbone la ferme de varech de Norre Bay stocke-t-elle ?"
FRENCH = {
    **ENGLISH_WORDING.model_dump(),
    "changed_since": "Ce qui a changé depuis le {since}",
    "figures_moved": "Chiffres qui ont bougé",
    "new_findings": "Nouveaux résultats",
    "first_heading": "Ce qui a changé",
    "first_run": "C'est la première exécution de la tâche {task} : rien à comparer pour l'instant.",
}


def scheduled(task: str, language: str) -> dict[str, Any]:
    """The configurable of a run the schedule ``task`` starts (``schedules/guard.py`` completes it so)."""
    return {"task": task, "schedule": task, "user_id": USER, "clarify": False, "report_language": language}


def translator(reply: str) -> dict[str, Any]:
    """The utility model's answer to the digest's translation request."""
    return agent(Role.TRANSLATION, turn(content=reply))


def translated(run: Any) -> int:
    (usage,) = run.of_type("usage")
    return usage["per_role"].get("translation", {}).get("model_calls", 0)


async def test_a_french_schedule_opens_each_report_with_the_french_digest_translated_once(agent_server, scripted, web):
    client = get_client(url=agent_server.url)
    url = web.set_page("norre-bay-fr", title="Norre Bay kelp farm", paragraphs=[FARM_BEFORE, "It covers 40 hectares."])
    scripted.set_scenario(farm_watch(url, FARM_BEFORE, translator(json.dumps(FRENCH, ensure_ascii=False))))

    first = await stream_run(client, QUESTION, configurable=scheduled("varech-fr", "fr"), timeout=180)

    assert end_of(first) == ("done", "report_delivered")
    opening = "# Norre Bay kelp\n\n## Ce qui a changé\n\nC'est la première exécution de la tâche varech-fr : rien"
    assert first.values["final_report"].startswith(opening)
    assert first.values["digest"]["markdown"].startswith("## Ce qui a changé\n\nC'est la première exécution")
    [asked] = requests_of(scripted, Role.TRANSLATION)
    assert "into French" in message_text(asked["body"]["messages"][0])
    assert json.loads(message_text(asked["body"]["messages"][1])) == ENGLISH_WORDING.model_dump()
    assert translated(first) == 1, "metered as a side call of its own role"

    # The page changes; the next run reports the moved figure under French headings, and asks for no wording.
    web.set_page("norre-bay-fr", title="Norre Bay kelp farm", paragraphs=[FARM_AFTER, "It covers 40 hectares."])
    scripted.set_scenario(farm_watch(url, FARM_AFTER))

    second = await stream_run(client, QUESTION, configurable=scheduled("varech-fr", "fr"), timeout=180)

    assert end_of(second) == ("done", "report_delivered")
    report, digest = second.values["final_report"], second.values["digest"]
    assert report.startswith("# Norre Bay kelp\n\n## Ce qui a changé depuis le ")
    assert f"**Chiffres qui ont bougé:**\n- 1,240 tonnes → 1,310 tonnes ({url})" in report
    assert digest["material"] and digest["markdown"].startswith("## Ce qui a changé depuis le ")
    assert digest["markdown"] in report, "the report and the digest key say the same"
    assert requests_of(scripted, Role.TRANSLATION) == [] and translated(second) == 0, "kept for the process"
    assert not [s for s in second.statuses("warning") if s.get("reason") == "digest_in_english"]


async def test_a_translation_that_comes_back_as_prose_leaves_the_digest_in_english_with_a_warning(
    agent_server, scripted, web
):
    url = web.set_page("norre-bay-de", title="Norre Bay kelp farm", paragraphs=[FARM_BEFORE, "It covers 40 hectares."])
    scripted.set_scenario(farm_watch(url, FARM_BEFORE, translator("Gerne! Hier ist die Übersetzung.")))

    run = await stream_run(agent_server.url, QUESTION, configurable=scheduled("seetang-de", "de"), timeout=180)

    assert end_of(run) == ("done", "report_delivered")
    assert run.values["final_report"].startswith("# Norre Bay kelp\n\n## What changed\n\nThis is the first run")
    assert run.values["digest"]["markdown"].startswith(
        "## What changed\n\nThis is the first run of the task seetang-de"
    )
    [warning] = [s for s in run.statuses("warning") if s.get("reason") == "digest_in_english"]
    assert "could not be put into German" in warning["detail"] and "holds no JSON object" in warning["detail"]
    assert len(requests_of(scripted, Role.TRANSLATION)) == 1 and translated(run) == 1
