"""Run settings: the model price tiers (``tiers``), their per-run resolution (``resolve``) and the
documentation generated from them (``docgen``; ``python -m deep_research_agent.settings``)."""

from .docgen import env_example, markdown_table, settings_table
from .resolve import ResearchConfig
from .tiers import DEFAULT_BASE_URL, MODEL_TIERS, SLOTS, TIER_ORDER, ModelSpec, Slot, Tier

__all__ = [
    "DEFAULT_BASE_URL",
    "MODEL_TIERS",
    "SLOTS",
    "TIER_ORDER",
    "ModelSpec",
    "ResearchConfig",
    "Slot",
    "Tier",
    "env_example",
    "markdown_table",
    "settings_table",
]
