"""The model price tiers: the one reviewed place where tier names map to models.

A tier fills five slots (``SLOTS``) with a ``ModelSpec`` each; a spec carries its price ($ per million
input/output tokens) and context window as data, so cost metering and compaction can use them. Runs
choose a tier by name only (``ResearchConfig.model_tier``); ``DEFAULT_TIER`` is the one they get
otherwise. The slugs are OpenRouter's, which is why ``DEFAULT_BASE_URL`` lives here with them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_TIER = "extra-low"

Slot = Literal["research", "subagent", "utility", "compaction", "coding"]
SLOTS: tuple[Slot, ...] = ("research", "subagent", "utility", "compaction", "coding")


class ModelSpec(BaseModel):
    """One model a tier can use, with the prices cost metering relies on."""

    model_config = ConfigDict(frozen=True)

    slug: str
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    context_window: int

    @property
    def blended_usd_per_mtok(self) -> float:
        return self.input_usd_per_mtok + self.output_usd_per_mtok

    def cost_usd(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """Dollar cost of one call; cached input is billed at a tenth, as caching providers do."""
        fresh = max(input_tokens - cached_tokens, 0)
        return (
            fresh * self.input_usd_per_mtok
            + cached_tokens * self.input_usd_per_mtok * 0.1
            + output_tokens * self.output_usd_per_mtok
        ) / 1_000_000


class Tier(BaseModel):
    """The five model slots of a named price package."""

    model_config = ConfigDict(frozen=True)

    research: ModelSpec
    subagent: ModelSpec
    utility: ModelSpec
    compaction: ModelSpec
    coding: ModelSpec

    def slot(self, name: Slot) -> ModelSpec:
        return getattr(self, name)


def _m(slug: str, input_usd: float, output_usd: float, context_window: int) -> ModelSpec:
    return ModelSpec(
        slug=slug, input_usd_per_mtok=input_usd, output_usd_per_mtok=output_usd, context_window=context_window
    )


_DEEPSEEK_FLASH = _m("deepseek/deepseek-v4-flash", 0.09, 0.18, 1_048_576)
_DEEPSEEK_FLASH_0731 = _m("deepseek/deepseek-v4-flash-0731", 0.07, 0.18, 1_048_576)
_GLM_FLASH = _m("z-ai/glm-5.3-flash", 0.07, 0.25, 200_000)
_QWEN_27B = _m("qwen/qwen3.8-27b", 0.42, 2.55, 262_144)
_GPT_LUNA = _m("openai/gpt-5.6-luna", 0.20, 1.20, 400_000)
_GEMINI_37_FLASH = _m("google/gemini-3.7-flash", 0.75, 3.75, 1_048_576)
_GEMINI_35_LITE = _m("google/gemini-3.5-flash-lite", 0.30, 2.50, 1_048_576)
_GEMINI_36_FLASH = _m("google/gemini-3.6-flash", 0.75, 3.75, 1_048_576)
_GPT_SOL = _m("openai/gpt-5.6-sol", 2.00, 10.00, 400_000)
_GEMINI_3_PREVIEW = _m("google/gemini-3-flash-preview", 0.50, 3.00, 1_048_576)
_DEEPSEEK_PRO = _m("deepseek/deepseek-v4-pro", 1.04, 2.08, 1_048_576)

MODEL_TIERS: dict[str, Tier] = {
    "extra-low": Tier(
        research=_DEEPSEEK_FLASH,
        subagent=_DEEPSEEK_FLASH_0731,
        utility=_DEEPSEEK_FLASH_0731,
        compaction=_DEEPSEEK_FLASH_0731,
        coding=_GLM_FLASH,
    ),
    "low": Tier(
        research=_QWEN_27B,
        subagent=_DEEPSEEK_FLASH,
        utility=_DEEPSEEK_FLASH_0731,
        compaction=_GPT_LUNA,
        coding=_GPT_LUNA,
    ),
    "mid": Tier(
        research=_GEMINI_37_FLASH,
        subagent=_DEEPSEEK_FLASH,
        utility=_GEMINI_35_LITE,
        compaction=_GPT_LUNA,
        coding=_GEMINI_36_FLASH,
    ),
    "high": Tier(
        research=_GPT_SOL,
        subagent=_GEMINI_37_FLASH,
        utility=_GEMINI_35_LITE,
        compaction=_GEMINI_3_PREVIEW,
        coding=_DEEPSEEK_PRO,
    ),
}
TIER_ORDER: tuple[str, ...] = ("extra-low", "low", "mid", "high")
