"""Specification of ``ResearchConfig.resolve``: the run's configurable → the environment → the default.

Every test passes an explicit ``environ`` so the machine's environment never leaks in.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from deep_research_agent.settings import (
    DEFAULT_BASE_URL,
    MODEL_TIERS,
    SLOTS,
    ResearchConfig,
    env_example,
    settings_table,
)
from deep_research_agent.settings import features as settings_features

MODEL_KEY = "sk-or-v1-model-key-0123456789abcdef"
TAVILY_KEY = "tvly-dev-search-key-0123456789"
KEYED = {"OPENAI_API_KEY": MODEL_KEY}
ENV_EXAMPLE = Path(__file__).resolve().parents[1] / ".env.example"


def resolve(configurable: dict[str, Any] | None = None, environ: dict[str, str] | None = None) -> ResearchConfig:
    return ResearchConfig.resolve({"configurable": configurable or {}}, environ=environ or {})


def plain(value: Any) -> Any:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


# --- resolution order -------------------------------------------------------------------------

# field, run configurable, env var, env value, value from the configurable, value from the env
ORDER_CASES = [
    pytest.param("mcp_prompt", {"mcp_prompt": "run"}, "DRA_MCP_PROMPT", "env", "run", "env", id="str"),
    pytest.param("model_tier", {"model_tier": "high"}, "DRA_MODEL_TIER", "mid", "high", "mid", id="tier"),
    pytest.param("max_retries", {"max_retries": 5}, "DRA_MAX_RETRIES", "7", 5, 7, id="int"),
    pytest.param("temperature", {"temperature": 0.9}, "DRA_TEMPERATURE", "0.5", 0.9, 0.5, id="float"),
    pytest.param("streaming", {"streaming": True}, "DRA_STREAMING", "false", True, False, id="bool"),
    pytest.param(
        "streaming_denylist",
        {"streaming_denylist": ["run-a", "run-b"]},
        "DRA_STREAMING_DENYLIST",
        "env-a, env-b",
        ("run-a", "run-b"),
        ("env-a", "env-b"),
        id="comma-list",
    ),
    pytest.param(
        "openai_api_key",
        {"apiKeys": {"OPENAI_API_KEY": "sk-run-key-123456"}},
        "OPENAI_API_KEY",
        "sk-env-key-123456",
        "sk-run-key-123456",
        "sk-env-key-123456",
        id="secret",
    ),
]


@pytest.mark.parametrize(("field", "configurable", "env", "env_value", "from_run", "from_env"), ORDER_CASES)
def test_the_runs_configurable_beats_the_env_var(field, configurable, env, env_value, from_run, from_env):
    settings = resolve(configurable, {env: env_value})

    assert plain(getattr(settings, field)) == from_run


@pytest.mark.parametrize(("field", "configurable", "env", "env_value", "from_run", "from_env"), ORDER_CASES)
def test_the_env_var_beats_the_default(field, configurable, env, env_value, from_run, from_env):
    settings = resolve({}, {env: env_value})

    assert plain(getattr(settings, field)) == from_env
    assert from_env != plain(ResearchConfig.model_fields[field].default)


@pytest.mark.parametrize(("field", "configurable", "env", "env_value", "from_run", "from_env"), ORDER_CASES)
def test_the_default_applies_when_neither_is_set(field, configurable, env, env_value, from_run, from_env):
    settings = resolve({}, {})

    assert getattr(settings, field) == ResearchConfig.model_fields[field].default


def test_an_empty_configurable_value_falls_through_to_the_env_var():
    settings = resolve({"mcp_prompt": ""}, {"DRA_MCP_PROMPT": "env"})

    assert settings.mcp_prompt == "env"


# --- compatibility aliases ----------------------------------------------------------------------


def test_the_local_profile_caps_output_and_run_time_and_a_setting_given_wins():
    local = resolve({}, {"DRA_PROFILE": "local"})
    assert (local.max_output_tokens, local.max_run_seconds, local.streaming) == (1024, 1800.0, True)

    given = resolve({"max_run_seconds": 600}, {"DRA_PROFILE": "local", "DRA_MAX_OUTPUT_TOKENS": "512"})
    assert (given.max_output_tokens, given.max_run_seconds) == (512, 600.0)


def test_apikeys_openai_api_key_sets_the_model_key():
    settings = resolve({"apiKeys": {"OPENAI_API_KEY": MODEL_KEY}})

    assert plain(settings.openai_api_key) == MODEL_KEY


def test_apikeys_tavily_api_key_sets_the_search_key():
    settings = resolve({"apiKeys": {"TAVILY_API_KEY": TAVILY_KEY}})

    assert plain(settings.tavily_api_key) == TAVILY_KEY


def test_mcp_prompt_is_read_from_the_configurable():
    settings = resolve({"mcp_prompt": "Prefer the docs server."})

    assert settings.mcp_prompt == "Prefer the docs server."


def test_max_react_tool_calls_is_an_alias_of_max_tool_calls():
    settings = resolve({"max_react_tool_calls": 42})

    assert settings.max_tool_calls == 42


def test_max_tool_calls_wins_over_its_alias():
    settings = resolve({"max_tool_calls": 10, "max_react_tool_calls": 42})

    assert settings.max_tool_calls == 10


def test_openrouter_api_key_env_is_a_fallback_for_the_model_key():
    settings = resolve({}, {"OPENROUTER_API_KEY": MODEL_KEY})

    assert plain(settings.openai_api_key) == MODEL_KEY
    assert settings.problems == ()


def test_openai_api_key_env_wins_over_openrouter_api_key():
    settings = resolve({}, {"OPENAI_API_KEY": MODEL_KEY, "OPENROUTER_API_KEY": "sk-or-other-key-999999"})

    assert plain(settings.openai_api_key) == MODEL_KEY


# --- operator-only settings ---------------------------------------------------------------------

# field, per-run value (must be ignored), env var, env value, value read from the env
OPERATOR_ONLY = [
    pytest.param(
        "allowed_base_urls",
        ["https://evil.test/v1"],
        "DRA_ALLOWED_BASE_URLS",
        "https://ok.test/v1",
        ("https://ok.test/v1",),
        id="allowed_base_urls",
    ),
    pytest.param(
        "fetch_allow_hosts",
        ["169.254.169.254"],
        "DRA_FETCH_ALLOW_HOSTS",
        "localhost:8080",
        ("localhost:8080",),
        id="fetch_allow_hosts",
    ),
    pytest.param(
        "fetch_cassette_url",
        "http://evil.test/page",
        "DRA_FETCH_CASSETTE_URL",
        "http://127.0.0.1:9100/page",
        "http://127.0.0.1:9100/page",
        id="fetch_cassette_url",
    ),
    pytest.param(
        "tavily_api_base_url",
        "https://evil.test",
        "TAVILY_API_BASE_URL",
        "http://127.0.0.1:9000",
        "http://127.0.0.1:9000",
        id="tavily_api_base_url",
    ),
    pytest.param(
        "domain_prompt_file",
        "/etc/passwd",
        "DRA_DOMAIN_PROMPT_FILE",
        "/nonexistent/prompt.md",
        "/nonexistent/prompt.md",
        id="domain_prompt_file",
    ),
]


@pytest.mark.parametrize(("field", "run_value", "env", "env_value", "from_env"), OPERATOR_ONLY)
def test_an_operator_only_setting_cannot_be_set_per_run(field, run_value, env, env_value, from_env):
    settings = resolve({field: run_value}, KEYED)

    assert getattr(settings, field) == ResearchConfig.model_fields[field].default


@pytest.mark.parametrize(("field", "run_value", "env", "env_value", "from_env"), OPERATOR_ONLY)
def test_an_operator_only_setting_is_read_from_the_env(field, run_value, env, env_value, from_env):
    settings = resolve({}, {**KEYED, env: env_value})

    assert getattr(settings, field) == from_env


def test_a_run_cannot_allowlist_its_own_base_url():
    settings = resolve({"allowed_base_urls": ["https://evil.test/v1"], "base_url": "https://evil.test/v1"}, KEYED)

    assert settings.base_url == DEFAULT_BASE_URL
    assert any("DRA_ALLOWED_BASE_URLS" in p for p in settings.problems)


def test_a_run_cannot_point_the_domain_prompt_at_a_file(tmp_path):
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text("operator secrets")

    settings = resolve({"domain_prompt_file": str(secret_file)}, KEYED)

    assert settings.domain_prompt == ""


# --- booleans -----------------------------------------------------------------------------------

TRUE_SPELLINGS = ["true", "1", "yes", "on", "TRUE", "Yes", "On", " true "]
FALSE_SPELLINGS = ["false", "0", "no", "off", "FALSE", "No", "oFF", " off "]
TYPOS = ["ture", "flase", "y", "n", "2", "enabled", "nope"]


@pytest.mark.parametrize("spelling", FALSE_SPELLINGS)
def test_a_boolean_turns_off_on_an_explicit_false_spelling(spelling):
    settings = resolve({}, {"DRA_WEB_SEARCH": spelling})

    assert settings.web_search is False
    assert settings.warnings == ()


@pytest.mark.parametrize("spelling", TRUE_SPELLINGS)
def test_a_boolean_turns_on_on_an_explicit_true_spelling(spelling):
    settings = resolve({"web_search": spelling}, {"DRA_WEB_SEARCH": "false"})

    assert settings.web_search is True
    assert settings.warnings == ()


@pytest.mark.parametrize("typo", TYPOS)
def test_a_boolean_typo_keeps_the_default_and_warns_naming_the_value(typo):
    settings = resolve({}, {"DRA_STREAMING": typo})

    assert settings.streaming is True
    assert len(settings.warnings) == 1
    assert "DRA_STREAMING" in settings.warnings[0]
    assert repr(typo) in settings.warnings[0]


def test_a_real_boolean_in_the_configurable_is_used_as_is():
    settings = resolve({"web_fetch": False})

    assert settings.web_fetch is False


# --- numbers and JSON -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "env", "bad"),
    [
        ("max_retries", "DRA_MAX_RETRIES", "three"),
        ("max_retries", "DRA_MAX_RETRIES", "2.5"),
        ("temperature", "DRA_TEMPERATURE", "warm"),
        ("temperature", "DRA_TEMPERATURE", "-0.5"),
        ("request_timeout", "DRA_REQUEST_TIMEOUT", "3 minutes"),
    ],
)
def test_an_invalid_number_keeps_the_default_and_warns(field, env, bad):
    settings = resolve({}, {env: bad})

    assert getattr(settings, field) == ResearchConfig.model_fields[field].default
    assert len(settings.warnings) == 1
    assert env in settings.warnings[0]
    assert repr(bad) in settings.warnings[0]


def test_an_invalid_number_in_the_configurable_warns_naming_the_key():
    settings = resolve({"max_retries": "lots"})

    assert settings.max_retries == 3
    assert any("configurable.max_retries" in w and "'lots'" in w for w in settings.warnings)


@pytest.mark.parametrize(
    ("configurable", "environ", "named"),
    [
        ({"max_cost_usd": "1,50"}, {}, "configurable.max_cost_usd: '1,50' is not a number"),
        ({"max_tool_calls": -5}, {}, "configurable.max_tool_calls: -5 is negative"),
        ({}, {"DRA_MAX_RUN_SECONDS": "nan"}, "DRA_MAX_RUN_SECONDS: 'nan' is not a finite number"),
        ({}, {"DRA_MAX_TOTAL_TOKENS": "4M"}, "DRA_MAX_TOTAL_TOKENS: '4M' is not a whole number"),
        ({"recursion_limit": "4.5k"}, {}, "configurable.recursion_limit: '4.5k' is not a whole number"),
    ],
)
def test_an_unreadable_ceiling_refuses_the_run_instead_of_loosening_the_bound(configurable, environ, named):
    settings = resolve(configurable, {"OPENAI_API_KEY": "sk-test", **environ})

    [problem] = settings.problems
    assert problem.startswith(named) and "Fix the ceiling or leave it out" in problem
    assert settings.warnings == ()


def test_a_json_list_setting_with_bad_json_keeps_the_default_and_warns():
    settings = resolve({}, {"DRA_MCP_SERVERS": '[{"label": "docs", '})

    assert settings.mcp_servers == ()
    assert len(settings.warnings) == 1
    assert "DRA_MCP_SERVERS" in settings.warnings[0]
    assert "JSON" in settings.warnings[0]


@pytest.mark.parametrize(
    "value",
    ['{"label": "docs", "url": "http://docs.test/mcp"}', '["http://docs.test/mcp"]'],
    ids=["json-object", "list-of-strings"],
)
def test_an_mcp_servers_value_that_is_not_a_list_of_objects_warns_instead_of_raising(value):
    settings = resolve({}, {**KEYED, "DRA_MCP_SERVERS": value})

    assert settings.mcp_servers == ()
    assert any("DRA_MCP_SERVERS" in w for w in settings.warnings)


# --- model tiers --------------------------------------------------------------------------------


def test_the_default_tier_is_extra_low():
    settings = resolve({}, KEYED)

    assert settings.model_tier == "extra-low"
    assert settings.tier == MODEL_TIERS["extra-low"]


def test_a_known_tier_selects_its_models():
    settings = resolve({"model_tier": "mid"}, KEYED)

    assert settings.tier == MODEL_TIERS["mid"]


def test_an_unknown_tier_falls_back_to_extra_low_and_warns_naming_it_and_the_known_tiers():
    settings = resolve({"model_tier": "ultra"}, KEYED)

    assert settings.model_tier == "extra-low"
    assert len(settings.warnings) == 1
    warning = settings.warnings[0]
    assert "'ultra'" in warning
    for known in ("extra-low", "low", "mid", "high"):
        assert known in warning


@pytest.mark.parametrize("legacy", ["research_model", "final_report_model", "compression_model", "summarization_model"])
def test_a_legacy_per_model_key_is_ignored_with_a_warning(legacy):
    settings = resolve({legacy: "openai/gpt-4o", "model_tier": "low"}, KEYED)

    assert settings.tier == MODEL_TIERS["low"]
    assert all(settings.tier.slot(slot).slug != "openai/gpt-4o" for slot in SLOTS)
    assert len(settings.warnings) == 1
    assert legacy in settings.warnings[0]


@pytest.mark.parametrize(
    ("configurable", "env"), [({}, {"DRA_MAX_FETCH_CHARS": "5000"}), ({"custom_tool_max_chars": 900}, {})]
)
def test_a_retired_result_limit_is_named_in_a_warning_with_the_setting_that_replaced_it(configurable, env):
    settings = resolve(configurable, {**KEYED, **env})

    [warning] = settings.warnings
    assert "is no longer read: DRA_MAX_RESULT_CHARS bounds every tool result" in warning
    assert settings.max_result_chars == 60000


# --- base_url -----------------------------------------------------------------------------------


def test_the_model_base_url_defaults_to_openrouter():
    settings = resolve({}, KEYED)

    assert settings.base_url == "https://openrouter.ai/api/v1"


def test_openai_base_url_sets_the_model_base_url():
    settings = resolve({}, {**KEYED, "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"})

    assert settings.base_url == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("allowed", "requested"),
    [
        ("https://llm.test/v1", "https://llm.test/v1"),
        ("https://llm.test/v1/", "https://llm.test/v1"),
        ("https://llm.test/v1", "https://llm.test/v1/"),
        ("https://other.test/v1, https://llm.test/v1", "https://llm.test/v1"),
    ],
)
def test_a_per_run_base_url_on_the_allowlist_is_honoured(allowed, requested):
    settings = resolve({"base_url": requested}, {**KEYED, "DRA_ALLOWED_BASE_URLS": allowed})

    assert settings.base_url == "https://llm.test/v1"
    assert settings.problems == ()


def test_a_per_run_base_url_off_the_allowlist_is_a_problem_and_the_operators_url_stays():
    environ = {**KEYED, "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "DRA_ALLOWED_BASE_URLS": "https://llm.test/v1"}

    settings = resolve({"base_url": "https://attacker.test/v1"}, environ)

    assert settings.base_url == "http://127.0.0.1:8000/v1"
    assert len(settings.problems) == 1
    assert "DRA_ALLOWED_BASE_URLS" in settings.problems[0]


def test_a_per_run_base_url_equal_to_the_operators_needs_no_allowlist():
    settings = resolve(
        {"base_url": "http://127.0.0.1:8000/v1/"}, {**KEYED, "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    )

    assert settings.base_url == "http://127.0.0.1:8000/v1"
    assert settings.problems == ()


def test_a_0_0_0_0_base_url_is_normalised_to_127_0_0_1():
    settings = resolve({}, {**KEYED, "OPENAI_BASE_URL": "http://0.0.0.0:8000/v1/"})

    assert settings.base_url == "http://127.0.0.1:8000/v1"


# --- keys and secrets ---------------------------------------------------------------------------


def test_a_missing_model_key_is_a_problem_naming_openai_api_key():
    settings = resolve({}, {})

    assert len(settings.problems) == 1
    assert "OPENAI_API_KEY" in settings.problems[0]


def test_a_model_key_clears_the_problem():
    assert resolve({}, KEYED).problems == ()


@pytest.fixture
def troubled_settings() -> ResearchConfig:
    """Both keys set, plus a warning and a problem, so every surface has content."""
    return resolve(
        {"apiKeys": {"TAVILY_API_KEY": TAVILY_KEY}, "base_url": "https://attacker.test/v1", "streaming": "maybe"},
        KEYED,
    )


@pytest.mark.parametrize(
    "surface",
    [
        pytest.param(repr, id="repr"),
        pytest.param(lambda s: "\n".join(s.warnings), id="warnings"),
        pytest.param(lambda s: "\n".join(s.problems), id="problems"),
        pytest.param(lambda s: s.cache_key(), id="cache_key"),
    ],
)
def test_secrets_never_appear_in_what_settings_expose(troubled_settings, surface):
    assert troubled_settings.warnings and troubled_settings.problems
    text = surface(troubled_settings)

    assert MODEL_KEY not in text
    assert TAVILY_KEY not in text


def test_secret_values_returns_both_keys(troubled_settings):
    assert set(troubled_settings.secret_values()) == {MODEL_KEY, TAVILY_KEY}


def test_secret_values_is_empty_without_keys():
    assert resolve({}, {}).secret_values() == ()


# --- cache key ----------------------------------------------------------------------------------


def test_cache_key_is_stable_for_equal_settings():
    environ = {**KEYED, "DRA_MODEL_TIER": "mid", "DRA_STREAMING": "maybe"}

    assert resolve({}, environ).cache_key() == resolve({}, dict(environ)).cache_key()


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({"OPENAI_API_KEY": "sk-or-v1-another-key-0000000"}, id="model key"),
        pytest.param({"TAVILY_API_KEY": TAVILY_KEY}, id="tavily key"),
        pytest.param({"DRA_MODEL_TIER": "high"}, id="tier"),
        pytest.param({"DRA_STREAMING": "perhaps"}, id="warning"),
    ],
)
def test_cache_key_differs_when_a_key_the_tier_or_a_warning_differs(other):
    base = {**KEYED, "DRA_STREAMING": "maybe"}

    assert resolve({}, {**base, **other}).cache_key() != resolve({}, base).cache_key()


# --- domain prompt ------------------------------------------------------------------------------


def test_an_inline_domain_prompt_wins_over_the_file(tmp_path):
    prompt_file = tmp_path / "domain.md"
    prompt_file.write_text("from the file")

    settings = resolve({}, {**KEYED, "DRA_DOMAIN_PROMPT": "inline", "DRA_DOMAIN_PROMPT_FILE": str(prompt_file)})

    assert settings.domain_prompt == "inline"


def test_the_domain_prompt_file_is_read_when_no_inline_prompt_is_set(tmp_path):
    prompt_file = tmp_path / "domain.md"
    prompt_file.write_text("\nCite regulators first.\n\n")

    settings = resolve({}, {**KEYED, "DRA_DOMAIN_PROMPT_FILE": str(prompt_file)})

    assert settings.domain_prompt == "Cite regulators first."
    assert settings.warnings == ()


def test_an_unreadable_domain_prompt_file_warns_and_leaves_no_prompt(tmp_path):
    missing = tmp_path / "missing.md"

    settings = resolve({}, {**KEYED, "DRA_DOMAIN_PROMPT_FILE": str(missing)})

    assert settings.domain_prompt == ""
    assert len(settings.warnings) == 1
    assert "DRA_DOMAIN_PROMPT_FILE" in settings.warnings[0]
    assert str(missing) in settings.warnings[0]


# --- streaming ----------------------------------------------------------------------------------

DENIED = MODEL_TIERS["extra-low"].research  # deepseek/deepseek-v4-flash
ALLOWED = MODEL_TIERS["extra-low"].coding  # z-ai/glm-5.3-flash


def test_models_on_the_streaming_denylist_do_not_stream():
    settings = resolve({}, KEYED)

    assert "deepseek-v4-flash" in DENIED.slug
    assert settings.streams(DENIED) is False
    assert settings.streams(MODEL_TIERS["extra-low"].subagent) is False  # deepseek-v4-flash-0731: substring match
    assert settings.streams(ALLOWED) is True


def test_the_streaming_denylist_matches_configured_substrings():
    settings = resolve({}, {**KEYED, "DRA_STREAMING_DENYLIST": "glm-5"})

    assert settings.streams(ALLOWED) is False
    assert settings.streams(DENIED) is True


def test_streaming_off_disables_streaming_for_every_model():
    settings = resolve({"streaming": False}, KEYED)

    assert all(settings.streams(tier.slot(slot)) is False for tier in MODEL_TIERS.values() for slot in SLOTS)


# --- .env.example -------------------------------------------------------------------------------


def test_env_example_is_up_to_date():
    assert ENV_EXAMPLE.read_text(encoding="utf-8") == env_example(), (
        ".env.example is stale; regenerate it with "
        "`uv run python -m deep_research_agent.settings env-example > .env.example`"
    )


def test_env_example_lists_every_env_var_of_the_settings_table():
    listed = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(encoding="utf-8"), re.MULTILINE))
    named = {env for row in settings_table() for env in row["env"].split(" / ")}

    assert "OPENROUTER_API_KEY" in named
    assert named <= listed, f"missing from .env.example: {sorted(named - listed)}"


# --- Skills and custom-tools folders: a client may only pick one the operator allows ----------------------


def test_a_run_may_not_point_custom_tools_dir_outside_the_allowed_roots(tmp_path):
    cfg = ResearchConfig.resolve(
        {"configurable": {"custom_tools_dir": str(tmp_path)}}, environ={"OPENAI_API_KEY": "sk-x"}
    )

    assert any("custom_tools_dir" in p and "DRA_ALLOWED_EXTENSION_ROOTS" in p for p in cfg.problems)
    assert cfg.custom_tools_dir != str(tmp_path), "the operator's folder is kept, the client's never loaded"


def test_a_run_may_point_skills_dir_under_an_allowed_root(tmp_path):
    (tmp_path / "team" / "skills").mkdir(parents=True)
    cfg = ResearchConfig.resolve(
        {"configurable": {"skills_dir": str(tmp_path / "team" / "skills")}},
        environ={"OPENAI_API_KEY": "sk-x", "DRA_ALLOWED_EXTENSION_ROOTS": str(tmp_path)},
    )

    assert cfg.problems == ()
    assert cfg.skills_dir == str((tmp_path / "team" / "skills").resolve())


def test_a_dot_dot_escape_from_an_allowed_root_is_refused(tmp_path):
    (tmp_path / "allowed").mkdir()
    cfg = ResearchConfig.resolve(
        {"configurable": {"skills_dir": str(tmp_path / "allowed" / ".." / "elsewhere")}},
        environ={"OPENAI_API_KEY": "sk-x", "DRA_ALLOWED_EXTENSION_ROOTS": str(tmp_path / "allowed")},
    )
    assert any("skills_dir" in p for p in cfg.problems)


def test_the_operators_own_folder_needs_no_allowlist(tmp_path):
    cfg = ResearchConfig.resolve(
        {"configurable": {"custom_tools_dir": str(tmp_path)}},
        environ={"OPENAI_API_KEY": "sk-x", "DRA_CUSTOM_TOOLS_DIR": str(tmp_path)},
    )
    assert cfg.problems == () and cfg.custom_tools_dir == str(tmp_path.resolve())


# --- feature settings sub-models ----------------------------------------------------------------


FEATURE_SETTINGS = (
    settings_features.ModelSettings,
    settings_features.BudgetSettings,
    settings_features.SearchSettings,
    settings_features.KnowledgeSettings,
    settings_features.McpSettings,
    settings_features.SandboxSettings,
    settings_features.CorporaSettings,
    settings_features.ResultSettings,
    settings_features.ExtensionSettings,
)


def test_the_configuration_is_composed_of_the_feature_sub_models_each_field_declared_once():
    owned = [name for part in FEATURE_SETTINGS for name in part.model_fields]
    assert len(owned) == len(set(owned)), "a field belongs to one feature"
    assert set(owned) <= set(ResearchConfig.model_fields)
    assert all(issubclass(ResearchConfig, part) for part in FEATURE_SETTINGS)


@pytest.mark.parametrize("part", FEATURE_SETTINGS, ids=lambda part: part.__name__)
def test_a_builder_is_handed_its_features_settings_as_the_run_resolved_them(part):
    settings = ResearchConfig.resolve(
        {"configurable": {"max_tool_calls": 7, "knowledge_dataset": "papers", "search_max_results": 3}},
        environ={"OPENAI_API_KEY": "sk-test", "LLM_SANDBOX_URL": "http://127.0.0.1:9", "DRA_MCP_TOOLS_TTL": "5"},
    )
    handed = settings.part(part)
    assert type(handed) is part
    assert handed.model_dump() == {name: getattr(settings, name) for name in part.model_fields}
    assert settings.part(settings_features.BudgetSettings).max_tool_calls == 7
    assert settings.part(settings_features.SandboxSettings).sandbox_attached
