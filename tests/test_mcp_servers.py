"""Specification of which MCP servers a run connects to (``mcp.servers.resolve_servers`` through
``ResearchConfig.resolve``): source precedence, the /mcp path rules, the URL guard, credential scoping
and unique names. Every test passes an explicit environment."""

from __future__ import annotations

import json
from typing import Any

import pytest

from deep_research_agent.settings import ResearchConfig

BEARER = "mcp-operator-bearer-0123456789"
KEYED = {"OPENAI_API_KEY": "sk-or-v1-model-key-0123456789abcdef"}


def resolve(configurable: dict[str, Any] | None = None, environ: dict[str, str] | None = None) -> ResearchConfig:
    return ResearchConfig.resolve({"configurable": configurable or {}}, environ={**KEYED, **(environ or {})})


def urls(settings: ResearchConfig) -> list[str]:
    return [server.url for server in settings.mcp_servers]


RUN_LIST = {"mcp_servers": [{"label": "run", "url": "http://run.test/mcp"}]}
RUN_COMPAT = {"mcp_config": {"url": "http://compat.test"}}
ENV_LIST = {"DRA_MCP_SERVERS": json.dumps([{"label": "env", "url": "http://env.test/mcp"}])}
ENV_URL = {"DRA_MCP_URL": "http://single.test/mcp", "DRA_MCP_LABEL": "single"}


# --- precedence ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("configurable", "environ", "expected"),
    [
        pytest.param(RUN_LIST, {**ENV_LIST, **ENV_URL}, "http://run.test/mcp", id="mcp_servers-first"),
        pytest.param({**RUN_LIST, **RUN_COMPAT}, {}, "http://run.test/mcp", id="mcp_servers-beats-mcp_config"),
        pytest.param(RUN_COMPAT, {**ENV_LIST, **ENV_URL}, "http://compat.test/mcp", id="mcp_config-beats-env"),
        pytest.param({}, {**ENV_LIST, **ENV_URL}, "http://env.test/mcp", id="DRA_MCP_SERVERS-beats-DRA_MCP_URL"),
        pytest.param({}, ENV_URL, "http://single.test/mcp", id="DRA_MCP_URL-last"),
        pytest.param({"mcp_servers": []}, ENV_URL, "http://single.test/mcp", id="an-empty-source-falls-through"),
    ],
)
def test_the_first_non_empty_source_wins(configurable, environ, expected):
    assert urls(resolve(configurable, environ)) == [expected]


def test_without_any_source_there_are_no_servers_and_no_warnings():
    settings = resolve()

    assert settings.mcp_servers == () and settings.warnings == ()


def test_a_malformed_run_source_still_wins_so_the_run_never_gets_the_operators_servers_by_mistake():
    settings = resolve({"mcp_servers": "not a list"}, ENV_URL)

    assert settings.mcp_servers == ()
    assert any("configurable.mcp_servers" in w for w in settings.warnings)


def test_drа_mcp_label_names_the_single_env_server():
    [server] = resolve({}, ENV_URL).mcp_servers

    assert (server.label, server.origin) == ("single", "operator")


def test_run_servers_are_marked_as_coming_from_the_run():
    assert {s.origin for s in resolve(RUN_LIST).mcp_servers} == {"run"}


# --- the /mcp path rules and the bind address ---------------------------------------------------


@pytest.mark.parametrize(
    ("source", "url", "expected"),
    [
        ("mcp_config", "http://gw.test:4000", "http://gw.test:4000/mcp"),
        ("mcp_config", "http://gw.test:4000/api/", "http://gw.test:4000/api/mcp"),
        ("mcp_config", "http://gw.test:4000/mcp", "http://gw.test:4000/mcp"),
        ("mcp_servers", "http://gw.test:4000", "http://gw.test:4000/mcp"),
        ("mcp_servers", "http://gw.test:4000/", "http://gw.test:4000/mcp"),
        ("mcp_servers", "http://gw.test:4000/servers/time/mcp", "http://gw.test:4000/servers/time/mcp"),
        ("mcp_servers", "http://gw.test:4000/sse", "http://gw.test:4000/sse"),
        ("DRA_MCP_URL", "http://gw.test:4000", "http://gw.test:4000/mcp"),
        ("DRA_MCP_URL", "http://gw.test:4000/custom", "http://gw.test:4000/custom"),
        ("DRA_MCP_URL", "http://0.0.0.0:3901/mcp", "http://127.0.0.1:3901/mcp"),
        ("mcp_servers", "http://[::]:3901", "http://[::1]:3901/mcp"),
    ],
)
def test_mcp_config_urls_are_a_base_and_other_urls_get_mcp_only_on_a_bare_host(source, url, expected):
    if source == "mcp_config":
        settings = resolve({"mcp_config": {"url": url}})
    elif source == "mcp_servers":
        settings = resolve({"mcp_servers": [{"label": "gw", "url": url}]})
    else:
        settings = resolve({}, {"DRA_MCP_URL": url})

    assert urls(settings) == [expected]


