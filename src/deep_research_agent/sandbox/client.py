"""The sandbox service's HTTP API (the llm-sandbox sidecar's), as the agent calls it.

Contract of ``SidecarClient`` (one per run's session, closed with it):
- ``create_session`` is ``POST /sessions`` ``{timeout_seconds, network}`` → ``session_id``; ``exec`` is
  ``POST /sessions/{id}/exec`` ``{command, timeout_seconds, workdir}`` → ``ExecResult``; ``write_file`` is
  ``PUT /sessions/{id}/files`` (base64, so any bytes travel); ``read_file`` is ``GET /sessions/{id}/files``;
  ``delete_session`` is ``DELETE /sessions/{id}``. A file operation the service refuses (HTTP 400 whose
  ``error`` is one of deepagents' file error codes: ``file_not_found``, ``permission_denied``,
  ``is_directory``, ``invalid_path``) raises ``FileOperationFailed`` with that code;
- before a session is created, the service's host name is resolved and refused when it points at a link-local
  or metadata address (the URL policy, ``domain/url_policy.py``; settings checked only what the URL spells);
- the bearer token goes only to the configured service: it is attached by an auth hook that refuses any
  other origin, and redirects are never followed. No error text carries a header. Of a failing answer only
  the service's own error ``detail`` (a JSON field of the sandbox API) is shown, redacted, never any other body,
  and none of a 404 outside a session: whatever answers there is no sandbox service, and what it says must not
  reach the run;
- a session the service no longer knows (HTTP 404 on a session route, or "no such container" / "is not
  running" in an error or in an exec's stderr) raises ``SessionGone``, which the run's ``SandboxSession``
  answers by opening a fresh session; every other failure raises a classified ``ToolFailure``: permanent
  for a refused token (401/403), a request too large (413) or refused (400/422), transient for timeouts,
  refused connections, 429 (with its ``Retry-After``) and 5xx.

Why not llm-sandbox's own client: the PyPI package of that name is another project (an in-process
runner with no HTTP client), and the reference service ships none.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Generator
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ValidationError

from ..domain.errors import ToolFailure
from ..domain.retry_after import retry_after_s
from ..domain.secrets import redact, register_secrets
from ..domain.url_policy import UrlRefused
from ..settings.features import SANDBOX_URLS

_DEAD_SESSION = re.compile(r"no such container|is not running|no such session|unknown session|session not found", re.I)
_DETAIL_CHARS = 300
# Seconds added to an exec's own timeout before the HTTP call gives up: the service answers 124 first.
_EXEC_GRACE_S = 15.0
_CALL_TIMEOUT_S = 60.0


FILE_ERRORS = frozenset({"file_not_found", "permission_denied", "is_directory", "invalid_path"})


class SessionGone(Exception):
    """The sandbox session this call used no longer exists."""


class FileOperationFailed(Exception):
    """The service refused one file operation; ``code`` is deepagents' name for why."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(detail or code)
        self.code = code


class ExecResult(BaseModel):
    stdout: str = ""
    stderr: str = ""
    exit_code: int
    truncated: bool = False
    duration_ms: int | None = None


class _Session(BaseModel):
    session_id: str


class _FileContent(BaseModel):
    content: str
    encoding: str = "utf-8"
    truncated: bool = False


class _BearerToOrigin(httpx.Auth):
    """``Authorization: Bearer`` on requests to one origin only; any other request fails before it is sent."""

    def __init__(self, token: str, origin: tuple[str, str, int | None]) -> None:
        self._token = token
        self._origin = origin

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if (request.url.scheme, request.url.host, request.url.port) != self._origin:
            raise ToolFailure.permanent("the sandbox client refused to send its token to another address.")
        if self._token:
            request.headers["Authorization"] = f"Bearer {self._token}"
        yield request


