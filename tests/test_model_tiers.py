"""Invariants of ``MODEL_TIERS``: the named price packages and the prices cost metering relies on."""

from __future__ import annotations

import pytest

from deep_research_agent.settings import MODEL_TIERS, SLOTS, TIER_ORDER, ModelSpec, Tier

TIERS = ["extra-low", "low", "mid", "high"]
SLOT_NAMES = ["research", "subagent", "utility", "compaction", "coding"]


def test_the_tiers_are_exactly_extra_low_low_mid_high_in_price_order():
    assert list(MODEL_TIERS) == TIERS
    assert list(TIER_ORDER) == TIERS


def test_every_tier_has_exactly_the_five_slots():
    assert list(SLOTS) == SLOT_NAMES
    assert list(Tier.model_fields) == SLOT_NAMES


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("slot", SLOT_NAMES)
def test_every_model_carries_positive_prices_and_a_context_window_as_data(tier, slot):
    spec = MODEL_TIERS[tier].slot(slot)

    assert isinstance(spec, ModelSpec)
    assert "/" in spec.slug
    assert spec.input_usd_per_mtok > 0
    assert spec.output_usd_per_mtok > 0
    assert isinstance(spec.context_window, int)
    assert spec.context_window > 0


@pytest.mark.parametrize("tier", TIERS)
def test_the_subagent_model_is_never_pricier_than_the_orchestrators(tier):
    research, subagent = MODEL_TIERS[tier].research, MODEL_TIERS[tier].subagent

    assert subagent.input_usd_per_mtok <= research.input_usd_per_mtok
    assert subagent.output_usd_per_mtok <= research.output_usd_per_mtok


@pytest.mark.parametrize(("lower", "higher"), list(zip(TIERS, TIERS[1:], strict=False)))
def test_each_tier_is_pricier_than_the_one_below_on_the_research_slot(lower, higher):
    assert MODEL_TIERS[higher].research.blended_usd_per_mtok > MODEL_TIERS[lower].research.blended_usd_per_mtok


@pytest.mark.parametrize("tier", TIERS)
def test_the_coding_model_differs_from_the_subagent_fleet_model(tier):
    assert MODEL_TIERS[tier].coding.slug != MODEL_TIERS[tier].subagent.slug


SPEC = ModelSpec(slug="test/model", input_usd_per_mtok=2.0, output_usd_per_mtok=8.0, context_window=128_000)


def test_blended_price_is_input_plus_output_per_million_tokens():
    assert SPEC.blended_usd_per_mtok == pytest.approx(10.0)


def test_cost_is_priced_per_million_input_and_output_tokens():
    assert SPEC.cost_usd(input_tokens=1_000_000, output_tokens=250_000) == pytest.approx(2.0 + 2.0)


def test_cost_of_a_small_call():
    assert SPEC.cost_usd(input_tokens=1_500, output_tokens=500) == pytest.approx((1_500 * 2.0 + 500 * 8.0) / 1e6)


def test_cached_input_is_billed_at_a_tenth_of_the_input_price():
    cost = SPEC.cost_usd(input_tokens=1_000_000, output_tokens=0, cached_tokens=400_000)

    assert cost == pytest.approx(600_000 * 2.0 / 1e6 + 400_000 * 2.0 * 0.1 / 1e6)  # 1.2 + 0.08


def test_a_fully_cached_prompt_costs_a_tenth_of_a_fresh_one():
    fresh = SPEC.cost_usd(input_tokens=100_000, output_tokens=0)
    cached = SPEC.cost_usd(input_tokens=100_000, output_tokens=0, cached_tokens=100_000)

    assert cached == pytest.approx(fresh * 0.1)


def test_no_tokens_cost_nothing():
    assert SPEC.cost_usd(input_tokens=0, output_tokens=0) == 0


def test_the_content_block_types_langchain_checks_every_message_against_are_computed_once():
    import langchain_core.messages.content as content

    from deep_research_agent.modelcalls import models  # noqa: F401 - importing it memoises the lookup

    block_types = content._get_data_content_block_types
    assert hasattr(block_types, "cache_info"), "models.py no longer memoises langchain-core's block-type lookup"
    assert block_types.__wrapped__() == block_types() and "image" in block_types()
    before = block_types.cache_info().hits
    assert content.is_data_content_block({"type": "image", "url": "https://example.org/a.png"})
    assert not content.is_data_content_block({"type": "text", "text": "plain", "cache_control": {"type": "ephemeral"}})
    assert block_types.cache_info().hits >= before + 2
