"""Where the server may connect on a run's behalf: the one policy every configured or fetched URL passes.

Every URL the server dials because of a run (a page ``web_fetch`` reads, a run's ``sandbox_url``, its MCP
servers, the search backends, and any later outbound feature such as webhooks) is checked here, with a
``UrlPolicy`` that names what kind of URL it is and the operator's allow-list for that kind.

Contract of ``UrlPolicy``, its rules in order:

1. http and https only, with a host and a valid port.
2. Cloud-metadata endpoints (by name, or by address in any spelling: decimal, octal, hex, IPv4-mapped,
   6to4, NAT64) and link-local addresses are always refused, whatever any list says.
3. A host (or ``host:port``) on the operator's allow-list passes.
4. ``only_listed`` (a shared deployment, ``DRA_SHARED_DEPLOYMENT``, or an operator who set that kind's
   list): every other host is refused, with a message naming the list's environment variable.
5. ``public_only`` (pages read from the web): any other non-public address (loopback, private, multicast,
   reserved, unspecified, carrier-grade NAT) is refused.
6. Otherwise it passes: services a deployment runs live on loopback and private addresses.

``refusal(url)`` applies them to what the URL says (a host spelled as an address is checked as that
address; a name only by rules 1-4), without touching the network, for settings. ``target(url)`` also
resolves the name and checks every address it resolves to, and returns them as a ``Target`` to connect to,
so a caller that dials ``Target.connect_url`` never lets a second DNS answer (rebinding) change where it
goes. Messages never show a URL's user info, which can hold a password.

How a feature uses it (a webhook, say, with its operator list in ``DRA_WEBHOOK_ALLOW_HOSTS``)::

    policy = UrlPolicy.for_run("webhooks", allow_env="DRA_WEBHOOK_ALLOW_HOSTS",
                               allowed_hosts=settings.webhook_allow_hosts, shared=settings.shared_deployment)
    if reason := policy.refusal(url):          # when the run's configuration is read
        ...                                    # refuse the setting with ``reason``
    target = await policy.target(url)          # just before sending; raises UrlRefused
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .addresses import METADATA_HOSTNAMES, IPAddress, link_local_or_metadata, parse_ip_literal, refusal_reason

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
DEFAULT_PORTS = {"http": 80, "https": 443}


class UrlRefused(ValueError):
    """A URL the policy refuses; the message says why and, for an allow-list, which setting lists hosts."""


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, looked up off the event loop."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def shown(url: str) -> str:
    """A URL as a message may show it: without user info, query or fragment."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "the URL"
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


@dataclass(frozen=True)
class Target:
    """A URL that passed the policy, with the addresses that were checked."""

    url: str
    scheme: str
    host: str
    port: int
    explicit_port: bool
    addresses: tuple[IPAddress, ...]

    def connect_url(self, ip: IPAddress) -> str:
        """The URL with a checked address in place of the host name.

        httpx has no public hook to pin a DNS answer, so a request dials the checked IP and carries the
        original Host header (and SNI): a second lookup at connect time, open to DNS rebinding, never happens.
        """
        host = f"[{ip.compressed}]" if ip.version == 6 else str(ip)
        netloc = f"{host}:{self.port}" if self.explicit_port else host
        parts = urlsplit(self.url)
        return urlunsplit((self.scheme, netloc, parts.path or "/", parts.query, ""))

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" if self.explicit_port else host

    @property
    def extensions(self) -> dict[str, Any]:
        # TLS must verify the certificate against the name, not the IP we dial.
        if self.scheme == "https" and parse_ip_literal(self.host) is None:
            return {"sni_hostname": self.host}
        return {}


@dataclass(frozen=True)
class _Parsed:
    scheme: str
    host: str
    port: int
    explicit_port: bool
    netloc: str
    path: str
    query: str


