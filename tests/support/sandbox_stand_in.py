"""A small stand-in of the sandbox service for unit tests of the agent's client: the llm-sandbox HTTP API on
loopback, each session a pair of host folders mounted at ``/workspace`` and ``/tmp`` of a bubblewrap
process per exec (no seccomp, no cgroups: it isolates nothing that matters, the project's sandbox service
does that). What it adds is control: the tests kill sessions, make them die the way a container dies
("No such container" from the runtime, with HTTP 500) or the way the service forgets them (404), and count
what the client did.

API (bearer ``token`` when one is set, else open): ``POST /sessions``, ``POST /sessions/{id}/exec``,
``PUT`` and ``GET /sessions/{id}/files``, ``DELETE /sessions/{id}``, ``GET /healthz``. An unknown session
is 404 ``unknown session``; a missing file is 404 ``no such file``. ``death`` says how a killed session
answers: ``"404"``, ``"container"`` (HTTP 500 "No such container", as a service whose docker call failed)
or ``"exec"`` (an exec answered 200 with exit code 1 and the runtime's "No such container" on stderr, as
the reference service does). Counters: ``created``, ``deleted``, ``execs``,
``unauthorized``, and ``requests`` (method, path, whether a token came).
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support.loopback import LoopbackServer

BWRAP = shutil.which("bwrap")
_ROOTS = ("/workspace", "/tmp")


class SandboxStandIn(LoopbackServer):
    label = "sandbox-stand-in"

    def __init__(self, token: str = "") -> None:
        super().__init__()
        self.token = token
        self.root = Path(tempfile.mkdtemp(prefix="dra-sbx-"))
        self.sessions: dict[str, Path] = {}
        self.killed: set[str] = set()
        self.death = "404"
        self.requests: list[tuple[str, str, bool]] = []
        self.created_requests: list[dict[str, Any]] = []
        self.deleted: list[str] = []
        self.execs = 0
        self.unauthorized = 0

    @property
    def url(self) -> str:
        return self.root_url

    def reset(self) -> None:
        for folder in self.sessions.values():
            shutil.rmtree(folder, ignore_errors=True)
        self.sessions.clear()
        self.killed.clear()
        self.death = "404"
        self.requests.clear()
        self.created_requests.clear()
        self.deleted.clear()
        self.execs = self.unauthorized = 0

    def kill(self, session_id: str) -> None:
        """The session dies behind the client's back; it answers as ``death`` says from now on."""
        self.killed.add(session_id)
        shutil.rmtree(self.sessions.pop(session_id), ignore_errors=True)

    def live(self) -> list[str]:
        return list(self.sessions)

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        shutil.rmtree(self.root, ignore_errors=True)

    def build(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/_health", lambda request: JSONResponse({"ok": True})),
                Route("/healthz", lambda request: JSONResponse({"ok": True})),
                Route("/sessions", self._create, methods=["POST"]),
                Route("/sessions/{sid}", self._delete, methods=["DELETE"]),
                Route("/sessions/{sid}/exec", self._exec, methods=["POST"]),
                Route("/sessions/{sid}/files", self._files, methods=["PUT", "GET"]),
            ]
        )

    def _denied(self, request: Request) -> JSONResponse | None:
        presented = request.headers.get("authorization", "")
        self.requests.append((request.method, request.url.path, bool(presented)))
        if self.token and not hmac.compare_digest(presented.encode(), f"Bearer {self.token}".encode()):
            self.unauthorized += 1
            return JSONResponse({"detail": "missing or invalid bearer token"}, status_code=401)
        return None

    def _session(self, sid: str) -> Path | JSONResponse:
        if sid in self.sessions:
            return self.sessions[sid]
        if sid in self.killed and self.death == "container":
            return JSONResponse({"detail": f"Error response from daemon: No such container: sbx-{sid}"}, status_code=500)
        return JSONResponse({"detail": "unknown session"}, status_code=404)

    async def _create(self, request: Request) -> JSONResponse:
        if denied := self._denied(request):
            return denied
        self.created_requests.append(await request.json())
        sid = secrets.token_hex(8)
        folder = self.root / sid
        for name in ("workspace", "tmp"):
            (folder / name).mkdir(parents=True)
        self.sessions[sid] = folder
        return JSONResponse({"session_id": sid, "provider": "stand-in"})

    async def _delete(self, request: Request) -> JSONResponse:
        if denied := self._denied(request):
            return denied
        sid = request.path_params["sid"]
        found = self._session(sid)
        if isinstance(found, JSONResponse):
            return found
        self.deleted.append(sid)
        shutil.rmtree(self.sessions.pop(sid), ignore_errors=True)
        return JSONResponse({"ok": True})

    async def _exec(self, request: Request) -> JSONResponse:
        if denied := self._denied(request):
            return denied
        found = self._session(request.path_params["sid"])
        if isinstance(found, JSONResponse) and not (self.death == "exec" and request.path_params["sid"] in self.killed):
            return found
        body = await request.json()
        self.execs += 1
        if self.death == "exec" and request.path_params["sid"] in self.killed:
            return JSONResponse({"stdout": "", "stderr": "Error: No such container: sbx", "exit_code": 1})
        seconds = int(body.get("timeout_seconds", 60))
        command = [
            BWRAP or "bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--ro-bind", "/etc", "/etc", "--dev", "/dev", "--proc", "/proc",
            "--bind", str(found / "workspace"), "/workspace", "--bind", str(found / "tmp"), "/tmp",
            "--unshare-all", "--die-with-parent", "--chdir", body.get("workdir") or "/workspace",
            "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/workspace",
            "timeout", "-k", "1", str(seconds), "sh", "-c", body["command"],
        ]  # fmt: skip
        process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await process.communicate()
        return JSONResponse(
            {"stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace"), "exit_code": process.returncode}
        )

    async def _files(self, request: Request) -> JSONResponse:
        if denied := self._denied(request):
            return denied
        found = self._session(request.path_params["sid"])
        if isinstance(found, JSONResponse):
            return found
        if request.method == "PUT":
            body = await request.json()
            target = _host_path(found, body["path"])
            if target is None:
                return JSONResponse({"detail": "path outside /workspace and /tmp"}, status_code=400)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = base64.b64decode(body["content"]) if body.get("encoding") == "base64" else body["content"].encode()
            target.write_bytes(data)
            return JSONResponse({"ok": True})
        target = _host_path(found, request.query_params["path"])
        if target is None or not target.is_file():
            return JSONResponse({"detail": "no such file"}, status_code=404)
        limit = int(request.query_params.get("max_bytes", 1_000_000))
        data = target.read_bytes()
        return JSONResponse(
            {"path": request.query_params["path"], "content": base64.b64encode(data[:limit]).decode(), "encoding": "base64",
             "truncated": len(data) > limit}
        )  # fmt: skip


def _host_path(folder: Path, path: str) -> Path | None:
    for root in _ROOTS:
        if path == root or path.startswith(root + "/"):
            relative = Path(path[len(root) :].lstrip("/"))
            if ".." in relative.parts:
                return None
            return folder / root.lstrip("/") / relative
    return None
