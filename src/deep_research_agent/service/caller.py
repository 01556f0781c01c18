"""The server's own LangGraph API, reached as the caller of a request: the MCP server's tools and the
``/reports`` route read threads and start runs through it, so the deployment's auth (``langgraph dev``'s
``auth.path``, Aegra's ``deploy/auth.py``) decides what the caller may read, on either server.

Over HTTP, not in-process: langgraph-api's in-process client goes through ``/noauth``, which skips auth, and
Aegra has no in-process client at all. The address is the operator's ``DRA_SELF_URL`` when set (a server that
speaks TLS itself, or listens on a Unix socket), else plain ``http://`` on the address and port of the socket the
request came in on, under the app's mount prefix: never one rebuilt from the request's headers, which a
TLS-terminating proxy (``X-Forwarded-Proto: https``) or a caller (``Host``) sets.
"""

from __future__ import annotations

import os

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from starlette.requests import Request

# The caller's credentials, and nothing else of its request: a bearer or API key, or the web UI's session
# cookie on a shared deployment (``deploy/routes.py``).
CREDENTIAL_HEADERS = ("authorization", "x-api-key", "cookie")
SELF_URL_VARIABLE = "DRA_SELF_URL"


def caller_client(request: Request, *, read_timeout_s: float | None = None) -> LangGraphClient:
    """An SDK client for the server ``request`` reached, carrying the caller's credentials; ``read_timeout_s``
    None waits as long as the server streams (a run's end is its time ceiling's to decide)."""
    headers = {name: value for name in CREDENTIAL_HEADERS if (value := request.headers.get(name))}
    # The SDK sends x-api-key from its own argument only; None, not omitted, so it never reads this server's
    # own LANGGRAPH_API_KEY from the environment.
    api_key = headers.pop("x-api-key", None)
    return get_client(
        url=own_api_url(request), api_key=api_key, headers=headers, timeout=httpx.Timeout(10.0, read=read_timeout_s)
    )


def own_api_url(request: Request) -> str:
    """The base URL of this server's API for a call made while answering ``request`` (see the module contract)."""
    if configured := os.environ.get(SELF_URL_VARIABLE, "").strip().rstrip("/"):
        return configured
    host, port = request.scope.get("server") or (None, None)
    if port is None:
        raise RuntimeError(
            f"This server listens on no TCP port it can call itself on; set {SELF_URL_VARIABLE} to its API's URL."
        )
    if host in ("0.0.0.0", "::", None):
        host = "127.0.0.1"
    host = f"[{host}]" if ":" in str(host) else host
    return f"http://{host}:{port}{request.scope.get('root_path', '').rstrip('/')}"
