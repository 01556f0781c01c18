"""Specification of the SSRF guard in front of ``web_fetch``.

The guard refuses any URL whose host is, or resolves to, a non-public address, however the address is
spelled; the operator's allow-list (``DRA_FETCH_ALLOW_HOSTS``) is the only way past it; every redirect hop
is checked again; and the connection goes to the address that was checked, so a second DNS answer
(rebinding) cannot redirect it.
"""

from __future__ import annotations

import socket
import types
from collections.abc import Sequence

import httpx
import pytest

from deep_research_agent.domain.errors import ToolFailure
from deep_research_agent.tools.fetch import (
    FetchLimits,
    build_web_fetch_tool,
    download,
    new_client,
    resolve_public_target,
)
from testkit.web import (
    SHORT_FACT,
    WebStandIn,
    run_tools_in_graph,
    self_signed_identity,
)

PUBLIC_IP = "93.184.216.34"


def settings(allow_hosts: Sequence[str]) -> types.SimpleNamespace:
    return types.SimpleNamespace(web_fetch=True, fetch_allow_hosts=tuple(allow_hosts), fetch_cassette_url="")


class ScriptedResolver:
    """Answers DNS lookups from a script, one answer list per call; records every lookup."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


async def refusal(url: str, allow_hosts: Sequence[str] = (), resolver: ScriptedResolver | None = None) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        if resolver is None:
            await resolve_public_target(url, allow_hosts)
        else:
            await resolve_public_target(url, allow_hosts, resolver=resolver)
    assert caught.value.kind == "permanent"
    return caught.value


# --------------------------------------------------------------------------
# Refused targets
# --------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "only http and https"),
        ("ftp://ftp.example.org/pub/file.txt", "only http and https"),
        ("gopher://example.org/", "only http and https"),
        ("http://localhost:8080/admin", "localhost resolves to 127.0.0.1, which is a loopback address"),
        ("http://127.0.0.1/", "a loopback address"),
        ("http://[::1]/", "a loopback address"),
        ("http://10.1.2.3/", "a private address"),
        ("http://172.16.0.1/", "a private address"),
        ("http://192.168.1.1/router", "a private address"),
        ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address"),
        ("http://metadata.google.internal/computeMetadata/v1/", "cloud metadata endpoint"),
        ("http://metadata.google.internal./computeMetadata/v1/", "cloud metadata endpoint"),
        ("http://[fd00:ec2::254]/latest/meta-data/", "a cloud metadata address"),
        ("http://[::ffff:127.0.0.1]/", "a loopback address"),
        ("http://[::ffff:169.254.169.254]/", "a cloud metadata address"),
        ("http://2130706433/", "2130706433 resolves to 127.0.0.1, which is a loopback address"),
        ("http://0177.0.0.1/", "0177.0.0.1 resolves to 127.0.0.1, which is a loopback address"),
        ("http://0x7f000001/", "0x7f000001 resolves to 127.0.0.1, which is a loopback address"),
        ("http://0x7f.0.0.1/", "0x7f.0.0.1 resolves to 127.0.0.1, which is a loopback address"),
        ("http://127.1/", "127.1 resolves to 127.0.0.1, which is a loopback address"),
        ("http://0xa9fea9fe/", "a cloud metadata address"),
        ("http://224.0.0.1/", "a multicast address"),
        ("http://0.0.0.0:8000/", "an unspecified address"),
        ("http://[fe80::1]/", "a link-local address"),
        ("http://100.64.0.1/", "a non-public address"),
        ("http://[64:ff9b::7f00:1]/", "a loopback address"),
        ("http://user:secret@127.0.0.1/", "a loopback address"),
    ],
)
async def test_non_public_target_is_refused_with_the_reason(url: str, reason: str) -> None:
    failure = await refusal(url)
    assert reason in failure.message


@pytest.mark.anyio
async def test_name_is_refused_when_any_of_its_addresses_is_private() -> None:
    resolver = ScriptedResolver([PUBLIC_IP, "10.0.0.7"])
    failure = await refusal("https://mixed.example/", resolver=resolver)
    assert "mixed.example resolves to 10.0.0.7, which is a private address" in failure.message


@pytest.mark.anyio
async def test_name_resolving_to_metadata_address_is_refused() -> None:
    failure = await refusal("http://innocent.example/", resolver=ScriptedResolver(["169.254.169.254"]))
    assert "cloud metadata address" in failure.message


@pytest.mark.anyio
async def test_unresolvable_name_is_a_permanent_failure_saying_so() -> None:
    class NoSuchHost(ScriptedResolver):
        async def __call__(self, host: str, port: int) -> list[str]:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    failure = await refusal("https://no-such-host.example/", resolver=NoSuchHost([]))
    assert "cannot resolve the host no-such-host.example" in failure.message


@pytest.mark.anyio
async def test_public_name_passes_with_the_addresses_that_were_checked() -> None:
    target = await resolve_public_target("https://news.example/a?b=1#frag", resolver=ScriptedResolver([PUBLIC_IP]))
    assert [str(ip) for ip in target.addresses] == [PUBLIC_IP]
    assert target.connect_url(target.addresses[0]) == f"https://{PUBLIC_IP}/a?b=1"
    assert target.host_header == "news.example"
    assert target.extensions == {"sni_hostname": "news.example"}


@pytest.mark.anyio
async def test_the_default_resolver_really_resolves_names() -> None:
    failure = await refusal("http://localhost/")
    assert "loopback" in failure.message


# --------------------------------------------------------------------------
# The operator allow-list
# --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_allow_listed_host_and_port_is_fetched(web: WebStandIn) -> None:
    tool = build_web_fetch_tool(settings([web.allow_host]))
    run = await run_tools_in_graph([(tool, {"url": web.url("/short")})])
    assert SHORT_FACT in run.results[0]


@pytest.mark.anyio
async def test_allow_listed_host_on_another_port_is_refused(web: WebStandIn) -> None:
    failure = await refusal(f"http://127.0.0.1:{web.port + 1}/short", allow_hosts=[web.allow_host])
    assert "loopback" in failure.message


@pytest.mark.anyio
async def test_allow_list_entry_without_a_port_allows_every_port() -> None:
    target = await resolve_public_target("http://127.0.0.1:9/x", ["127.0.0.1"])
    assert target.port == 9


@pytest.mark.anyio
async def test_allow_list_matches_the_host_as_written_not_another_spelling(web: WebStandIn) -> None:
    failure = await refusal(f"http://2130706433:{web.port}/short", allow_hosts=[web.allow_host])
    assert "loopback" in failure.message


@pytest.mark.anyio
async def test_redirect_from_an_allowed_host_to_the_metadata_address_is_refused(web: WebStandIn) -> None:
    tool = build_web_fetch_tool(settings([web.allow_host]))
    run = await run_tools_in_graph([(tool, {"url": web.url("/redirect-to-metadata")})])
    text = run.results[0]
    assert text.startswith("TOOL ERROR (web_fetch, permanent):")
    assert "redirected to a refused target" in text
    assert "169.254.169.254 is a cloud metadata address" in text
    assert [e["ok"] for e in run.of_type("page_fetched")] == [False]
    assert run.of_type("source") == []


@pytest.mark.anyio
async def test_redirect_to_a_non_listed_loopback_port_is_refused(web: WebStandIn) -> None:
    tool = build_web_fetch_tool(settings([web.allow_host]))
    elsewhere = f"http://127.0.0.1:{web.port + 1}/"
    run = await run_tools_in_graph([(tool, {"url": web.url(f"/redirect?to={elsewhere}")})])
    assert "redirected to a refused target" in run.results[0]
    assert "loopback" in run.results[0]


# --------------------------------------------------------------------------
# Connecting to the checked address
# --------------------------------------------------------------------------


class RecordingTransport(httpx.AsyncBaseTransport):
    """Stands in for the network: records what would be dialled and answers from a script."""

    def __init__(self, *responses: httpx.Response) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.responses.pop(0)


def html(text: str) -> httpx.Response:
    page = f"<html><body><p>{text}</p></body></html>".encode()
    return httpx.Response(200, headers={"content-type": "text/html"}, content=page)


@pytest.mark.anyio
async def test_connection_goes_to_the_checked_address_even_if_dns_changes_its_answer() -> None:
    resolver = ScriptedResolver([PUBLIC_IP], ["127.0.0.1"])  # a rebinding DNS server
    transport = RecordingTransport(html("public page"))
    async with httpx.AsyncClient(transport=transport) as client:
        got = await download("https://rebind.example:8443/page?q=1", client=client, resolver=resolver)
    assert resolver.lookups == ["rebind.example"]  # looked up once, by the guard
    (request,) = transport.requests
    assert request.url.host == PUBLIC_IP
    assert request.url.port == 8443
    assert request.url.raw_path == b"/page?q=1"
    assert request.headers["host"] == "rebind.example:8443"
    assert request.extensions["sni_hostname"] == "rebind.example"
    assert b"public page" in got.body


@pytest.mark.anyio
async def test_every_redirect_hop_is_resolved_and_checked_again() -> None:
    resolver = ScriptedResolver([PUBLIC_IP], ["10.0.0.7"])
    transport = RecordingTransport(httpx.Response(302, headers={"location": "http://intranet.example/admin"}))
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(ToolFailure) as caught:
            await download("https://start.example/", client=client, resolver=resolver)
    assert resolver.lookups == ["start.example", "intranet.example"]
    assert len(transport.requests) == 1  # the private hop was never dialled
    assert "intranet.example resolves to 10.0.0.7, which is a private address" in caught.value.message


@pytest.mark.anyio
async def test_relative_redirect_keeps_the_original_host_name() -> None:
    resolver = ScriptedResolver([PUBLIC_IP])
    transport = RecordingTransport(httpx.Response(301, headers={"location": "/moved"}), html("moved here"))
    async with httpx.AsyncClient(transport=transport) as client:
        got = await download("http://news.example/old", client=client, resolver=resolver)
    assert [r.headers["host"] for r in transport.requests] == ["news.example", "news.example"]
    assert got.final_url == "http://news.example/moved"


@pytest.mark.anyio
async def test_more_than_five_redirects_are_refused() -> None:
    resolver = ScriptedResolver([PUBLIC_IP])
    loop = [httpx.Response(302, headers={"location": f"/hop{i}"}) for i in range(7)]
    transport = RecordingTransport(*loop)
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(ToolFailure) as caught:
            await download("http://news.example/", client=client, resolver=resolver, limits=FetchLimits())
    assert "redirected more than 5 times" in caught.value.message
    assert len(transport.requests) == 6


@pytest.mark.anyio
async def test_https_dials_the_checked_address_and_verifies_the_certificate_for_the_name(tmp_path) -> None:
    # One client for both calls: new_client never reuses a connection, so the impostor gets its own handshake.
    pytest.importorskip("cryptography")
    identity = self_signed_identity(tmp_path, "pinned.test")
    resolver = ScriptedResolver(["127.0.0.1"])
    with WebStandIn(tls=identity) as server:
        async with new_client(FetchLimits(), verify=identity.client_context()) as client:
            got = await download(
                f"https://pinned.test:{server.port}/short",
                client=client,
                allow_hosts=["pinned.test"],
                resolver=resolver,
            )
            with pytest.raises(ToolFailure) as caught:
                await download(
                    f"https://impostor.test:{server.port}/short",
                    client=client,
                    allow_hosts=["impostor.test"],
                    resolver=resolver,
                )
    assert SHORT_FACT.encode() in got.body
    assert caught.value.kind == "permanent"
    assert "invalid TLS certificate" in caught.value.message
