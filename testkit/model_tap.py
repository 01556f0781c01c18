"""A loopback reverse proxy in front of a real model server that records what the model wrote in each call.

Every request is forwarded as it came (method, path, body, headers but ``Host``) and the answer streamed
back unchanged, SSE included, so the product cannot tell the tap is there. Each chat completion becomes a
``TappedCall`` once its answer has been read: the agent that asked (the ``X-DRA-Agent`` header), the output
cap fields the request carried, and the reply as the server wrote it: its text, the native tool calls
(name and raw arguments) and the finish reason, assembled from the stream's deltas when streamed.
A diagnostic for real-model checks (``bench/local_model.py``): it shows what a model wrote, before the
product reads tool calls out of its text.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from deep_research_agent.modelcalls.models import AGENT_HEADER
from testkit.forwarding import passed_back, upstream_request
from testkit.loopback import LoopbackServer

CAP_FIELDS = ("max_tokens", "max_completion_tokens", "n_predict")


@dataclass
class TappedCall:
    """One chat completion: who asked, with which output caps, and what the server answered."""

    agent: str
    status: int
    stream: bool
    caps: dict[str, Any]
    messages: int
    text: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    finish_reason: str | None = None
    # The request as sent, to replay a call against the server with a changed prompt.
    request: dict[str, Any] = field(default_factory=dict, repr=False)


class ModelTap(LoopbackServer):
    """Forwards to ``upstream`` (a server root such as ``http://127.0.0.1:8080``); ``calls`` in answer order.

    ``on_call`` sees each call as soon as its answer has been read (a bench prints the run as it goes)."""

    label = "model-tap"

    def __init__(self, upstream: str, on_call: Callable[[TappedCall], None] | None = None) -> None:
        super().__init__()
        self.upstream = upstream.rstrip("/")
        self.on_call = on_call
        self.calls: list[TappedCall] = []

    def build(self) -> Starlette:
        # A fresh connection per request: llama-server closes idle ones, and a stale pooled connection would
        # fail a request the product sent fine.
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(30.0, read=None), limits=httpx.Limits(max_keepalive_connections=0)
        )

        async def health(request: Request) -> Response:
            return JSONResponse({"ok": True})

        async def forward(request: Request) -> Response:
            body = await request.body()
            try:
                answer = await client.send(upstream_request(client, self.upstream, request, body), stream=True)
            except httpx.TransportError as exc:
                return JSONResponse({"error": f"model-tap: upstream unreachable: {exc!r}"}, status_code=502)
            chunks = answer.aiter_raw()
            if request.method == "POST" and request.url.path.endswith("/chat/completions"):
                chunks = self._recorded(chunks, request, body, answer.status_code)
            return passed_back(answer, chunks)

        return Starlette(
            routes=[Route("/_health", health), Route("/{path:path}", forward, methods=["GET", "POST", "DELETE"])],
        )

    async def _recorded(
        self, chunks: AsyncIterator[bytes], request: Request, body: bytes, status: int
    ) -> AsyncIterator[bytes]:
        sent: dict[str, Any] = json.loads(body or b"{}")
        read = bytearray()
        try:
            async for chunk in chunks:
                read.extend(chunk)
                yield chunk
        finally:
            call = TappedCall(
                agent=request.headers.get(AGENT_HEADER, "?"),
                status=status,
                stream=bool(sent.get("stream")),
                caps={key: sent[key] for key in CAP_FIELDS if key in sent},
                messages=len(sent.get("messages") or []),
                request=sent,
            )
            _read_answer(call, read.decode("utf-8", "replace"))
            self.calls.append(call)
            if self.on_call is not None:
                self.on_call(call)


def _read_answer(call: TappedCall, raw: str) -> None:
    """Fills the call's reply from a JSON answer or an SSE stream of deltas (whatever could be read)."""
    if not call.stream:
        try:
            choice = (json.loads(raw).get("choices") or [{}])[0]
        except (json.JSONDecodeError, AttributeError):
            call.text = raw
            return
        message = choice.get("message") or {}
        call.text = message.get("content") or ""
        call.tool_calls = [
            ((c.get("function") or {}).get("name", ""), (c.get("function") or {}).get("arguments", ""))
            for c in message.get("tool_calls") or []
        ]
        call.finish_reason = choice.get("finish_reason")
        return
    pieces: list[str] = []
    tools: dict[int, list[str]] = {}
    for line in raw.splitlines():
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        try:
            choices = json.loads(line[5:]).get("choices") or []
        except (json.JSONDecodeError, AttributeError):
            continue
        for choice in choices:
            delta = choice.get("delta") or {}
            pieces.append(delta.get("content") or "")
            for tool in delta.get("tool_calls") or []:
                name_and_args = tools.setdefault(tool.get("index", 0), ["", ""])
                function = tool.get("function") or {}
                name_and_args[0] = function.get("name") or name_and_args[0]
                name_and_args[1] += function.get("arguments") or ""
            call.finish_reason = choice.get("finish_reason") or call.finish_reason
    call.text = "".join(pieces)
    call.tool_calls = [(name, args) for name, args in (tools[i] for i in sorted(tools))]