@dataclass(frozen=True)
class UrlPolicy:
    """What one kind of URL may reach (see the module contract).

    Example:
        ```python
        policy = UrlPolicy.for_run("sandbox URLs", allow_env="DRA_SANDBOX_ALLOWED_HOSTS", allowed_hosts=(), shared=True)
        policy.refusal("http://127.0.0.1:8900")
        # "refused http://127.0.0.1:8900: this deployment allows a run's sandbox URLs only on the hosts the
        #  operator lists in DRA_SANDBOX_ALLOWED_HOSTS (none are listed), and 127.0.0.1 is not one of them"
        ```

    Raises:
        ValueError: ``only_listed`` without ``allow_env`` (the refusal could not say what to set).
    """

    kind: str
    allow_env: str = ""
    allowed_hosts: tuple[str, ...] = ()
    only_listed: bool = False
    public_only: bool = False

    def __post_init__(self) -> None:
        if self.only_listed and not self.allow_env:
            raise ValueError(f"a policy for {self.kind} that allows only listed hosts must name their setting")

    @classmethod
    def for_run(cls, kind: str, *, allow_env: str, allowed_hosts: Sequence[str], shared: bool) -> UrlPolicy:
        """The policy for ``kind`` URLs a run's configuration supplies: only the hosts listed in ``allow_env``
        on a shared deployment, or wherever the operator has listed any; else loopback and private hosts too."""
        hosts = tuple(h.strip() for h in allowed_hosts if h.strip())
        return cls(kind, allow_env=allow_env, allowed_hosts=hosts, only_listed=shared or bool(hosts))

    def refusal(self, url: str) -> str | None:
        """Why ``url`` may not be dialled, judged from the URL alone (no DNS), or None."""
        try:
            self._checked(url)
        except UrlRefused as refused:
            return str(refused)
        return None

    async def target(self, url: str, *, resolver: Resolver = system_resolver) -> Target:
        """``url`` with every address its host resolves to, each checked.

        Raises:
            UrlRefused: the URL, or any address its host resolves to, is refused.
            OSError: the name cannot be resolved (``socket.gaierror``), for the caller to classify.
        """
        parsed = self._checked(url)
        literal = parse_ip_literal(parsed.host)
        addresses = (literal,) if literal is not None else await self._resolve(parsed, resolver)
        for ip in addresses:
            if reason := self._address_refusal(ip, parsed):
                raise UrlRefused(f"refused {shown(url)}: {_is(parsed.host, ip)} {reason}")
        return Target(
            url=urlunsplit((parsed.scheme, parsed.netloc, parsed.path, parsed.query, "")),
            scheme=parsed.scheme,
            host=parsed.host,
            port=parsed.port,
            explicit_port=parsed.explicit_port,
            addresses=addresses,
        )

    def listed(self, host: str, port: int | None) -> bool:
        """True when ``host`` (and ``port``) is on the allow-list of ``host`` or ``host:port`` entries (IPv6 in
        brackets); an entry without a port matches every port."""
        host = host.rstrip(".").lower()
        for entry in self.allowed_hosts:
            try:
                parts = urlsplit("//" + entry.strip().lower())
                entry_port = parts.port
            except ValueError:
                continue
            if parts.hostname and parts.hostname.rstrip(".") == host and entry_port in (None, port):
                return True
        return False

    def _checked(self, url: str) -> _Parsed:
        try:
            parts = urlsplit(url.strip())
            explicit = parts.port
        except ValueError:
            raise UrlRefused(f"{shown(url)} is not a valid URL") from None
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            raise UrlRefused(f"refused {shown(url)}: only http and https {self.kind} are allowed")
        host = (parts.hostname or "").rstrip(".")
        if not host:
            raise UrlRefused(f"refused {shown(url)}: the URL has no host")
        parsed = _Parsed(
            scheme=scheme,
            host=host,
            port=explicit or DEFAULT_PORTS[scheme],
            explicit_port=explicit is not None,
            netloc=parts.netloc.rpartition("@")[2],
            path=parts.path,
            query=parts.query,
        )
        if host.lower() in METADATA_HOSTNAMES:
            raise UrlRefused(f"refused {shown(url)}: {host} is a cloud metadata endpoint")
        literal = parse_ip_literal(host)
        if literal is not None and (reason := link_local_or_metadata(literal)):
            raise UrlRefused(f"refused {shown(url)}: {_is(host, literal)} {reason}")
        if self.only_listed and not self.listed(host, parsed.port):
            listed = ", ".join(self.allowed_hosts) if self.allowed_hosts else "none are listed"
            raise UrlRefused(
                f"refused {shown(url)}: this deployment allows a run's {self.kind} only on the hosts the operator "
                f"lists in {self.allow_env} ({listed}), and {host} is not one of them"
            )
        if literal is not None and (reason := self._address_refusal(literal, parsed)):
            raise UrlRefused(f"refused {shown(url)}: {_is(host, literal)} {reason}")
        return parsed

    def _address_refusal(self, ip: IPAddress, parsed: _Parsed) -> str | None:
        """Why a connection may not go to ``ip``: always for metadata and link-local, and for any non-public
        address under ``public_only`` unless the host is listed."""
        if reason := link_local_or_metadata(ip):
            return reason
        if self.public_only and not self.listed(parsed.host, parsed.port):
            return refusal_reason(ip)
        return None

    @staticmethod
    async def _resolve(parsed: _Parsed, resolver: Resolver) -> tuple[IPAddress, ...]:
        raw = await resolver(parsed.host, parsed.port)
        addresses = tuple(ipaddress.ip_address(a.split("%", 1)[0]) for a in raw)
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, f"{parsed.host} has no address")
        return addresses


def _is(host: str, ip: IPAddress) -> str:
    """How a refusal names the address: the host itself, or what it resolves to (a name, or an odd spelling)."""
    return f"{host} is" if str(ip) == host.strip("[]") else f"{host} resolves to {ip}, which is"
