"""Settings and decisions for local model servers: per-slot model names, prices, context windows, caching, triage."""

from __future__ import annotations

import pytest

from deep_research_agent.settings import ResearchConfig

LOCAL = {"OPENAI_API_KEY": "none", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}


def resolve(environ: dict[str, str], configurable: dict | None = None) -> ResearchConfig:
    return ResearchConfig.resolve({"configurable": configurable or {}}, environ)


def test_one_local_model_fills_every_slot_priced_at_zero_with_its_own_window() -> None:
    names = {
        f"DRA_MODEL_{slot.upper()}": "qwen2.5-coder"
        for slot in ("research", "subagent", "utility", "compaction", "coding")
    }
    tier = resolve({**LOCAL, **names, "DRA_CONTEXT_WINDOWS": "qwen2.5-coder=16384"}).tier
    for slot in ("research", "subagent", "utility", "compaction", "coding"):
        spec = tier.slot(slot)
        assert (spec.slug, spec.context_window, spec.cost_usd(1_000_000, 1_000_000)) == ("qwen2.5-coder", 16384, 0)


def test_a_slot_override_without_a_window_gets_the_unknown_models_window() -> None:
    assert resolve({**LOCAL, "DRA_MODEL_RESEARCH": "llama3.1:8b"}).tier.research.context_window == 16_384


def test_the_tiers_models_cost_nothing_on_a_local_endpoint_but_their_price_on_openrouter() -> None:
    assert resolve(LOCAL).tier.research.input_usd_per_mtok == 0
    assert resolve({"OPENAI_API_KEY": "k"}).tier.research.input_usd_per_mtok > 0
    assert resolve({**LOCAL, "DRA_PRICED": "on"}).tier.research.input_usd_per_mtok > 0


def test_configured_prices_win_and_malformed_entries_warn() -> None:
    settings = resolve({**LOCAL, "DRA_MODEL_RESEARCH": "m", "DRA_MODEL_PRICES": "m=0.5/1.5,broken,x=1"})
    assert (settings.tier.research.input_usd_per_mtok, settings.tier.research.output_usd_per_mtok) == (0.5, 1.5)
    assert sum("model_prices" in w for w in settings.warnings) == 2


def test_a_window_from_the_settings_reaches_compaction() -> None:
    from deep_research_agent.graph import compaction_limits

    settings = resolve({**LOCAL, "DRA_MODEL_RESEARCH": "m", "DRA_CONTEXT_WINDOWS": "m=8000"})
    assert compaction_limits(settings, "research").context_window == 8000


@pytest.mark.parametrize(
    ("base_url", "mode", "caches"),
    [
        ("https://openrouter.ai/api/v1", "auto", True),
        ("https://api.anthropic.com/v1", "auto", True),
        ("http://127.0.0.1:8080/v1", "auto", False),
        ("http://127.0.0.1:8080/v1", "on", True),
        ("https://openrouter.ai/api/v1", "false", False),
    ],
)
def test_prompt_caching_is_on_by_default_only_where_it_is_honoured(base_url: str, mode: str, caches: bool) -> None:
    assert (
        resolve({"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": base_url, "DRA_PROMPT_CACHING": mode}).caches_prompts
        is caches
    )


def test_the_triage_router_can_be_turned_off() -> None:
    from deep_research_agent.graph import build_graph

    def middleware_names(environ: dict[str, str]) -> set[str]:
        graph = build_graph(resolve(environ))
        return {node for node in graph.get_graph().nodes}

    assert resolve({**LOCAL, "DRA_TRIAGE": "false"}).triage is False
    assert resolve(LOCAL).triage is True
    assert middleware_names({**LOCAL, "DRA_TRIAGE": "false"}) == middleware_names(LOCAL)  # the router adds no step
