"""Skills: the catalog is read once from the folder; prompts list names and descriptions, never bodies; a
missing folder or a broken SKILL.md is a warning, never an error; a run announces each skill it reads once."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from unittest.mock import patch

import pytest
from langchain_core.messages import ToolMessage

from deep_research_agent.extensions import load_skills
from deep_research_agent.extensions.skills import SkillEventsMiddleware, SkillPathsMiddleware
from deep_research_agent.run import bound_run
from deep_research_agent.settings import ResearchConfig
from testkit.guard_calls import event_fields

FIXTURES = Path(__file__).parent / "fixtures" / "extensions"
SHIPPED = Path(__file__).resolve().parents[1] / "skills"


def test_a_skill_is_listed_with_its_name_description_and_mounted_path():
    catalog = load_skills(FIXTURES / "skills")

    [skill] = catalog.skills
    assert (skill.name, skill.path) == ("cited-table", "/skills/cited-table/SKILL.md")
    assert skill.description == "Build a comparison table with a citation in every cell."
    assert catalog.warnings == ()


def test_the_orchestrator_section_lists_names_and_descriptions_but_never_bodies_or_paths():
    section = load_skills(FIXTURES / "skills").orchestrator_section()

    assert "`cited-table`: Build a comparison table with a citation in every cell." in section
    assert "name it in the brief" in section
    assert "BODY-MARKER" not in section and "SKILL.md" not in section


def test_the_subagent_section_says_where_to_read_each_skill():
    section = load_skills(FIXTURES / "skills").subagent_section()
    assert "`cited-table`: `/skills/cited-table/SKILL.md`" in section and "read_file" in section


def test_a_missing_folder_is_an_empty_catalog_with_one_warning(tmp_path):
    catalog = load_skills(tmp_path / "nowhere")

    assert catalog.skills == ()
    assert len(catalog.warnings) == 1 and "does not exist" in catalog.warnings[0]
    assert catalog.orchestrator_section() == catalog.subagent_section() == ""


def test_a_skill_without_front_matter_is_skipped_with_a_warning_naming_it_and_the_others_load():
    catalog = load_skills(FIXTURES / "skills_broken")

    assert [s.name for s in catalog.skills] == ["cited-table"]
    [warning] = catalog.warnings
    assert "'no-front-matter'" in warning and "front matter" in warning


def test_skill_at_finds_a_skill_by_its_file_with_or_without_the_leading_slash():
    catalog = load_skills(FIXTURES / "skills")
    assert catalog.skill_at("/skills/cited-table/SKILL.md").name == "cited-table"
    assert catalog.skill_at("skills/cited-table/SKILL.md").name == "cited-table"
    assert catalog.skill_at("/skills/cited-table/other.md") is None


def test_the_shipped_skill_loads_cleanly():
    catalog = load_skills(SHIPPED)
    assert [s.name for s in catalog.skills] == ["source-reliability"] and catalog.warnings == ()


def test_the_default_folders_are_the_projects_whatever_the_working_directory():
    settings = ResearchConfig.resolve(None, environ={})
    assert Path(settings.skills_dir) == SHIPPED
    assert Path(settings.custom_tools_dir) == SHIPPED.parent / "custom_tools"


def _read(path: str, status: str = "success"):
    request = SimpleNamespace(tool_call={"name": "read_file", "args": {"file_path": path}, "id": "c1"})

    async def handler(_request):
        return ToolMessage("body", tool_call_id="c1", status=status)

    return request, handler


async def _announced(middleware, *reads: tuple[str, str]) -> list[dict]:
    with patch("deep_research_agent.extensions.skills.emit") as emit:
        for path, status in reads:
            await middleware.awrap_tool_call(*_read(path, status))
    return [event_fields(event) for (event,), _ in emit.call_args_list]


@pytest.mark.anyio
async def test_the_skill_event_fires_on_the_first_successful_read_of_each_run_only():
    middleware = SkillEventsMiddleware(load_skills(FIXTURES / "skills"))
    first_read = ("/skills/cited-table/SKILL.md", "success")
    with bound_run():
        events = await _announced(
            middleware,
            ("/skills/cited-table/SKILL.md", "error"),
            first_read,
            first_read,
            ("/skills/other/SKILL.md", "success"),
        )
    assert events == [
        {"type": "skill", "name": "cited-table", "path": "/skills/cited-table/SKILL.md", "state": "applied"}
    ]

    with bound_run():
        assert len(await _announced(middleware, first_read)) == 1, "the next run (turn) announces it again"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("web_fetch", "then"),
    [
        (True, "read it with web_fetch."),
        (False, "this run reads no web pages."),
    ],
)
async def test_read_file_given_a_web_address_is_told_how_to_read_it_and_opens_nothing(web_fetch, then):
    request, handler = _read("https://a.example/p", "success")
    opened = []

    async def opening(request):
        opened.append(request)
        return await handler(request)

    result = await SkillPathsMiddleware(web_fetch=web_fetch).awrap_tool_call(request, opening)

    assert opened == [] and result.status == "error"
    assert result.text == (
        "TOOL ERROR (read_file, permanent): https://a.example/p is a web address, and read_file opens only the "
        f"skill files under /skills/: {then}"
    )


@pytest.mark.anyio
async def test_read_file_given_a_skill_path_opens_it():
    result = await SkillPathsMiddleware(web_fetch=True).awrap_tool_call(
        *_read("/skills/cited-table/SKILL.md", "success")
    )

    assert result.text == "body" and result.status == "success"
