"""Which MCP servers a run connects to, and with which credentials.

Contract of ``resolve_servers`` (pure: it never connects, never resolves a name, never raises):

- **Precedence**, the first non-empty source wins: ``configurable.mcp_servers`` (a list of
  ``{label, url, headers?, transport?}``), ``configurable.mcp_config`` (the compatibility form
  ``{url, tools?, auth_required?, headers?, label?}``), ``DRA_MCP_SERVERS`` (the same list as JSON),
  ``DRA_MCP_SERVERS_FILE`` (a file holding that JSON), then ``DRA_MCP_URL`` with ``DRA_MCP_LABEL``. A malformed source still wins: it yields no server and a
  warning, rather than quietly handing the run the operator's servers.
- **The /mcp path**: ``mcp_config.url`` is a base and ``/mcp`` is appended (unless it already ends so); any
  other URL is used as given, except that a bare host gets ``/mcp``. ``0.0.0.0`` (a bind address, which
  cannot be dialled) becomes ``127.0.0.1``, and ``[::]`` becomes ``[::1]``.
- **Transports**: streamable HTTP (the default) and SSE. A stdio server (``transport: stdio`` or a
  ``command``: ``{label, command, args?, env?}``) is accepted only from the operator's configuration
  (``DRA_MCP_SERVERS`` or its file) and refused from a run's configurable, because a client must never make
  the server run a command. Its process gets only the MCP client's default environment (PATH, HOME and the
  like) plus its own ``env``, never the server's keys.
- **URL guard** (``domain/url_policy.py``): http and https only; link-local and cloud-metadata targets are
  refused, loopback and private hosts are allowed (internal gateways live there). Names are checked here
  only when they are IP literals or known metadata names; the connection re-checks what a name resolves to.
- **A shared deployment's allowlist**: with ``allowed_hosts`` set (``DRA_MCP_ALLOWED_HOSTS``), or ``shared``
  (``DRA_SHARED_DEPLOYMENT``, which ``./run.sh serve`` sets, since every user of a team server could
  otherwise make it reach internal services), a run's own server whose host (or ``host:port``) is not on
  the list is kept with ``refused`` saying why, so the run announces it as an ``mcp_error`` and never
  connects. The operator's own servers are not limited.
- **Credentials**: ``DRA_MCP_BEARER`` becomes ``Authorization: Bearer …`` on operator-configured servers
  that carry no auth header of their own (``Authorization``, or a header whose name says key, token or
  auth); a run's servers carry only their own ``headers``. So a token only ever goes to a server it was
  configured for. Header values are held as ``SecretStr`` and never appear in a warning.
- **Names**: labels are made unique (``docs``, ``docs-2``) and safe as tool-name prefixes.

Every entry that cannot be used is dropped with a warning that says what to fix; the others are kept.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, NotRequired
from urllib.parse import urlsplit, urlunsplit

from pydantic import SecretStr
from typing_extensions import TypedDict

from ..domain.url_policy import UrlPolicy, shown

Transport = Literal["streamable_http", "sse", "stdio"]
Origin = Literal["run", "operator"]

_TRANSPORTS: dict[str, Transport] = {
    "streamable_http": "streamable_http",
    "streamable-http": "streamable_http",
    "http": "streamable_http",
    "sse": "sse",
    "stdio": "stdio",
}
_AUTH_HEADER = re.compile(r"auth|key|token", re.IGNORECASE)
_UNSAFE_LABEL = re.compile(r"[^A-Za-z0-9_-]+")
_WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]"}
ALLOW_ENV = "DRA_MCP_ALLOWED_HOSTS"
# Every server's URL, the operator's too: http(s), never a link-local or metadata host.
SERVER_URLS = UrlPolicy("MCP servers")


class McpServerSpec(TypedDict):
    """One entry of ``mcp_servers`` as a client sends it (the shape the assistant's config_schema publishes)."""

    label: str
    url: str
    headers: NotRequired[dict[str, str]]
    transport: NotRequired[Literal["streamable_http", "sse"]]


@dataclass(frozen=True)
class McpServer:
    """One MCP server a run may connect to: a unique ``label``, the URL it is dialled at and its headers,
    or (stdio, operator only) the command that starts it and that command's extra environment."""

    label: str
    url: str
    transport: Transport
    origin: Origin
    headers: tuple[tuple[str, SecretStr], ...] = ()
    tools: tuple[str, ...] | None = None
    """``mcp_config``'s allow-list of tool names; None offers every tool the server lists."""
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, SecretStr], ...] = ()
    refused: str | None = None
    """Why the run may not connect to it (the shared deployment's allowlist); None when it may."""

    @property
    def location(self) -> str:
        """Where the server is, as events and logs may show it: no user info or query, no env values."""
        if self.transport == "stdio":
            return " ".join(["stdio:", self.command, *self.args])
        return shown(self.url)

    def header_values(self) -> dict[str, str]:
        """The headers to send, in the clear: for the connection only, never for events or logs."""
        return {name: value.get_secret_value() for name, value in self.headers}

    def env_values(self) -> dict[str, str]:
        """A stdio server's extra environment, in the clear: for starting it only."""
        return {name: value.get_secret_value() for name, value in self.env}

    def secret_values(self) -> tuple[str, ...]:
        return tuple(value.get_secret_value() for _, value in (*self.headers, *self.env) if value.get_secret_value())

    def fingerprint(self) -> dict[str, Any]:
        """Everything that tells two servers apart, with header values as digests (for the graph cache key)."""
        return {
            "label": self.label,
            "url": self.url,
            "transport": self.transport,
            "origin": self.origin,
            "tools": list(self.tools) if self.tools is not None else None,
            "headers": {n: hashlib.sha256(v.get_secret_value().encode()).hexdigest() for n, v in self.headers},
            "command": [self.command, *self.args],
            "env": {n: hashlib.sha256(v.get_secret_value().encode()).hexdigest() for n, v in self.env},
            "refused": self.refused,
        }


