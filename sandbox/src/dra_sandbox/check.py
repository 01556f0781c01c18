"""Is a sandbox service answering at a URL, and does it accept our token? Asked without creating anything.

``check_service(url, token)`` calls ``/healthz`` (no auth), then an authenticated read of a session id
that cannot exist: 401 means the token is wrong; any other answer (404 here, an error from the reference
sidecar's docker provider) means it was accepted. Works against this service and the reference one.
The token is sent only to ``url`` and never appears in the result.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Literal

from pydantic import BaseModel

State = Literal["ready", "token_rejected", "down", "not_a_sandbox"]
PROBE_SESSION = "0" * 16


class ServiceCheck(BaseModel):
    state: State
    provider: str | None = None
    detail: str


def _get(url: str, token: str | None, timeout: float) -> tuple[int, bytes]:
    request = urllib.request.Request(url, method="GET")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - operator-configured URL
            return response.status, response.read(65536)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(65536)


def check_service(url: str, token: str, timeout: float = 3.0) -> ServiceCheck:
    url = url.rstrip("/")
    try:
        status, body = _get(f"{url}/healthz", None, timeout)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return ServiceCheck(state="down", detail=f"nothing answers at {url} ({reason})")
    try:
        health = json.loads(body)
    except ValueError:
        health = None
    if status != 200 or not isinstance(health, dict) or not health.get("ok"):
        return ServiceCheck(state="not_a_sandbox", detail=f"{url}/healthz answered {status} without a sandbox's health")
    provider = str(health.get("provider") or "unknown")
    try:
        status, _ = _get(f"{url}/sessions/{PROBE_SESSION}/files/list", token, timeout)
    except (urllib.error.URLError, OSError) as exc:
        return ServiceCheck(state="down", provider=provider, detail=f"{url} stopped answering ({exc})")
    if status == 401:
        where = "LLM_SANDBOX_TOKEN is empty but" if not token else "LLM_SANDBOX_TOKEN does not match the one"
        return ServiceCheck(
            state="token_rejected",
            provider=provider,
            detail=f"{where} the sandbox at {url} requires (401): set the same value on both sides",
        )
    return ServiceCheck(state="ready", provider=provider, detail=f"up at {url} ({provider}); the token is accepted")
