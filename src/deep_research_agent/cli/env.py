"""Where the client finds the agent server and the project: the settings both ``ask`` and ``doctor`` read.

Contract:
- ``default_url`` resolves the server URL as run.sh does: ``DRA_URL``, else ``http://$DRA_HOST:$DRA_PORT``
  (``PORT`` when ``DRA_PORT`` is unset; a wildcard host is reached through loopback);
- ``probe`` is True only for a 200 within ``PROBE_TIMEOUT_S``, and never raises on a transport error;
  ``server_answers`` is True when the agent server answers its health path: ``/ok`` (``langgraph dev``)
  or ``/health`` (Aegra, ``./run.sh serve``);
- ``settings.environment.read_dotenv`` reads ``KEY=VALUE`` lines (a missing file reads as empty);
- ``project_root`` is the nearest directory holding langgraph.json, else the working directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import httpx

from ..settings.environment import read_dotenv

__all__ = ["PROBE_TIMEOUT_S", "default_url", "probe", "project_root", "read_dotenv", "server_answers"]

PROBE_TIMEOUT_S = 2.0


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
    try:
        return httpx.get(url, timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


HEALTH_PATHS = ("/ok", "/health")


def server_answers(url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """True when an agent server at ``url`` answers its health path (``/ok`` on langgraph dev, ``/health`` on Aegra)."""
    return any(probe(f"{url}{path}", timeout) for path in HEALTH_PATHS)
