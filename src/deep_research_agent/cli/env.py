"""Where the client finds the agent server and the project: the settings both ``ask`` and ``doctor`` read.

Contract:
- ``default_url`` resolves the server URL as run.sh does: ``DRA_URL``, else ``http://$DRA_HOST:$DRA_PORT``
  (``PORT`` when ``DRA_PORT`` is unset; a wildcard host is reached through loopback);
- ``probe`` is True only for a 200 within ``PROBE_TIMEOUT_S``, and never raises on a transport error;
- ``read_dotenv`` reads ``KEY=VALUE`` lines (comments, blank lines, ``export`` and quotes allowed); a
  missing file reads as empty;
- ``project_root`` is the nearest directory holding langgraph.json, else the working directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import httpx

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


def read_dotenv(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` pairs of a .env file (comments, blank lines and ``export`` prefixes allowed)."""
    values: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return values
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


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
