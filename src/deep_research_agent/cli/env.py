"""Where the client finds the agent server and the project: the settings both ``ask`` and ``doctor`` read.

Contract:
- ``default_url`` resolves the server URL as run.sh does: ``DRA_URL``, else ``http://$DRA_HOST:$DRA_PORT``
  (``PORT`` when ``DRA_PORT`` is unset; a wildcard host is reached through loopback);
- ``probe`` is True only for a 200 within ``PROBE_TIMEOUT_S``, and never raises on a transport error;
  ``server_answers`` is True when the agent server answers its health path: ``/ok`` (``langgraph dev``)
  or ``/health`` (Aegra, ``./run.sh serve``);
- ``settings.environment.read_dotenv`` reads ``KEY=VALUE`` lines (a missing file reads as empty);
- ``project_root`` is the nearest directory holding langgraph.json, else the working directory;
- ``store_client(url)`` is the SDK client ``kb`` and ``tasks`` read a user's store items with, and the
  caller's identity: on a shared deployment (``./run.sh serve``: Aegra scopes its own store API by caller,
  where the graph never writes) its per-user view at ``USER_STORE_PREFIX`` and the user it names; elsewhere
  the server's store API and None.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..settings.environment import read_dotenv

if TYPE_CHECKING:
    import httpx

__all__ = [
    "PROBE_TIMEOUT_S",
    "USER_STORE_PREFIX",
    "default_url",
    "probe",
    "project_root",
    "read_dotenv",
    "server_answers",
    "server_missing",
    "store_client",
    "refusal",
]

PROBE_TIMEOUT_S = 2.0
USER_STORE_PREFIX = "/dra"


def default_url(environ: Mapping[str, str] | None = None) -> str:
    """The server URL run.sh starts: ``DRA_URL``, else ``http://$DRA_HOST:$DRA_PORT`` (``PORT`` as fallback)."""
    environ = os.environ if environ is None else environ
    if environ.get("DRA_URL"):
        return environ["DRA_URL"].rstrip("/")
    host = environ.get("DRA_HOST") or "127.0.0.1"
    if host in ("0.0.0.0", "::"):  # a wildcard bind is reached through loopback
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    port = environ.get("DRA_PORT") or environ.get("PORT") or "2024"
    return f"http://{host}:{port}"


def project_root(start: Path | None = None) -> Path:
    """The nearest directory holding langgraph.json, else the working directory."""
    start = (start or Path.cwd()).resolve()
    for candidate in (start, *start.parents):
        if (candidate / "langgraph.json").is_file():
            return candidate
    return start


def probe(url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """True when ``url`` answers 200 within ``timeout`` seconds."""
    import httpx  # loaded by the commands that reach a server, not by those that never do (corpus)

    try:
        return httpx.get(url, timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


HEALTH_PATHS = ("/ok", "/health")


def server_answers(url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """True when an agent server at ``url`` answers its health path (``/ok`` on langgraph dev, ``/health`` on Aegra)."""
    return any(probe(f"{url}{path}", timeout) for path in HEALTH_PATHS)


def server_missing(url: str) -> str | None:
    """What a client command says when no agent server answers at ``url`` (None when one does)."""
    if server_answers(url):
        return None
    return f"No agent server at {url} — start it with ./run.sh (or pass --url / set DRA_URL)."


async def store_client(url: str) -> tuple[Any, str | None]:
    """The store client for a user's items on the server at ``url``, and the caller's identity when known."""
    import httpx
    from langgraph_sdk import get_client

    view = get_client(url=url.rstrip("/") + USER_STORE_PREFIX)
    try:
        found = await view.http.get("/store")
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code != 404:
            raise
        return get_client(url=url), None
    return view, str(found["user"])


def refusal(exc: httpx.HTTPStatusError) -> str:
    """What the server said when it refused a request: ``detail`` (langgraph-api) or ``message`` (Aegra)."""
    try:
        body = exc.response.json()
    except ValueError:
        return f"HTTP {exc.response.status_code}"
    said = body.get("detail") or body.get("message") if isinstance(body, dict) else None
    return f"HTTP {exc.response.status_code}: {said}" if said else f"HTTP {exc.response.status_code}"
