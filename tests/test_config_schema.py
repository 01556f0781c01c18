"""The assistant's config_schema: every per-run setting, as docs/configuration.md's table states it, in valid JSON Schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from langgraph.warnings import LangGraphDeprecatedSinceV10
from pydantic import TypeAdapter

from deep_research_agent.graph import build_graph
from deep_research_agent.settings import TIER_ORDER, ResearchConfig, config_json_schema, settings_table
from deep_research_agent.settings.resolve import LEGACY_MODEL_KEYS

SCHEMA = config_json_schema()
PER_RUN = [row for row in settings_table() if row["configurable"] != "—"]
SECRET_KEYS = ("apiKeys.OPENAI_API_KEY", "apiKeys.TAVILY_API_KEY", "sandbox_token")


def keys_of(row: dict[str, str]) -> list[str]:
    return row["configurable"].split(" / ")


def prop(dotted: str) -> dict[str, Any]:
    """The schema of one configurable key, following ``$ref`` into ``$defs`` for a nested group."""
    node = SCHEMA
    for part in dotted.split("."):
        node = node["properties"][part]
        if "$ref" in node:
            node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def as_table_cell(default: Any) -> str:
    """A JSON default written the way the configuration table (docs/configuration.md) writes it."""
    if isinstance(default, list):
        return ",".join(str(item) for item in default)
    if isinstance(default, bool):
        return str(default).lower()
    return str(default)


def listed_keys() -> set[str]:
    """Every configurable key the schema lists, a nested one by its dotted name."""
    keys = set()
    for name, schema in SCHEMA["properties"].items():
        if "$ref" in schema:
            keys |= {f"{name}.{key}" for key in prop(name)["properties"]}
        else:
            keys.add(name)
    return keys


def test_the_schema_is_valid_json_schema():
    Draft202012Validator.check_schema(SCHEMA)


def test_the_schema_lists_exactly_the_primary_key_of_every_per_run_setting():
    assert listed_keys() == {keys_of(row)[0] for row in PER_RUN}


def test_no_operator_only_setting_alias_or_legacy_key_is_listed():
    operator_only = {row["field"] for row in settings_table() if row["configurable"] == "—"}
    aliases = {alias for row in PER_RUN for alias in keys_of(row)[1:]}
    names = set(SCHEMA["properties"]) | {key.rsplit(".", 1)[-1] for key in listed_keys()}

    assert operator_only and aliases
    assert not names & (operator_only | aliases | LEGACY_MODEL_KEYS)


@pytest.mark.parametrize("row", [r for r in PER_RUN if keys_of(r)[0] not in SECRET_KEYS], ids=lambda r: r["field"])
def test_a_setting_has_its_documented_default_and_description_and_a_type_its_default_fits(row):
    key, *aliases = keys_of(row)
    schema = prop(key)

    assert as_table_cell(schema["default"]) == row["default"]
    expected = row["description"] + (f" Also read from {', '.join(aliases)}." if aliases else "")
    assert schema["description"] == expected
    assert "type" in schema and Draft202012Validator(schema).is_valid(schema["default"])


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_a_key_is_a_write_only_password_with_its_readme_description_and_no_default(key):
    [row] = [r for r in PER_RUN if keys_of(r)[0] == key]
    schema = prop(key)

    assert schema["type"] == "string" and schema["writeOnly"] is True and schema["format"] == "password"
    assert schema["description"] == row["description"]
    assert not {"default", "examples", "example", "const", "enum"} & schema.keys()


def test_every_key_is_optional_since_a_run_may_leave_any_out():
    assert "required" not in SCHEMA and "required" not in prop("apiKeys")


def test_model_tier_offers_the_tier_names_in_order():
    assert prop("model_tier")["enum"] == list(TIER_ORDER)


@pytest.mark.parametrize(
    "key, json_type",
    [("max_tool_calls", "integer"), ("max_run_seconds", "number"), ("streaming", "boolean"), ("base_url", "string")],
)
def test_each_setting_has_the_json_type_of_its_field(key, json_type):
    assert prop(key)["type"] == json_type


def test_list_settings_are_arrays_of_strings_or_objects():
    assert prop("streaming_denylist")["items"] == {"type": "string"}
    server = SCHEMA["$defs"][prop("mcp_servers")["items"]["$ref"].rsplit("/", 1)[1]]
    assert server["type"] == "object" and set(server["required"]) == {"label", "url"}


def test_the_legacy_per_model_keys_are_named_as_ignored():
    assert all(legacy in SCHEMA["description"] for legacy in LEGACY_MODEL_KEYS)
    assert "ignored" in SCHEMA["description"]


@pytest.mark.parametrize(
    "configurable",
    [
        {"model_tier": "low", "max_tool_calls": 40, "apiKeys": {"OPENAI_API_KEY": "sk-run"}},
        {"streaming_denylist": ["flash"], "mcp_servers": [{"label": "docs", "url": "http://127.0.0.1:9/mcp"}]},
        # The server adds its own keys to every run's configurable.
        {"thread_id": "t-1", "max_react_tool_calls": 5},
    ],
)
def test_the_schema_accepts_a_configurable_a_run_may_send(configurable):
    assert Draft202012Validator(SCHEMA).is_valid(configurable)


@pytest.mark.parametrize(
    "configurable",
    [{"model_tier": "platinum"}, {"max_tool_calls": -1}, {"temperature": "hot"}, {"apiKeys": {"OPENAI_API_KEY": 7}}],
)
def test_the_schema_refuses_a_value_the_resolver_would_not_use(configurable):
    assert not Draft202012Validator(SCHEMA).is_valid(configurable)


def test_a_configurable_of_the_schema_defaults_resolves_to_the_defaults_without_a_warning():
    configurable = {key: schema["default"] for key, schema in SCHEMA["properties"].items() if "default" in schema}

    resolved = ResearchConfig.resolve({"configurable": configurable}, environ={"OPENAI_API_KEY": "sk-env"})

    assert resolved.warnings == () and resolved.problems == ()
    assert resolved == ResearchConfig.resolve({}, environ={"OPENAI_API_KEY": "sk-env"})


@pytest.mark.filterwarnings("ignore::langgraph.warnings.LangGraphDeprecatedSinceV10")
def test_the_compiled_graph_publishes_the_schema_as_config_schema_and_sets_no_context_schema():
    environ = {"OPENAI_API_KEY": "sk-server-key-0123456789", "TAVILY_API_KEY": "tvly-server-key-0123"}
    graph = build_graph(ResearchConfig.resolve({}, environ=environ))
    # langgraph-api serves a copy of the graph it was given.
    served = graph.copy(update={"store": None})

    configurable = served.config_schema().model_fields["configurable"].annotation
    assert TypeAdapter(configurable).json_schema() == SCHEMA
    # No context schema: langgraph-api would filter each run's context, and drop keys, by its properties.
    assert served.context_schema is None and served.get_context_jsonschema() is None
    assert not any(secret in json.dumps(SCHEMA) for secret in environ.values())


def test_config_schema_still_includes_the_runnable_config_fields_asked_for():
    graph = build_graph(ResearchConfig.resolve({}, environ={"OPENAI_API_KEY": "sk-env"}))

    with pytest.warns(LangGraphDeprecatedSinceV10):
        fields = graph.config_schema(include=["recursion_limit"]).model_fields

    assert set(fields) == {"recursion_limit", "configurable"}
