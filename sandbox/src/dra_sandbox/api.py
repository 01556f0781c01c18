"""The HTTP API: the reference llm-sandbox sidecar's routes, status codes and bodies, over any provider.

Contract:
- ``Authorization: Bearer <LLM_SANDBOX_TOKEN>`` on every route but ``/healthz`` and ``/readyz``, compared
  in constant time as bytes; an empty token disables auth. A bad or missing one gets 401
  ``{"detail": "missing or invalid bearer token"}`` before the body is read.
- A body over ``SANDBOX_MAX_REQUEST_BYTES`` gets 413, whether or not it declared its length. A body that
  is not valid JSON or fails validation gets 422 naming where and why, never echoing the input.
- A session id that is not 16 lowercase hex digits gets 422; an unknown, deleted or expired session 404
  ``{"detail": "session … not found", "error": "session_not_found"}``. Creating past
  ``SANDBOX_MAX_SESSIONS`` gets 429 with ``Retry-After``.
- A file operation the sandbox refuses (missing file, read-only path, a directory) gets 400 with
  ``error`` set to deepagents' FileOperationError name (``file_not_found``, ``permission_denied``,
  ``is_directory``, ``invalid_path``) — never 404, which callers read as "the session is gone".
- Logs carry method, route, session id, status and duration; never bodies, tokens or query strings.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .models import (
    SESSION_ID_PATTERN,
    CreateSessionRequest,
    ExecRequest,
    ListFilesResponse,
    ReadFileResponse,
    RunRequest,
    Session,
    WriteFileRequest,
)
from .provider import BwrapProvider, FileOperationFailed, SandboxSetupFailed, SessionLimitReached, SessionNotFound
from .settings import SandboxSettings

log = logging.getLogger("dra_sandbox.api")

UNAUTHORIZED = "missing or invalid bearer token"
PUBLIC_PATHS = frozenset({"/healthz", "/readyz"})
RETRY_AFTER_SECONDS = 5
SESSION_ID = re.compile(SESSION_ID_PATTERN)

Model = TypeVar("Model", bound=BaseModel)


class ApiError(Exception):
    def __init__(self, status: int, detail: Any, *, error: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(str(detail))
        self.status, self.detail, self.error, self.headers = status, detail, error, headers or {}

    def response(self) -> JSONResponse:
        body: dict[str, Any] = {"detail": self.detail}
        if self.error:
            body["error"] = self.error
        return JSONResponse(body, status_code=self.status, headers=self.headers)


def _validation_detail(exc: ValidationError, where: str) -> list[dict[str, Any]]:
    return [
        {"loc": [where, *error.get("loc", ())], "msg": error.get("msg", ""), "type": error.get("type", "")}
        for error in exc.errors(include_input=False, include_url=False, include_context=False)
    ]


class AuthGuard:
    """Refuses requests without the bearer token before any endpoint (or body read) runs."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.expected is None or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        presented = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                presented = value
                break
        if not hmac.compare_digest(presented, self.expected):
            response = JSONResponse({"detail": UNAUTHORIZED}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class ServiceApi:
    def __init__(self, settings: SandboxSettings, provider: BwrapProvider) -> None:
        self.settings = settings
        self.provider = provider
        self.ready = False

    # helpers -------------------------------------------------------------------------------------

    async def _body(self, request: Request, model: type[Model]) -> Model:
        limit = self.settings.max_request_bytes
        declared = request.headers.get("content-length")
        too_large = ApiError(413, f"request body exceeds {limit} bytes (SANDBOX_MAX_REQUEST_BYTES)")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise too_large
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_large
            chunks.append(chunk)
        try:
            data = json.loads(b"".join(chunks) or b"{}")
        except (ValueError, UnicodeDecodeError):
            raise ApiError(422, [{"loc": ["body"], "msg": "body is not valid JSON", "type": "json_invalid"}]) from None
        if not isinstance(data, dict):
            raise ApiError(422, [{"loc": ["body"], "msg": "body must be a JSON object", "type": "dict_type"}])
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise ApiError(422, _validation_detail(exc, "body")) from None

    @staticmethod
    def _query(request: Request, model: type[Model]) -> Model:
        try:
            return model.model_validate(dict(request.query_params))
        except ValidationError as exc:
            raise ApiError(422, _validation_detail(exc, "query")) from None

    @staticmethod
    def _session_id(request: Request) -> str:
        session_id = request.path_params["session_id"]
        if not SESSION_ID.match(session_id):
            raise ApiError(
                422,
                [
                    {
                        "loc": ["path", "session_id"],
                        "msg": "session id must be 16 lowercase hex digits",
                        "type": "string_pattern_mismatch",
                    }
                ],
            )
        return session_id

    # routes --------------------------------------------------------------------------------------

    async def healthz(self, _request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "provider": self.provider.name})

    async def readyz(self, _request: Request) -> JSONResponse:
        report = self.provider.report
        body = {
            "ok": self.ready,
            "provider": self.provider.name,
            "isolation": report.level,
            "verdict": report.verdict(),
            "missing": report.missing(),
        }
        return JSONResponse(body, status_code=200 if self.ready else 503)

    async def create_session(self, request: Request) -> JSONResponse:
        body = await self._body(request, CreateSessionRequest)
        if body.image is not None:
            raise ApiError(400, "the bubblewrap provider runs the host's read-only system; it takes no image")
        if body.network and not self.settings.allow_network:
            raise ApiError(400, "network access is disabled on this sandbox (SANDBOX_ALLOW_NETWORK=false)")
        try:
            session_id = await self.provider.create(
                timeout_seconds=body.timeout_seconds, network=body.network, memory_mb=body.memory_mb, cpus=body.cpus
            )
        except SessionLimitReached as exc:
            raise ApiError(429, str(exc), headers={"Retry-After": str(RETRY_AFTER_SECONDS)}) from None
        return JSONResponse(Session(session_id=session_id, provider=self.provider.name).model_dump())

    async def delete_session(self, request: Request) -> JSONResponse:
        await self.provider.destroy(self._session_id(request))
        return JSONResponse({"ok": True})

    async def exec_command(self, request: Request) -> JSONResponse:
        session_id = self._session_id(request)
        body = await self._body(request, ExecRequest)
        result = await self.provider.exec(
            session_id, body.command, timeout_seconds=body.timeout_seconds, workdir=body.workdir
        )
        return JSONResponse(result.model_dump())

    async def run_code(self, request: Request) -> JSONResponse:
        session_id = self._session_id(request)
        body = await self._body(request, RunRequest)
        result = await self.provider.run_python(session_id, body.code, timeout_seconds=body.timeout_seconds)
        return JSONResponse(result.model_dump())

    async def write_file(self, request: Request) -> JSONResponse:
        session_id = self._session_id(request)
        body = await self._body(request, WriteFileRequest)
        await self.provider.write_file(session_id, body.path, body.payload())
        return JSONResponse({"ok": True})

    async def read_file(self, request: Request) -> JSONResponse:
        session_id = self._session_id(request)
        query = self._query(request, ReadFileQuery)
        content, encoding, truncated = await self.provider.read_file(session_id, query.path, max_bytes=query.max_bytes)
        return JSONResponse(
            ReadFileResponse(path=query.path, content=content, encoding=encoding, truncated=truncated).model_dump()
        )

    async def list_files(self, request: Request) -> JSONResponse:
        session_id = self._session_id(request)
        query = self._query(request, ListFilesQuery)
        _, entries, truncated = await self.provider.list_files(session_id, query.path)
        return JSONResponse(ListFilesResponse(path=query.path, entries=entries, truncated=truncated).model_dump())


