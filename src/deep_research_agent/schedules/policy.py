"""Where a webhook may post: the run URL policy of "Fail closed" (``domain/url_policy.py``), for webhooks.

Contract: ``webhook_refusal(url, allow_hosts)`` is why the server refuses to post to ``url``, or None. Webhooks
follow the page policy: an http(s) URL with a host whose every address is public passes; a loopback,
private, multicast or reserved address (in any spelling, or as what the name resolves to) is refused unless
the operator lists the host (or ``host:port``) in ``DRA_WEBHOOK_ALLOW_HOSTS``; metadata and link-local
addresses are always refused; a name that does not resolve is refused too. This module only words the
policy's answer for a webhook: it holds no address rule of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from ..domain.url_policy import UrlPolicy, UrlRefused

ALLOW_SETTING = "DRA_WEBHOOK_ALLOW_HOSTS"


def webhook_policy(allow_hosts: Sequence[str] = ()) -> UrlPolicy:
    """Public addresses only, and the hosts the operator lists in ``DRA_WEBHOOK_ALLOW_HOSTS``."""
    return UrlPolicy("webhook URLs", allow_env=ALLOW_SETTING, allowed_hosts=tuple(allow_hosts), public_only=True)


async def webhook_refusal(url: str, allow_hosts: Sequence[str] = ()) -> str | None:
    """Why a webhook must not post to ``url`` (see the module contract), or None."""
    if not isinstance(url, str) or not url.strip():
        return "The webhook must be an http(s) URL."
    try:
        await webhook_policy(allow_hosts).target(url.strip())
    except UrlRefused as refused:
        return (
            f"The webhook is {refused}. A webhook posts to public addresses, and to loopback or private hosts only "
            f"when the operator lists them in {ALLOW_SETTING}."
        )
    except OSError:
        return f"The webhook's host {urlsplit(url.strip()).hostname} cannot be resolved: check the URL."
    return None
