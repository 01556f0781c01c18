"""Cassettes: a run's model, search and page traffic recorded as request → response pairs, and replayed offline.

Contract:
- ``CassetteServer(path, mode="record", model_upstream=URL, search_upstream=URL)`` is a loopback proxy:
  point the agent server's ``OPENAI_BASE_URL`` at ``model_url`` and ``TAVILY_API_BASE_URL`` at
  ``search_url``. In ``record`` mode it forwards each request (``Authorization`` and the ``X-DRA-Agent``
  role header included) to the upstream, answers with the upstream's whole answer, and appends the pair to
  the cassette file, written after every pair so a run cut short keeps what it recorded. Credentials are
  never written: no header but the role, and no ``api_key`` field of a body.
- In ``replay`` mode it answers from the file alone: a request gets the next unused recorded answer with
  the same key, else the next with the same shape (``Entry.shape``: its role, turn and first user message;
  the date or ids in a prompt may differ); a request the cassette cannot answer gets 599 with an error
  that says so, which the agent reports as a failed call: replay never reaches the network.
- The key of a request is the SHA-256 of its JSON body with dates and UUIDs masked and credentials removed.
- Pages (``web_fetch``): with ``DRA_FETCH_CASSETTE_URL`` set to ``page_url`` (an operator-only setting, so
  no page, prompt or run can set it), the fetcher asks the cassette for each page (``tools.fetch.download_via``).
  Recording reads the page with the fetcher's own guarded download (``tools.fetch.page_reply``: the SSRF
  check on every redirect hop, the size and time limits; ``fetch_allow_hosts`` as the operator's
  ``DRA_FETCH_ALLOW_HOSTS``) and records what it got, a refusal or failure included; replay answers by URL.

Why the standard library's server: the product ships no web framework (the server's is langgraph-api's),
and a loopback proxy answering one request at a time per thread needs none.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import socket
import threading
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, Field

from ..domain.conversation import DELIVERABLE_MESSAGE_NAME
from ..modelcalls.models import AGENT_HEADER
from ..tools.fetch import page_reply

CASSETTE_VERSION = 1
MODEL_PREFIX = "/model"
SEARCH_PREFIX = "/search"
PAGE_PATH = "/page"
DEFAULT_SEARCH_UPSTREAM = "https://api.tavily.com"
NO_ANSWER_STATUS = 599
UPSTREAM_TIMEOUT_S = 600.0
_MASKS = (
    (re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"), "<date>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE), "<uuid>"),
)
_CREDENTIALS = frozenset({"api_key", "apikey", "authorization"})

Kind = Literal["model", "search", "page"]


class Entry(BaseModel):
    kind: Kind
    path: str
    key: str
    shape: str
    role: str | None = None
    request: dict[str, Any] = Field(description="The request body, credentials removed.")
    status: int
    content_type: str
    body: str


class Cassette(BaseModel):
    version: int = CASSETTE_VERSION
    entries: list[Entry] = Field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> Cassette:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != CASSETTE_VERSION:
            raise ValueError(f"{path}: not a version {CASSETTE_VERSION} cassette")
        return cls.model_validate(data)


def _mask(text: str) -> str:
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k.lower() not in _CREDENTIALS}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def request_key(body: dict[str, Any]) -> str:
    return hashlib.sha256(_mask(json.dumps(_clean(body), sort_keys=True)).encode("utf-8")).hexdigest()


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def request_shape(kind: Kind, role: str | None, body: dict[str, Any]) -> str:
    """What a request is whatever its date or ids: its role, its turn, and the conversation's first user words."""
    if kind == "search":
        return f"search:{body.get('query')}"
    if kind == "page":
        return f"page:{body.get('url')}"
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    turn = sum(1 for m in messages if m.get("role") == "assistant" and m.get("name") != DELIVERABLE_MESSAGE_NAME)
    first_user = next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
    digest = hashlib.sha256(_mask(first_user).encode("utf-8")).hexdigest()[:16]
    return f"model:{role}:{turn}:{digest}"


class _Tape:
    """The cassette in memory: recorded pairs, and in replay the unused ones by key and by shape."""

    def __init__(self, path: Path, mode: Literal["record", "replay"]) -> None:
        self.path = path
        self.mode = mode
        self.lock = threading.Lock()
        self.cassette = Cassette.load(path) if mode == "replay" else Cassette()
        self.by_key: dict[str, deque[Entry]] = defaultdict(deque)
        self.by_shape: dict[str, deque[Entry]] = defaultdict(deque)
        for entry in self.cassette.entries:
            self.by_key[entry.key].append(entry)
            self.by_shape[entry.shape].append(entry)
        self.used: set[int] = set()
        self.misses: list[str] = []

    def record(self, entry: Entry) -> None:
        with self.lock:
            self.cassette.entries.append(entry)
            scratch = self.path.with_suffix(self.path.suffix + ".tmp")
            scratch.write_text(self.cassette.model_dump_json(indent=1), encoding="utf-8")
            scratch.replace(self.path)

    def take(self, key: str, shape: str) -> Entry | None:
        with self.lock:
            for queue in (self.by_key.get(key), self.by_shape.get(shape)):
                while queue:
                    # An entry sits in two queues; the one it was not taken from drops it here. By identity:
                    # two recordings of one page are equal, and each must answer a request of its own.
                    entry = queue.popleft()
                    if id(entry) not in self.used:
                        self.used.add(id(entry))
                        return entry
            self.misses.append(shape)
            return None


