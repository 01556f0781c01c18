"""MCP failures as one readable line.

The MCP client reports transport failures as nested ``ExceptionGroup``s ("unhandled errors in a
TaskGroup") around the error that matters: an ``httpx.HTTPStatusError`` (401, 404, 5xx), an
``httpx.ConnectError``, a timeout, or an ``McpError`` such as "Session terminated". ``describe`` digs out
that innermost error and says it in one line, scrubbed of secrets, so the model, the events and the
logs never show a traceback or a group's generic message.
"""

from __future__ import annotations

import httpx

from ..domain.secrets import redact


def innermost(exc: BaseException) -> BaseException:
    """The first leaf of nested exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """One line on why an MCP connection or call failed."""
    leaf = innermost(exc)
    if isinstance(leaf, httpx.HTTPStatusError):
        response = leaf.response
        text = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
    elif isinstance(leaf, (httpx.TimeoutException, TimeoutError)):
        text = "the server did not answer in time"
    elif isinstance(leaf, httpx.ConnectError):
        text = f"cannot connect ({leaf or 'connection refused'})"
    else:
        text = str(leaf).strip() or type(leaf).__name__
    return redact(" ".join(text.split()))