def resolve_servers(
    configurable: Mapping[str, Any],
    environ: Mapping[str, str],
    *,
    label: str = "mcp",
    bearer: SecretStr | None = None,
    allowed_hosts: tuple[str, ...] = (),
    shared: bool = False,
) -> tuple[tuple[McpServer, ...], tuple[str, ...]]:
    """The run's MCP servers and a warning per entry that was dropped; see the module contract."""
    warnings: list[str] = []
    run_policy = UrlPolicy.for_run("MCP servers", allow_env=ALLOW_ENV, allowed_hosts=allowed_hosts, shared=shared)
    specs: list[tuple[Any, bool]]
    if _present(configurable.get("mcp_servers")):
        origin, where = "run", "configurable.mcp_servers"
        specs = [(spec, False) for spec in _list_of_objects(configurable["mcp_servers"], where, warnings)]
    elif _present(configurable.get("mcp_config")):
        origin, where = "run", "configurable.mcp_config"
        raw = _parse_json(configurable["mcp_config"])
        if isinstance(raw, Mapping):
            specs = [(raw, True)]
        else:
            warnings.append(
                f"{where}: expected one object {{url, tools?, auth_required?, headers?}}; no MCP server is used."
            )
            specs = []
    elif _present(environ.get("DRA_MCP_SERVERS")):
        origin, where = "operator", "DRA_MCP_SERVERS"
        specs = [(spec, False) for spec in _list_of_objects(environ["DRA_MCP_SERVERS"], where, warnings)]
    elif _present(environ.get("DRA_MCP_SERVERS_FILE")):
        origin, where = "operator", "DRA_MCP_SERVERS_FILE"
        text = _read(environ["DRA_MCP_SERVERS_FILE"], warnings)
        specs = [(spec, False) for spec in _list_of_objects(text, where, warnings)] if text is not None else []
    elif _present(environ.get("DRA_MCP_URL")):
        origin, where = "operator", "DRA_MCP_URL"
        specs = [({"label": label or "mcp", "url": environ["DRA_MCP_URL"]}, False)]
    else:
        return (), ()

    servers: list[McpServer] = []
    taken: set[str] = set()
    for index, (spec, is_base) in enumerate(specs):
        server = _server(spec, is_base, origin, f"{where}[{index}]" if len(specs) > 1 else where, warnings)
        if server is None:
            continue
        if origin == "operator" and bearer is not None and bearer.get_secret_value() and not _has_auth(server.headers):
            server = _with_header(server, "Authorization", SecretStr(f"Bearer {bearer.get_secret_value()}"))
        if origin == "run":
            server = replace(server, refused=run_policy.refusal(server.url))
        unique = _unique(server.label, taken)
        taken.add(unique)
        servers.append(replace(server, label=unique))
    return tuple(servers), tuple(warnings)


