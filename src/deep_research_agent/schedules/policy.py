"""Where a webhook may post: the run URL policy of "Fail closed", applied to a schedule's (or a run's) webhook.

Contract: ``webhook_refusal(url, allow_hosts)`` is why the server refuses to post to ``url``, or None. An
http(s) URL with a host whose every address is public passes; a loopback, private, link-local, metadata,
multicast or reserved address (in any spelling, or as what the name resolves to) is refused unless the
operator lists the host (or ``host:port``) in ``DRA_WEBHOOK_ALLOW_HOSTS``; a name that does not resolve is
refused too. The check is the one ``web_fetch`` applies to a page (``tools/fetch.resolve_public_target``), so
this module only words its answer for a webhook: it holds no address rule of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..domain.errors import ToolFailure
from ..domain.urls import http_url_problem
from ..tools.fetch import resolve_public_target

ALLOW_SETTING = "DRA_WEBHOOK_ALLOW_HOSTS"
_FETCH_ENDING = " Only public web addresses can be fetched."


async def webhook_refusal(url: str, allow_hosts: Sequence[str] = ()) -> str | None:
    """Why a webhook must not post to ``url`` (see the module contract), or None."""
    if not isinstance(url, str) or not url.strip():
        return "The webhook must be an http(s) URL."
    if problem := http_url_problem(url.strip(), "webhook URLs"):
        return f"The webhook is refused: {problem}."
    try:
        await resolve_public_target(url.strip(), allow_hosts)
    except ToolFailure as failure:
        said = failure.message.removesuffix(_FETCH_ENDING).rstrip(".")
        return (
            f"The webhook is {said}. A webhook posts only to public addresses unless the operator lists the host "
            f"in {ALLOW_SETTING}."
        )
    return None
