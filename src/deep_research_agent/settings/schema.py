"""The per-run settings as a JSON Schema: the assistant's ``config_schema``, which LangGraph clients read.

``RunSettings`` is generated once per process from ``ResearchConfig``'s field metadata, the same metadata
``docgen`` turns into the README table, so the two cannot drift. It lists every setting a run may set, by
its primary ``configurable`` key, with its type, built-in default and description; an alias is named in
the description. Operator-only settings are left out: a run cannot set them. A dotted key nests
(``apiKeys.OPENAI_API_KEY``). Every key is optional: one a run leaves out falls back to the server's
environment, then to the default. The ``apiKeys`` are secrets (``writeOnly``, ``format: password``) and
carry no default, so the schema never shows a key.

``publish_run_settings`` gives a compiled graph this schema as its ``config_schema``, which langgraph-api
serves from ``GET /assistants/{id}/schemas`` (LangGraph Studio builds its assistant form from it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field, SecretStr, TypeAdapter, create_model
from typing_extensions import TypedDict

from .mcp_servers import McpServerSpec
from .resolve import LEGACY_MODEL_KEYS, ResearchConfig
from .tiers import TIER_ORDER

# A nested group of keys has no field of its own to describe it, so its description lives here.
_GROUPS = {
    "apiKeys": (
        "ApiKeys",
        "Keys for this run only; the server's own keys apply to any left out. The thread's checkpoint "
        "metadata records the run's configurable, so in shared deployments keep keys in the server's environment.",
    ),
}


def _key_type(name: str, annotation: Any, field_default: Any, description: str) -> Any:
    """The type a client sends for one setting, annotated with its default and description."""
    if annotation == SecretStr | None:
        return Annotated[SecretStr, Field(description=description)]
    if name == "model_tier":
        annotation = Literal[TIER_ORDER]
    if name == "mcp_servers":
        annotation = list[McpServerSpec]
        field_default = []
    if name == "corpora":
        annotation = list[str]
        field_default = []
    # The resolver refuses a negative number for every numeric setting: each is a size, count, duration or price.
    bound = {"ge": 0} if annotation in (int, float) else {}
    return Annotated[annotation, Field(field_default, description=description, **bound)]


def _description(description: str, aliases: Sequence[str]) -> str:
    if not aliases:
        return description
    return f"{description} Also read from {', '.join(aliases)}."


def _group(name: str, keys: dict[str, Any]) -> type:
    title, description = _GROUPS[name]
    nested = TypedDict(title, keys, total=False)  # type: ignore[operator]
    nested.__doc__ = description
    return nested


def _build() -> type:
    """The TypedDict of every per-run key; a dotted key becomes a key of its group's own TypedDict."""
    keys: dict[str, Any] = {}
    for name, field in ResearchConfig.model_fields.items():
        extra = field.json_schema_extra
        if not isinstance(extra, dict) or extra["operator_only"] or not extra["configurable"]:
            continue
        primary, *aliases = extra["configurable"]
        key_type = _key_type(name, field.annotation, field.default, _description(field.description or "", aliases))
        group, _, key = primary.rpartition(".")
        if group:
            keys.setdefault(group, {})[key] = key_type
        else:
            keys[key] = key_type
    settings = TypedDict(  # type: ignore[operator]
        "ResearchConfig", {k: _group(k, v) if isinstance(v, dict) else v for k, v in keys.items()}, total=False
    )
    settings.__doc__ = (
        "Per-run settings of deep_research_agent, read from the run's configurable. A key left out takes the "
        "server's environment variable, then the default shown. Legacy per-model keys "
        f"({', '.join(sorted(LEGACY_MODEL_KEYS))}) are ignored with a warning: models are chosen by model_tier."
    )
    return settings


RunSettings = _build()
"""The configurable keys a run may set, as a total=False TypedDict (no key is required)."""


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of ``RunSettings``, exactly as langgraph-api serves it as ``config_schema``."""
    return TypeAdapter(RunSettings).json_schema()


class _RunSettingsGraph(CompiledStateGraph):
    """A compiled graph whose ``config_schema`` describes its ``configurable`` as ``RunSettings``.

    langgraph derives that schema from ``context_schema``, but a graph with a context schema has
    langgraph-api filter each run's context to the schema's keys and, for a run sent with ``context``,
    drop every other key from its configurable too: aliases and legacy keys would silently vanish. So only
    the published schema is overridden, and every run still receives its configurable as sent.
    """

    def config_schema(self, *, include: Sequence[str] | None = None) -> type[BaseModel]:
        # The base keeps the RunnableConfig fields a caller includes; it warns that config_schema is deprecated.
        base = super().config_schema(include=include)
        return create_model(base.__name__, __base__=base, configurable=(RunSettings, None))


def publish_run_settings(graph: CompiledStateGraph) -> CompiledStateGraph:
    """The same graph, publishing ``RunSettings`` as its ``config_schema``.

    Built the way ``Pregel.copy`` builds a copy; ``copy`` and ``with_config`` keep the class, so the
    schema survives them and the copy langgraph-api makes of the graph for each request.
    """
    return _RunSettingsGraph(**{k: v for k, v in vars(graph).items() if k != "__orig_class__"})