class ReadFileQuery(BaseModel):
    path: str = Field(min_length=1)
    max_bytes: int = Field(1_000_000, ge=1)


class ListFilesQuery(BaseModel):
    path: str = Field("/workspace", min_length=1)


def _handled(
    endpoint: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """Turn the provider's typed errors into the API's status codes, and log the request."""

    async def wrapper(request: Request) -> Response:
        started = time.monotonic()
        session_id = request.path_params.get("session_id", "-")
        try:
            response = await endpoint(request)
        except ApiError as exc:
            response = exc.response()
        except SessionNotFound:
            response = ApiError(404, f"session {session_id} not found", error="session_not_found").response()
        except FileOperationFailed as exc:
            response = ApiError(400, exc.detail, error=exc.code).response()
        except SandboxSetupFailed as exc:
            log.error(
                "%s %s session=%s: the sandbox could not be set up: %s",
                request.method,
                request.url.path,
                session_id,
                exc,
            )
            response = ApiError(
                500,
                "the sandbox could not be set up for this command; see the service log",
                error="sandbox_setup_failed",
            ).response()
        except Exception:
            log.exception("%s %s session=%s failed", request.method, request.url.path, session_id)
            response = ApiError(500, "internal sandbox error; see the service log").response()
        log.info(
            "%s %s session=%s -> %d in %dms",
            request.method,
            request.scope["route_path"],
            session_id,
            response.status_code,
            (time.monotonic() - started) * 1000,
        )
        return response

    return wrapper


def create_app(settings: SandboxSettings, provider: BwrapProvider) -> Starlette:
    api = ServiceApi(settings, provider)

    @asynccontextmanager
    async def lifespan(_app: Starlette):
        if not provider.started:
            await provider.startup()
        api.ready = True
        try:
            yield
        finally:
            api.ready = False
            await provider.shutdown()

    def route(path: str, endpoint: Callable[[Request], Awaitable[Response]], method: str) -> Route:
        async def with_path(request: Request) -> Response:
            request.scope["route_path"] = path
            return await _handled(endpoint)(request)

        return Route(path, with_path, methods=[method])

    async def http_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    routes = [
        route("/healthz", api.healthz, "GET"),
        route("/readyz", api.readyz, "GET"),
        route("/sessions", api.create_session, "POST"),
        route("/sessions/{session_id}", api.delete_session, "DELETE"),
        route("/sessions/{session_id}/exec", api.exec_command, "POST"),
        route("/sessions/{session_id}/run", api.run_code, "POST"),
        route("/sessions/{session_id}/files", api.write_file, "PUT"),
        route("/sessions/{session_id}/files", api.read_file, "GET"),
        route("/sessions/{session_id}/files/list", api.list_files, "GET"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_error})
    app.add_middleware(AuthGuard, token=settings.token.get_secret_value())
    return app
