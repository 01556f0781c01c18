"""An agent server with nothing in it, for the client commands' start-up: its health path and an empty store.

``empty_server()`` serves on loopback, in a thread, what ``./run.sh tasks`` and ``./run.sh kb list`` read of
a LangGraph server: ``GET /ok``, ``POST /store/items/search`` (no items) and ``POST /store/namespaces`` (none);
anything else, the per-user store view of ``./run.sh serve`` (``/dra/...``) included, is a 404, as on
``langgraph dev``. It yields the server's URL and stops when the context ends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ANSWERS: dict[tuple[str, str], dict[str, Any]] = {
    ("GET", "/ok"): {"ok": True},
    ("POST", "/store/items/search"): {"items": []},
    ("POST", "/store/namespaces"): {"namespaces": []},
}


class _EmptyServer(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._answer("POST")

    def _answer(self, method: str) -> None:
        body = _ANSWERS.get((method, self.path))
        payload = json.dumps(body if body is not None else {"detail": "Not Found"}).encode()
        self.send_response(200 if body is not None else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def empty_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmptyServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