class CassetteServer:
    """The recording or replaying proxy on loopback (``port`` 0 lets the OS pick); a context manager."""

    def __init__(
        self,
        path: Path,
        *,
        mode: Literal["record", "replay"],
        model_upstream: str = "",
        search_upstream: str = DEFAULT_SEARCH_UPSTREAM,
        fetch_allow_hosts: tuple[str, ...] = (),
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if mode == "record" and not model_upstream:
            raise ValueError("recording needs the model endpoint to forward to (model_upstream)")
        self.tape = _Tape(Path(path), mode)
        self.upstreams = {
            "model": model_upstream.rstrip("/"),
            "search": (search_upstream or DEFAULT_SEARCH_UPSTREAM).rstrip("/"),
        }
        self.fetch_allow_hosts = fetch_allow_hosts
        self.http = httpx.Client(timeout=UPSTREAM_TIMEOUT_S)
        self.server = ThreadingHTTPServer((host, port), self._handler())
        self.server.daemon_threads = True
        # Kept-alive connections outlive ``shutdown()``: a client's pooled connection would reach this proxy's
        # handler after ``stop()``, even when a new proxy serves the port. ``stop()`` closes them.
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        self.thread: threading.Thread | None = None

    @property
    def mode(self) -> str:
        return self.tape.mode

    @property
    def root_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def model_url(self) -> str:
        return self.root_url + MODEL_PREFIX

    @property
    def search_url(self) -> str:
        return self.root_url + SEARCH_PREFIX

    @property
    def page_url(self) -> str:
        return self.root_url + PAGE_PATH

    @property
    def misses(self) -> list[str]:
        return list(self.tape.misses)

    def start(self) -> CassetteServer:
        self.thread = threading.Thread(target=self.server.serve_forever, name="cassette", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        with self.connections_lock:
            for connection in self.connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
        self.http.close()

    def __enter__(self) -> CassetteServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def answer(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, str, bytes]:
        """Status, content type and body for one request (the handler's whole job)."""
        kind: Kind
        if path.startswith(MODEL_PREFIX + "/"):
            kind, rest = "model", path[len(MODEL_PREFIX) :]
        elif path.startswith(SEARCH_PREFIX + "/"):
            kind, rest = "search", path[len(SEARCH_PREFIX) :]
        elif path == PAGE_PATH:
            kind, rest = "page", PAGE_PATH
        else:
            return (
                404,
                "application/json",
                _error(f"cassette: no route {path}; use {MODEL_PREFIX}/…, {SEARCH_PREFIX}/… or {PAGE_PATH}"),
            )
        role = headers.get(AGENT_HEADER.lower())
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {}
        body = body if isinstance(body, dict) else {"body": body}
        key, shape = request_key({"path": rest, **body}), request_shape(kind, role, body)
        if self.tape.mode == "replay":
            entry = self.tape.take(key, shape)
            if entry is None:
                return NO_ANSWER_STATUS, "application/json", _error(f"cassette: nothing recorded for {shape}")
            return entry.status, entry.content_type, entry.body.encode("utf-8")
        if kind == "page":
            return self._record_page(key, shape, body)
        forward = {k: v for k, v in headers.items() if k in ("authorization", "content-type", AGENT_HEADER.lower())}
        try:
            reply = self.http.request(method, self.upstreams[kind] + rest, content=raw, headers=forward)
        except httpx.HTTPError as exc:
            return 502, "application/json", _error(f"cassette: the {kind} upstream failed: {type(exc).__name__}")
        content_type = reply.headers.get("content-type", "application/json")
        self.tape.record(
            Entry(
                kind=kind, path=rest, key=key, shape=shape, role=role, request=_clean(body),
                status=reply.status_code, content_type=content_type, body=reply.text,
            )
        )  # fmt: skip
        return reply.status_code, content_type, reply.content

    def _record_page(self, key: str, shape: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        url = body.get("url")
        if not isinstance(url, str) or not url:
            return 400, "application/json", _error('cassette: a page request is {"url": "..."}')
        page = asyncio.run(page_reply(url, allow_hosts=self.fetch_allow_hosts)).model_dump_json()
        self.tape.record(
            Entry(
                kind="page", path=PAGE_PATH, key=key, shape=shape, request={"url": url},
                status=200, content_type="application/json", body=page,
            )
        )  # fmt: skip
        return 200, "application/json", page.encode("utf-8")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with proxy.connections_lock:
                    proxy.connections.add(self.connection)

            def finish(self) -> None:
                with proxy.connections_lock:
                    proxy.connections.discard(self.connection)
                super().finish()

            def _serve(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, content_type, body = proxy.answer(self.command, self.path.split("?")[0], headers, raw)
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _serve  # noqa: N815 - the names BaseHTTPRequestHandler dispatches to

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
                return

        return Handler


def _error(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "cassette_error", "code": None}}).encode("utf-8")
