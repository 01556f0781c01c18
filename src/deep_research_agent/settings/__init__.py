"""Run settings: the model price tiers (``tiers``), their per-run resolution (``resolve``), the
documentation generated from them (``docgen``; ``python -m deep_research_agent.settings``) and the JSON
Schema of the per-run keys that the assistant publishes as its ``config_schema`` (``schema``); the search
backends a run offers and their base URLs (``search``); the agent's own env file, loaded under the process environment whatever the server (``environment``);
the feature settings sub-models ``ResearchConfig`` is composed of, each handed to its feature's builders
(``features``)."""

from typing import TYPE_CHECKING

from ..domain.exports import lazy_exports

if TYPE_CHECKING:
    from .docgen import env_example, markdown_table, settings_table
    from .environment import ENV_FILE_VARIABLE, load_env_file, read_dotenv
    from .features import (
        BudgetSettings,
        CorporaSettings,
        EmbeddingSettings,
        ExtensionSettings,
        KnowledgeSettings,
        McpSettings,
        ModelSettings,
        ReaderSettings,
        ResultSettings,
        SandboxSettings,
        ScheduleSettings,
        SearchSettings,
    )
    from .resolve import ResearchConfig
    from .schema import RunSettings, config_json_schema, publish_run_settings
    from .tiers import DEFAULT_BASE_URL, MODEL_TIERS, SLOTS, TIER_ORDER, ModelSpec, Slot, Tier

__all__ = [
    "DEFAULT_BASE_URL",
    "ENV_FILE_VARIABLE",
    "MODEL_TIERS",
    "SLOTS",
    "TIER_ORDER",
    "BudgetSettings",
    "CorporaSettings",
    "EmbeddingSettings",
    "ExtensionSettings",
    "KnowledgeSettings",
    "McpSettings",
    "ModelSettings",
    "ModelSpec",
    "ReaderSettings",
    "ResearchConfig",
    "ResultSettings",
    "RunSettings",
    "SandboxSettings",
    "ScheduleSettings",
    "SearchSettings",
    "Slot",
    "Tier",
    "config_json_schema",
    "env_example",
    "load_env_file",
    "markdown_table",
    "publish_run_settings",
    "read_dotenv",
    "settings_table",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
