"""What a network address is: IP literals in any spelling, cloud-metadata endpoints, and what kind of
address one is. Which addresses a URL may reach is ``url_policy``'s to decide: it refuses every non-public
address for pages (``refusal_reason``) and only link-local and metadata ones for services
(``link_local_or_metadata``), because internal services live on loopback and private addresses.
"""

from __future__ import annotations

import ipaddress
import re
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTNAMES = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NUMERIC_HOST = re.compile(r"^[0-9a-fx.]+$", re.IGNORECASE)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a host spelled as an IP means, including inet_aton forms (2130706433, 0177.0.0.1, 0x7f.1, 127.1)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not _NUMERIC_HOST.match(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4 or NAT64), which is the one it reaches."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip.sixtofour or (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None)


def refusal_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be fetched, or None for a public address."""
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return refusal_reason(ip.ipv4_mapped)
    embedded = _embedded_ipv4(ip)
    if embedded is not None and (reason := refusal_reason(embedded)):
        return reason
    checks = (
        ("is_unspecified", "an unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_private", "a private address"),
        ("is_reserved", "a reserved address"),
    )
    for attribute, reason in checks:
        if getattr(ip, attribute):
            return reason
    return None if ip.is_global else "a non-public address"


def link_local_or_metadata(ip: IPAddress) -> str | None:
    """Why an MCP connection must not reach ``ip`` (a metadata or link-local address), or None."""
    for candidate in (ip, _embedded_ipv4(ip)):
        if candidate is None:
            continue
        if candidate in METADATA_ADDRESSES:
            return "a cloud metadata address"
        if candidate.is_link_local:
            return "a link-local address"
    return None