def _server(spec: Any, is_base: bool, origin: Origin, where: str, warnings: list[str]) -> McpServer | None:
    if not isinstance(spec, Mapping):
        warnings.append(f"{where}: expected an object {{label, url, headers?, transport?}}; skipped.")
        return None
    transport_name = str(spec.get("transport") or ("stdio" if spec.get("command") else "streamable_http")).lower()
    if transport_name == "stdio":
        if origin == "run":
            warnings.append(
                f"{where}: stdio MCP servers are accepted only from the operator's configuration, never from a "
                "run's configurable (a client must not make the server run a command); skipped."
            )
            return None
        return _stdio_server(spec, where, warnings)
    transport = _TRANSPORTS.get(transport_name)
    if transport is None:
        warnings.append(f"{where}: unknown transport {transport_name!r} (use streamable_http or sse); skipped.")
        return None
    url = spec.get("url")
    if not isinstance(url, str) or not url.strip():
        warnings.append(f"{where}: the server has no url; skipped.")
        return None
    url, refusal = _checked_url(url, is_base=is_base)
    if refusal:
        warnings.append(f"{where}: {refusal}; skipped.")
        return None
    headers = spec.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        warnings.append(f"{where}: headers must be an object of strings; skipped.")
        return None
    tools = spec.get("tools") if is_base else None
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, str) for t in tools)):
        warnings.append(f"{where}: tools must be a list of tool names; every tool is offered.")
        tools = None
    if is_base and spec.get("auth_required") and not _has_auth(tuple(headers.items())):
        warnings.append(f"{where}: auth_required is set but no auth header is given; add it to headers. Skipped.")
        return None
    given_label = spec.get("label")
    label = _safe_label(
        given_label if isinstance(given_label, str) and given_label.strip() else urlsplit(url).hostname or "mcp"
    )
    return McpServer(
        label=label,
        url=url,
        transport=transport,
        origin=origin,
        headers=tuple((name, SecretStr(value)) for name, value in headers.items()),
        tools=tuple(tools) if tools is not None else None,
    )


def _stdio_server(spec: Mapping[str, Any], where: str, warnings: list[str]) -> McpServer | None:
    command, args, env = spec.get("command"), spec.get("args") or [], spec.get("env") or {}
    if not isinstance(command, str) or not command.strip():
        warnings.append(f"{where}: a stdio MCP server needs a command; skipped.")
        return None
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        warnings.append(f"{where}: args must be a list of strings; skipped.")
        return None
    if not isinstance(env, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        warnings.append(f"{where}: env must be an object of strings; skipped.")
        return None
    given_label = spec.get("label")
    label = given_label if isinstance(given_label, str) and given_label.strip() else command.strip().rsplit("/", 1)[-1]
    return McpServer(
        label=_safe_label(label),
        url="",
        transport="stdio",
        origin="operator",
        command=command.strip(),
        args=tuple(args),
        env=tuple((name, SecretStr(value)) for name, value in env.items()),
    )


def _read(path: str, warnings: list[str]) -> Any:
    """The JSON in the operator's server file (a small local read, like the domain prompt file's)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        warnings.append(f"DRA_MCP_SERVERS_FILE {path!r} cannot be read ({exc.strerror}); no MCP server is used.")
        return None


def _checked_url(raw: str, *, is_base: bool) -> tuple[str, str | None]:
    """The URL to dial (path rule applied, wildcard host made loopback), or the policy's refusal."""
    if refusal := SERVER_URLS.refusal(raw):
        return raw, refusal
    parts = urlsplit(raw.strip())
    netloc = parts.netloc
    for wildcard, loopback in _WILDCARD_HOSTS.items():
        hostport = netloc.rpartition("@")[2]
        if hostport == wildcard or hostport.startswith(wildcard + ":"):
            netloc = netloc[: len(netloc) - len(hostport)] + loopback + hostport[len(wildcard) :]
    path = parts.path.rstrip("/")
    if is_base:
        path = path if path.endswith("/mcp") else f"{path}/mcp"
    elif not path:
        path = "/mcp"
    return urlunsplit((parts.scheme.lower(), netloc, path, parts.query, "")), None


def _has_auth(headers: tuple[tuple[str, Any], ...]) -> bool:
    return any(_AUTH_HEADER.search(name) for name, _ in headers)


def _with_header(server: McpServer, name: str, value: SecretStr) -> McpServer:
    return replace(server, headers=(*server.headers, (name, value)))


def _safe_label(label: str) -> str:
    return _UNSAFE_LABEL.sub("_", label.strip()).strip("_")[:32] or "mcp"


def _unique(label: str, taken: set[str]) -> str:
    candidate, n = label, 1
    while candidate in taken:
        n += 1
        candidate = f"{label}-{n}"
    return candidate


def _present(value: Any) -> bool:
    return value not in (None, "", [], {}, ())


def _parse_json(raw: Any) -> Any:
    if isinstance(raw, str) and raw.strip().startswith(("[", "{")):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return None
    return raw


def _list_of_objects(raw: Any, where: str, warnings: list[str]) -> list[Any]:
    parsed = _parse_json(raw)
    if not isinstance(parsed, (list, tuple)) or not all(isinstance(item, Mapping) for item in parsed):
        warnings.append(
            f"{where}: expected a JSON list of objects {{label, url, headers?, transport?}}; no MCP server is used."
        )
        return []
    return list(parsed)
