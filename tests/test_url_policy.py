"""Specification of the one URL policy (``domain/url_policy.py``) every URL the server dials for a run passes.

Metadata and link-local targets are refused under every policy and every list; a shared deployment (or an
operator who lists hosts) lets a run's URLs reach only listed hosts; pages reach only public addresses unless
listed; services may live on loopback and private addresses. A refusal names the setting that lists hosts and
never shows a URL's password. Pages' own spellings and redirects are specified in ``test_ssrf_guard.py``.
"""

from __future__ import annotations

import socket

import pytest

from deep_research_agent.domain.url_policy import UrlPolicy, UrlRefused

pytestmark = pytest.mark.anyio

SERVICE = UrlPolicy("sandbox URLs")
PAGES = UrlPolicy("URLs", allow_env="DRA_FETCH_ALLOW_HOSTS", public_only=True)


def shared(*hosts: str) -> UrlPolicy:
    return UrlPolicy.for_run("webhooks", allow_env="DRA_WEBHOOK_ALLOW_HOSTS", allowed_hosts=hosts, shared=True)


def resolving_to(*addresses: str):
    async def resolve(host: str, port: int) -> list[str]:
        return list(addresses)

    return resolve


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
        ("http://0xa9fea9fe/", "0xa9fea9fe"),
        ("http://[::ffff:169.254.169.254]/", "[::ffff:169.254.169.254]"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal"),
        ("http://169.254.10.1:8080/", "169.254.10.1"),
        ("http://[fe80::1]/", "[fe80::1]"),
        ("http://100.100.100.200/", "100.100.100.200"),
    ],
)
def test_metadata_and_link_local_targets_are_refused_under_every_policy_even_when_listed(url, host):
    listed_page = UrlPolicy("URLs", allow_env="DRA_FETCH_ALLOW_HOSTS", allowed_hosts=(host,), public_only=True)

    for policy in (SERVICE, PAGES, shared(host), listed_page):
        refusal = policy.refusal(url)
        assert refusal is not None and ("metadata" in refusal or "link-local" in refusal), (policy, refusal)


async def test_a_name_that_resolves_to_a_metadata_address_is_refused_when_it_is_dialled():
    with pytest.raises(UrlRefused, match="hooks.example resolves to 169.254.169.254, which is a cloud metadata"):
        await shared("hooks.example").target("https://hooks.example/notify", resolver=resolving_to("169.254.169.254"))


def test_a_shared_deployment_allows_only_listed_hosts_loopback_and_private_included():
    policy = shared("hooks.example", "10.0.0.5:9000")

    assert policy.refusal("https://hooks.example/notify") is None
    assert policy.refusal("http://10.0.0.5:9000/in") is None
    refused = policy.refusal("http://10.0.0.5:9001/in")
    assert refused == (
        "refused http://10.0.0.5:9001/in: this deployment allows a run's webhooks only on the hosts the operator "
        "lists in DRA_WEBHOOK_ALLOW_HOSTS (hooks.example, 10.0.0.5:9000), and 10.0.0.5 is not one of them"
    )
    assert "none are listed" in str(shared().refusal("http://127.0.0.1:8080/"))


def test_without_a_shared_deployment_a_runs_service_may_be_internal_unless_the_operator_lists_hosts():
    open_policy = UrlPolicy.for_run(
        "sandbox URLs", allow_env="DRA_SANDBOX_ALLOWED_HOSTS", allowed_hosts=(), shared=False
    )
    listing = UrlPolicy.for_run(
        "sandbox URLs", allow_env="DRA_SANDBOX_ALLOWED_HOSTS", allowed_hosts=["sandbox.internal"], shared=False
    )

    assert open_policy.refusal("http://127.0.0.1:8900") is None
    assert open_policy.refusal("http://10.1.2.3:8900") is None
    assert listing.refusal("http://sandbox.internal:8900") is None
    assert "DRA_SANDBOX_ALLOWED_HOSTS (sandbox.internal)" in str(listing.refusal("http://127.0.0.1:8900"))


async def test_pages_reach_public_addresses_and_listed_hosts_only():
    listed = UrlPolicy("URLs", allow_env="DRA_FETCH_ALLOW_HOSTS", allowed_hosts=("127.0.0.1:8080",), public_only=True)

    assert "a loopback address" in str(PAGES.refusal("http://127.0.0.1:8080/"))
    assert listed.refusal("http://127.0.0.1:8080/") is None
    target = await PAGES.target("https://news.example/a?b=1#top", resolver=resolving_to("93.184.216.34"))
    assert [str(ip) for ip in target.addresses] == ["93.184.216.34"] and target.url == "https://news.example/a?b=1"
    with pytest.raises(UrlRefused, match="intranet.example resolves to 10.0.0.7, which is a private address"):
        await PAGES.target("https://intranet.example/", resolver=resolving_to("93.184.216.34", "10.0.0.7"))


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("file:///etc/passwd", "only http and https sandbox URLs are allowed"),
        ("gopher://example.org/", "only http and https sandbox URLs are allowed"),
        ("http:///path", "the URL has no host"),
        ("http://example.org:port/", "is not a valid URL"),
    ],
)
def test_only_http_and_https_urls_with_a_host_pass(url, words):
    assert words in str(SERVICE.refusal(url))


def test_a_refusal_never_shows_the_urls_password_or_query():
    refusal = str(shared().refusal("http://admin:hunter2@10.0.0.5:9000/in?token=abc"))

    assert "hunter2" not in refusal and "token=abc" not in refusal and "http://10.0.0.5:9000/in" in refusal


async def test_a_name_that_does_not_resolve_is_left_to_the_caller_to_classify():
    async def nothing(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(socket.gaierror):
        await SERVICE.target("http://no-such-host.example/", resolver=nothing)


def test_a_policy_that_allows_only_listed_hosts_must_name_their_setting():
    with pytest.raises(ValueError, match="must name their setting"):
        UrlPolicy("webhooks", only_listed=True)
