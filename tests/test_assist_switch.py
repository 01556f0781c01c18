"""Specification of the assist's switch: ``model_assist`` (auto | on | off), decided per agent on its slot's model.

``auto`` never helps one of the tiers' hosted models, whatever the endpoint; any other model is helped when its
slot is declared small, when its name is of a known small family, or under the ``local`` profile.
"""

from __future__ import annotations

import pytest

from deep_research_agent.assist import decide_assist, hosted_models, is_small_model
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.names import Role
from deep_research_agent.graph import assist_for
from deep_research_agent.settings import MODEL_TIERS, SLOTS, ResearchConfig

HOSTED = "deepseek/deepseek-v4-flash"

# mode, model, declared small, local profile -> on, reason
DECISIONS = [
    ("auto", HOSTED, False, False, False, "hosted_model"),
    ("auto", HOSTED, True, True, False, "hosted_model"),
    ("auto", "qwen2.5-7b-instruct", False, False, False, "not_small"),
    ("auto", "qwen2.5-7b-instruct", True, False, True, "declared_small"),
    ("auto", "qwen2.5-7b-instruct", False, True, True, "local_profile"),
    ("auto", "qwen2.5-coder-0.5b", False, False, True, "small_family"),
    ("on", HOSTED, False, False, True, "set_on"),
    ("off", "qwen2.5-coder-0.5b", True, True, False, "set_off"),
]


@pytest.mark.parametrize(("mode", "model", "declared", "local", "on", "reason"), DECISIONS)
def test_who_gets_the_assist(mode: str, model: str, declared: bool, local: bool, on: bool, reason: str) -> None:
    decision = decide_assist(mode, model=model, declared_small=declared, local_profile=local)

    assert (decision.on, decision.reason, decision.model) == (on, reason, model)


@pytest.mark.parametrize(
    ("name", "small"),
    [
        ("qwen2.5-coder-0.5b", True),
        ("qwen2.5-coder-0.5b-instruct-q4_k_m", True),
        ("qwen2.5:1.5b", True),
        ("llama-3.2-3b-instruct", True),
        ("gemma-3-270m", True),
        ("SmolLM2-135M-Instruct", True),
        ("smollm2", True),
        ("TinyLlama-1.1B-Chat", True),
        ("phi-3-mini-4k-instruct", True),
        ("qwen2.5-7b-instruct", False),
        ("qwen2.5:7b", False),
        ("mistral-small-24b", False),
        ("qwen/qwen3.8-27b", False),
        ("gpt-5.6-luna", False),
        ("my-model", False),
        # A context length is no size, and a mixture of experts is as large as its whole.
        ("Qwen2.5-7B-Instruct-1M", False),
        ("qwen-turbo-1m", False),
        ("qwen3-30b-a3b", False),
        ("granite-3.1-1b-a400m", True),
    ],
)
def test_a_small_model_is_known_by_its_family_or_a_size_under_4b(name: str, small: bool) -> None:
    assert is_small_model(name) is small


def test_every_tier_model_is_hosted_and_none_is_known_as_small() -> None:
    names = {tier.slot(slot).slug for tier in MODEL_TIERS.values() for slot in ("research", "subagent", "coding")}
    assert names <= hosted_models()
    assert not any(is_small_model(name) for name in hosted_models())


def test_a_mode_other_than_auto_on_or_off_is_refused() -> None:
    with pytest.raises(KnobError, match="mode"):
        decide_assist("sometimes", model=HOSTED, declared_small=False, local_profile=False)


def settings(**environ: str) -> ResearchConfig:
    return ResearchConfig.resolve({}, environ={"OPENAI_API_KEY": "sk-test-0000", **environ})


def test_the_local_profile_helps_local_models_but_never_the_tiers_models_whatever_the_endpoint() -> None:
    local = {"DRA_PROFILE": "local", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}

    assert assist_for(settings(**local), Role.RESEARCH_SUBAGENT).reason == "hosted_model"
    helped = assist_for(settings(**local, DRA_MODEL_SUBAGENT="qwen2.5-7b"), Role.RESEARCH_SUBAGENT)
    assert (helped.on, helped.reason, helped.model) == (True, "local_profile", "qwen2.5-7b")
    assert assist_for(settings(**local, DRA_MODEL_SUBAGENT="qwen2.5-7b"), Role.ORCHESTRATOR).reason == "hosted_model"


def test_a_slot_declared_small_helps_the_agents_on_it_only() -> None:
    config = settings(DRA_SMALL_MODEL_SLOTS="subagent, Utility", DRA_MODEL_SUBAGENT="mine", DRA_MODEL_RESEARCH="mine")

    assert config.small_model_slots == ("subagent", "utility")
    assert assist_for(config, Role.RESEARCH_SUBAGENT).reason == "declared_small"
    assert assist_for(config, Role.ORCHESTRATOR).reason == "not_small"


def test_the_setting_comes_from_the_run_or_the_environment_and_a_bad_value_warns() -> None:
    assert ResearchConfig.resolve({"configurable": {"model_assist": "on"}}, environ={}).model_assist == "on"
    assert settings(DRA_MODEL_ASSIST="false").model_assist == "off"
    bad = settings(DRA_MODEL_ASSIST="maybe", DRA_SMALL_MODEL_SLOTS="subagent,tiny")
    assert bad.model_assist == "auto" and bad.small_model_slots == ("subagent",)
    assert any("model_assist 'maybe'" in warning for warning in bad.warnings)
    assert any("small_model_slots: 'tiny' is not a slot" in warning for warning in bad.warnings)


def test_the_local_profile_warns_of_each_slot_still_on_a_tiers_hosted_model() -> None:
    partly = settings(DRA_PROFILE="local", DRA_MODEL_RESEARCH="qwen2.5-7b", DRA_MODEL_SUBAGENT="qwen2.5-7b")
    named = settings(DRA_PROFILE="local", **{f"DRA_MODEL_{slot.upper()}": "qwen2.5-7b" for slot in SLOTS})

    [warning] = [w for w in partly.warnings if w.startswith("DRA_PROFILE=local")]
    assert "no model is named in DRA_MODEL_UTILITY, DRA_MODEL_COMPACTION, DRA_MODEL_CODING:" in warning
    assert "model_assist auto never helps" in warning
    assert not any(w.startswith("DRA_PROFILE=local") for w in named.warnings)