# --- transports and stdio -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "transport"), [(None, "streamable_http"), ("streamable-http", "streamable_http"), ("sse", "sse")]
)
def test_streamable_http_is_the_default_transport_and_sse_is_accepted(given, transport):
    spec = {"label": "a", "url": "http://a.test/mcp", **({"transport": given} if given else {})}

    assert [s.transport for s in resolve({"mcp_servers": [spec]}).mcp_servers] == [transport]


@pytest.mark.parametrize(
    "spec",
    [
        {"label": "sh", "transport": "stdio", "command": "touch", "args": ["/tmp/pwned"]},
        {"label": "sh", "command": "touch", "args": ["/tmp/pwned"]},
    ],
    ids=["transport-stdio", "bare-command"],
)
def test_a_stdio_server_sent_in_a_runs_configurable_is_refused(spec):
    settings = resolve({"mcp_servers": [spec, {"label": "ok", "url": "http://ok.test/mcp"}]})

    assert [s.label for s in settings.mcp_servers] == ["ok"]
    assert any("stdio" in w and "never from a run's configurable" in w for w in settings.warnings)


def test_an_unknown_transport_drops_the_server_with_a_warning():
    settings = resolve({"mcp_servers": [{"label": "ws", "url": "http://ws.test/mcp", "transport": "websocket"}]})

    assert settings.mcp_servers == () and any("websocket" in w for w in settings.warnings)


# --- the URL guard ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://gw.test/mcp",
        "http://169.254.169.254/latest",
        "http://169.254.10.1:8080/mcp",
        "http://[fe80::1]/mcp",
        "http://[::ffff:169.254.169.254]/mcp",
        "http://metadata.google.internal/mcp",
        "http://100.100.100.200/mcp",
        "http://2852039166/mcp",  # 169.254.169.254 as one number
    ],
)
def test_non_http_link_local_and_metadata_targets_are_refused(url):
    settings = resolve({"mcp_servers": [{"label": "x", "url": url}]})

    assert settings.mcp_servers == ()
    assert any(w.startswith("configurable.mcp_servers") and "skipped" in w for w in settings.warnings)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:3901/mcp", "http://localhost:3901/mcp", "http://10.0.0.5/mcp", "https://192.168.1.9/mcp"]
)
def test_loopback_and_private_hosts_are_allowed_for_internal_gateways(url):
    assert urls(resolve({"mcp_servers": [{"label": "gw", "url": url}]})) == [url]


def test_a_refusal_never_shows_the_urls_user_info():
    settings = resolve({"mcp_servers": [{"label": "x", "url": "http://user:hunter2-password@169.254.169.254/"}]})

    assert settings.warnings and not any("hunter2" in w for w in settings.warnings)


# --- credential scoping -------------------------------------------------------------------------


def test_the_operator_bearer_goes_to_env_servers_without_auth_of_their_own():
    [server] = resolve({}, {**ENV_URL, "DRA_MCP_BEARER": BEARER}).mcp_servers

    assert server.header_values() == {"Authorization": f"Bearer {BEARER}"}


@pytest.mark.parametrize("header", ["Authorization", "x-litellm-api-key", "X-Auth-Token"])
def test_an_env_server_with_its_own_auth_header_keeps_it_and_gets_no_bearer(header):
    servers = json.dumps([{"label": "own", "url": "http://own.test/mcp", "headers": {header: "own-credential-123"}}])

    [server] = resolve({}, {"DRA_MCP_SERVERS": servers, "DRA_MCP_BEARER": BEARER}).mcp_servers

    assert server.header_values() == {header: "own-credential-123"}