class SidecarClient:
    """One run's connection to the sandbox service."""

    def __init__(self, url: str, token: str | None, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        parts = urlsplit(url)
        self.url = url.rstrip("/")
        register_secrets([token or ""])
        origin = (parts.scheme, parts.hostname or "", parts.port)
        self._http = httpx.AsyncClient(
            base_url=self.url,
            auth=_BearerToOrigin(token or "", origin),
            follow_redirects=False,
            timeout=_CALL_TIMEOUT_S,
            transport=transport,
        )

    async def create_session(self, *, timeout_s: int, network: bool) -> str:
        await self._check_host()
        body = await self._call(
            "POST", "/sessions", json={"timeout_seconds": max(int(timeout_s), 1), "network": network}
        )
        return _parse(_Session, body).session_id

    async def exec(self, session_id: str, command: str, *, timeout_s: int, workdir: str | None = None) -> ExecResult:
        payload: dict[str, Any] = {"command": command, "timeout_seconds": max(int(timeout_s), 1)}
        if workdir:
            payload["workdir"] = workdir
        body = await self._call(
            "POST", f"/sessions/{session_id}/exec", json=payload, session=True, timeout=timeout_s + _EXEC_GRACE_S
        )
        result = _parse(ExecResult, body)
        if result.exit_code != 0 and not result.stdout.strip() and _DEAD_SESSION.search(result.stderr):
            raise SessionGone(_detail(result.stderr))
        return result

    async def write_file(self, session_id: str, path: str, content: bytes) -> None:
        payload = {"path": path, "content": base64.b64encode(content).decode("ascii"), "encoding": "base64"}
        await self._call("PUT", f"/sessions/{session_id}/files", json=payload, session=True)

    async def read_file(self, session_id: str, path: str, *, max_bytes: int) -> tuple[bytes, bool]:
        """The file's bytes and whether they were cut at ``max_bytes``."""
        body = await self._call(
            "GET", f"/sessions/{session_id}/files", params={"path": path, "max_bytes": max_bytes}, session=True
        )
        got = _parse(_FileContent, body)
        data = base64.b64decode(got.content) if got.encoding == "base64" else got.content.encode("utf-8")
        return data, got.truncated

    async def delete_session(self, session_id: str) -> None:
        try:
            await self._call("DELETE", f"/sessions/{session_id}", session=True)
        except SessionGone:
            pass

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _check_host(self) -> None:
        try:
            await SANDBOX_URLS.target(self.url)
        except UrlRefused as refused:
            raise ToolFailure.permanent(f"{refused}; code execution is unavailable in this run.") from None
        except OSError:
            host = urlsplit(self.url).hostname
            raise ToolFailure.transient(f"cannot reach the sandbox service ({host} does not resolve).") from None

    async def _call(
        self,
        method: str,
        path: str,
        *,
        session: bool = False,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> Any:
        try:
            response = await self._http.request(method, path, timeout=timeout or _CALL_TIMEOUT_S, **kwargs)
        except httpx.TimeoutException:
            raise ToolFailure.transient(
                f"the sandbox service did not answer within {timeout or _CALL_TIMEOUT_S:.0f} s."
            ) from None
        except httpx.TransportError as exc:
            raise ToolFailure.transient(
                f"cannot reach the sandbox service ({_detail(str(exc)) or type(exc).__name__})."
            ) from None
        if response.is_success:
            try:
                return response.json()
            except ValueError:
                raise ToolFailure.transient("the sandbox service sent an answer that is not JSON.") from None
        raise _failure(response, session=session)


def _failure(response: httpx.Response, *, session: bool) -> Exception:
    status = response.status_code
    raw, code = _response_detail(response)
    detail = _detail(raw)
    said = f" ({detail})" if detail else ""
    if session and (status == 404 or (status >= 500 and _DEAD_SESSION.search(detail))):
        return SessionGone(f"HTTP {status}{said}")
    if status == 404:
        return ToolFailure.permanent("the sandbox service has no such endpoint (HTTP 404); check LLM_SANDBOX_URL.")
    if status == 400 and code in FILE_ERRORS:
        return FileOperationFailed(code, detail)
    if status in (401, 403):
        return ToolFailure.permanent(
            f"the sandbox service refused the token (HTTP {status}): LLM_SANDBOX_TOKEN must match the service's. "
            "Code execution is unavailable in this run; continue without it."
        )
    if status == 413:
        return ToolFailure.permanent(
            f"the request was too large for the sandbox service (HTTP 413){said}; send less at once."
        )
    if status == 429:
        wait = retry_after_s(response.headers)
        return ToolFailure.transient(f"the sandbox service is busy (HTTP 429){said}.", retry_after=wait)
    if status >= 500:
        return ToolFailure.transient(f"the sandbox service failed (HTTP {status}){said}.")
    return ToolFailure.permanent(f"the sandbox service refused the request (HTTP {status}){said}.")


def _response_detail(response: httpx.Response) -> tuple[str, str]:
    """The answer's ``detail`` as text, and its ``error`` code if it names one; nothing of any other body."""
    try:
        body = response.json()
    except ValueError:
        return "", ""
    if not isinstance(body, dict):
        return "", ""
    detail = body.get("detail")
    return (detail if isinstance(detail, str) else str(detail or "")), str(body.get("error") or "")


def _detail(text: str) -> str:
    flat = " ".join(redact(text or "").split())
    return flat if len(flat) <= _DETAIL_CHARS else flat[: _DETAIL_CHARS - 1] + "…"


def _parse(model: type[Any], body: Any) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError:
        raise ToolFailure.transient("the sandbox service sent an answer of an unexpected shape.") from None
