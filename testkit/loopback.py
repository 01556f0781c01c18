"""A Starlette app served by uvicorn in a background thread on a loopback socket, for test stand-ins.

``start()`` binds the socket before uvicorn runs, so the port is known without racing, and returns once the
app answers ``GET /_health``. uvicorn skips signal handlers off the main thread, so the owning process
(pytest, a benchmark) keeps its own Ctrl-C behaviour.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Self

import httpx
import uvicorn
from starlette.applications import Starlette


class LoopbackServer:
    """Base of the stand-ins: subclasses provide ``build()`` and may override ``scheme``/``uvicorn_options``."""

    scheme = "http"
    label = "stand-in"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._requested_port = port
        self._port: int | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._client: httpx.Client | None = None

    def build(self) -> Starlette:
        raise NotImplementedError

    def uvicorn_options(self) -> dict[str, Any]:
        return {}

    def admin_client_options(self) -> dict[str, Any]:
        return {}

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"{self.label} is not started")
        return self._port

    @property
    def root_url(self) -> str:
        return f"{self.scheme}://{self._host}:{self.port}"

    def start(self, timeout: float = 10.0) -> Self:
        if self._thread is not None:
            raise RuntimeError(f"{self.label} already started")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._requested_port))
        self._socket = sock
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.build(), log_level="warning", lifespan="off", access_log=False, **self.uvicorn_options()
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=self.label, daemon=True
        )
        self._thread.start()
        self._client = httpx.Client(base_url=self.root_url, timeout=10.0, **self.admin_client_options())
        deadline = time.monotonic() + timeout
        while True:
            if not self._thread.is_alive():
                self.stop()
                raise RuntimeError(f"{self.label} thread exited during startup")
            try:
                if self._client.get("/_health").status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.label} did not answer /_health within {timeout}s")
            time.sleep(0.02)

    def stop(self, timeout: float = 5.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        if self._client is not None:
            self._client.close()
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = self._client = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _admin(self) -> httpx.Client:
        if self._client is None:
            raise RuntimeError(f"{self.label} is not started")
        return self._client
