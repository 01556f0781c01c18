"""The graph factory under any server: settings from the agent's own env file, and state reads without a run."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from deep_research_agent.graph import make_graph
from deep_research_agent.settings import ENV_FILE_VARIABLE, ResearchConfig, load_env_file

pytestmark = pytest.mark.anyio


def test_the_env_file_fills_in_what_the_environment_lacks_and_the_environment_wins(tmp_path: Path):
    env_file = tmp_path / "agent.env"
    env_file.write_text(
        "# team settings\nDRA_MODEL_TIER=mid\nexport DRA_MAX_RETRIES='5'\nOPENAI_API_KEY=sk-from-file\n"
    )
    environ = {ENV_FILE_VARIABLE: str(env_file), "OPENAI_API_KEY": "sk-from-environment"}

    added = load_env_file(environ)

    assert sorted(added) == ["DRA_MAX_RETRIES", "DRA_MODEL_TIER"]
    settings = ResearchConfig.resolve(None, environ=environ)
    assert (settings.model_tier, settings.max_retries) == ("mid", 5)
    assert settings.openai_api_key.get_secret_value() == "sk-from-environment"


def test_a_named_env_file_that_is_missing_is_reported_and_sets_nothing(tmp_path: Path, caplog):
    environ = {ENV_FILE_VARIABLE: str(tmp_path / "absent.env")}

    with caplog.at_level(logging.WARNING):
        assert load_env_file(environ) == ()

    assert environ == {ENV_FILE_VARIABLE: str(tmp_path / "absent.env")}
    assert "absent.env" in caplog.text and "not a readable file" in caplog.text


async def test_a_state_read_without_the_runs_configurable_builds_a_graph_with_no_key_anywhere(monkeypatch):
    # What Aegra passes when a client reads a thread's state: the thread and the caller, nothing of the run.
    for key in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "TAVILY_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    config = {
        "configurable": {
            "thread_id": "5f0c6e9e-0000-4000-8000-000000000000",
            "user_id": "alice",
            "user_display_name": "alice",
            "langgraph_auth_user": SimpleNamespace(identity="alice"),
        }
    }

    graph = await make_graph(config)

    assert "model" in graph.get_graph().nodes
    assert ResearchConfig.resolve(config).problems, "the missing key is a problem the run reports, not a crash"


async def test_runs_that_start_together_on_a_cold_cache_share_one_graph_build(monkeypatch):
    import asyncio

    from deep_research_agent import graph as graph_module

    builds = []
    real_build = graph_module.build_graph

    def counting_build(settings, **kwargs):
        builds.append(settings.cache_key())
        return real_build(settings, **kwargs)

    monkeypatch.setattr(graph_module, "build_graph", counting_build)
    monkeypatch.setattr(graph_module, "_graphs", type(graph_module._graphs)())
    config = {"configurable": {"apiKeys": {"OPENAI_API_KEY": "sk-cold-cache"}, "max_retries": 1}}

    graphs = await asyncio.gather(*(make_graph(config) for _ in range(8)))

    assert len(builds) == 1 and all(g is graphs[0] for g in graphs)
    assert await make_graph(config) is graphs[0] and len(builds) == 1