@pytest.mark.parametrize("configurable", [RUN_LIST, RUN_COMPAT], ids=["mcp_servers", "mcp_config"])
def test_the_operator_bearer_never_travels_to_a_runs_servers(configurable):
    settings = resolve(configurable, {"DRA_MCP_BEARER": BEARER})

    assert all(BEARER not in json.dumps(s.header_values()) for s in settings.mcp_servers)
    assert settings.mcp_servers and all(s.header_values() == {} for s in settings.mcp_servers)


def test_a_runs_servers_use_their_own_headers():
    spec = {"label": "gw", "url": "http://gw.test/mcp", "headers": {"x-litellm-api-key": "run-own-key-123456"}}

    [server] = resolve({"mcp_servers": [spec]}, {"DRA_MCP_BEARER": BEARER}).mcp_servers

    assert server.header_values() == {"x-litellm-api-key": "run-own-key-123456"}


def test_header_values_and_the_bearer_are_secrets_of_the_run_and_never_shown():
    spec = {"label": "gw", "url": "http://gw.test/mcp", "headers": {"Authorization": "Bearer run-token-0123456789"}}
    settings = resolve({"mcp_servers": [spec]}, {"DRA_MCP_BEARER": BEARER})

    assert {"Bearer run-token-0123456789", BEARER} <= set(settings.secret_values())
    assert "run-token" not in repr(settings.mcp_servers)


def test_servers_differing_only_in_a_header_value_build_different_graphs():
    def key(token: str) -> str:
        spec = {"label": "gw", "url": "http://gw.test/mcp", "headers": {"Authorization": f"Bearer {token}"}}
        return resolve({"mcp_servers": [spec]}).cache_key()

    assert key("token-one-0123456") != key("token-two-0123456")
    assert key("token-one-0123456") == key("token-one-0123456")


def test_mcp_config_auth_required_without_a_header_is_dropped_with_what_to_fix():
    settings = resolve({"mcp_config": {"url": "http://gw.test", "auth_required": True}})

    assert settings.mcp_servers == () and any("auth_required" in w and "headers" in w for w in settings.warnings)


def test_mcp_config_tools_is_kept_as_an_allow_list():
    [server] = resolve({"mcp_config": {"url": "http://gw.test", "tools": ["echo", "get-sum"]}}).mcp_servers

    assert server.tools == ("echo", "get-sum")


@pytest.mark.parametrize("headers", [["Authorization: x"], {"Authorization": 5}])
def test_malformed_headers_drop_the_server(headers):
    settings = resolve({"mcp_servers": [{"label": "gw", "url": "http://gw.test/mcp", "headers": headers}]})

    assert settings.mcp_servers == () and any("headers" in w for w in settings.warnings)


# --- names --------------------------------------------------------------------------------------


def test_labels_are_made_unique_and_safe_as_tool_name_prefixes():
    specs = [
        {"label": "docs", "url": "http://a.test/mcp"},
        {"label": "docs", "url": "http://b.test/mcp"},
        {"label": "my docs!", "url": "http://c.test/mcp"},
        {"url": "http://d.test/mcp"},
    ]

    assert [s.label for s in resolve({"mcp_servers": specs}).mcp_servers] == ["docs", "docs-2", "my_docs", "d_test"]


# --- stdio from the operator's configuration ------------------------------------------------------


STDIO = {
    "label": "time",
    "command": "mcp-server-time",
    "args": ["--local-timezone", "UTC"],
    "env": {"TZ_TOKEN": "stdio-env-secret-123"},
}


def test_a_stdio_server_from_the_operators_env_is_accepted_with_its_command_and_env():
    [server] = resolve({}, {"DRA_MCP_SERVERS": json.dumps([STDIO])}).mcp_servers

    assert (server.transport, server.command, server.args, server.origin) == (
        "stdio",
        "mcp-server-time",
        ("--local-timezone", "UTC"),
        "operator",
    )
    assert server.env_values() == {"TZ_TOKEN": "stdio-env-secret-123"}
    assert (
        "stdio-env-secret-123" not in server.location
        and "stdio-env-secret-123" in resolve({}, {"DRA_MCP_SERVERS": json.dumps([STDIO])}).secret_values()
    )


def test_the_operators_server_file_is_a_source_after_dra_mcp_servers(tmp_path):
    servers_file = tmp_path / "mcp.json"
    servers_file.write_text(json.dumps([STDIO, {"label": "gw", "url": "http://gw.test/mcp"}]))

    from_file = resolve({}, {"DRA_MCP_SERVERS_FILE": str(servers_file), **ENV_URL})
    from_env = resolve({}, {**ENV_LIST, "DRA_MCP_SERVERS_FILE": str(servers_file)})

    assert [s.label for s in from_file.mcp_servers] == ["time", "gw"]
    assert [s.label for s in from_env.mcp_servers] == ["env"]


def test_an_unreadable_server_file_warns_once_and_gives_no_servers(tmp_path):
    settings = resolve({}, {"DRA_MCP_SERVERS_FILE": str(tmp_path / "missing.json"), **ENV_URL})

    assert settings.mcp_servers == ()
    assert len([w for w in settings.warnings if "DRA_MCP_SERVERS_FILE" in w]) == 1


def test_a_stdio_server_needs_a_command():
    settings = resolve({}, {"DRA_MCP_SERVERS": json.dumps([{"label": "x", "transport": "stdio"}])})

    assert settings.mcp_servers == () and any("needs a command" in w for w in settings.warnings)


# --- a shared deployment's allowlist ------------------------------------------------------------------

SHARED = {"DRA_SHARED_DEPLOYMENT": "true"}


@pytest.mark.parametrize(
    "url", ["http://10.0.0.5:9000/mcp", "http://127.0.0.1:8000/mcp", "http://[::1]/mcp", "https://tools.example/mcp"]
)
def test_under_serve_a_runs_own_server_off_the_allowlist_is_kept_refused_with_why(url):
    settings = resolve({"mcp_servers": [{"label": "mine", "url": url}]}, SHARED)

    [server] = settings.mcp_servers
    assert server.refused is not None and "DRA_MCP_ALLOWED_HOSTS (none are listed)" in server.refused
    assert server.refused.startswith(f"refused {url}: this deployment allows a run's MCP servers only on the hosts")


def test_under_serve_a_runs_server_on_an_allowed_host_or_host_port_connects_and_the_operators_are_not_limited():
    allowed = {**SHARED, "DRA_MCP_ALLOWED_HOSTS": "tools.example, 10.0.0.5:9000"}

    on_list = resolve(
        {
            "mcp_servers": [
                {"label": "a", "url": "https://tools.example/mcp"},
                {"label": "b", "url": "http://10.0.0.5:9000"},
            ]
        },
        allowed,
    )
    wrong_port = resolve({"mcp_servers": [{"label": "c", "url": "http://10.0.0.5:9001/mcp"}]}, allowed)
    operator = resolve({}, {**SHARED, **ENV_LIST})

    assert [server.refused for server in on_list.mcp_servers] == [None, None]
    assert "(tools.example, 10.0.0.5:9000), and 10.0.0.5 is not one of them" in str(wrong_port.mcp_servers[0].refused)
    assert operator.mcp_servers[0].refused is None


def test_on_langgraph_dev_a_runs_private_server_is_allowed_unless_the_operator_sets_an_allowlist():
    private = {"mcp_servers": [{"label": "gw", "url": "http://10.0.0.5:9000/mcp"}]}

    assert resolve(private).mcp_servers[0].refused is None
    assert resolve(private, {"DRA_MCP_ALLOWED_HOSTS": "gw.internal"}).mcp_servers[0].refused is not None


def test_the_shared_flag_s_old_name_still_closes_the_deployment_and_says_its_new_name():
    settings = resolve(
        {"mcp_servers": [{"label": "gw", "url": "http://10.0.0.5/mcp"}]}, {"DRA_MCP_ALLOWLIST_REQUIRED": "true"}
    )

    assert settings.shared_deployment and settings.mcp_servers[0].refused is not None
    assert any("DRA_MCP_ALLOWLIST_REQUIRED is now DRA_SHARED_DEPLOYMENT" in w for w in settings.warnings)


def test_a_run_cannot_lift_the_allowlist_from_its_configurable():
    settings = resolve(
        {"mcp_servers": [{"label": "gw", "url": "http://10.0.0.5/mcp"}], "mcp_allowed_hosts": "10.0.0.5"}, SHARED
    )

    assert settings.mcp_servers[0].refused is not None
