"""The model tap (the real-model check's window on llama-server): it passes each call through unchanged
and records who asked, the output cap sent and what the server wrote."""

from __future__ import annotations

import json

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from deep_research_agent.modelcalls.models import AGENT_HEADER
from testkit.loopback import LoopbackServer
from testkit.model_tap import ModelTap


class FixedReplyServer(LoopbackServer):
    """An OpenAI-compatible chat endpoint that writes one fixed reply and keeps the headers it was sent."""

    label = "fixed-reply"

    def __init__(self) -> None:
        super().__init__()
        self.headers: list[dict[str, str]] = []

    def build(self) -> Starlette:
        async def complete(request: Request) -> Response:
            self.headers.append(dict(request.headers))
            reply = {"role": "assistant", "content": '{"name": "web_search", "arguments": {"query": "pharos"}}'}
            return JSONResponse({"choices": [{"message": reply, "finish_reason": "stop"}]})

        async def health(request: Request) -> Response:
            return JSONResponse({"ok": True})

        return Starlette(routes=[Route("/_health", health), Route("/v1/chat/completions", complete, methods=["POST"])])


def test_the_tap_passes_a_call_through_and_records_the_agent_the_cap_and_the_reply():
    upstream = FixedReplyServer().start()
    tap = ModelTap(upstream.root_url).start()
    try:
        body = {"messages": [{"role": "user", "content": "Who built the Pharos?"}], "max_completion_tokens": 64}
        answer = httpx.post(
            f"{tap.root_url}/v1/chat/completions", json=body, headers={AGENT_HEADER: "research-subagent"}, timeout=10
        )
    finally:
        tap.stop()
        upstream.stop()

    assert answer.status_code == 200
    assert json.loads(answer.json()["choices"][0]["message"]["content"])["name"] == "web_search"
    [call] = tap.calls
    assert (call.agent, call.status, call.caps, call.messages) == (
        "research-subagent",
        200,
        {"max_completion_tokens": 64},
        1,
    )
    assert call.text.startswith('{"name": "web_search"') and call.finish_reason == "stop"
    [sent] = upstream.headers
    assert sent[AGENT_HEADER.lower()] == "research-subagent" and sent["host"] != tap.root_url.split("//")[1]


def test_the_tap_answers_502_when_the_model_server_is_unreachable():
    upstream = FixedReplyServer().start()
    gone = upstream.root_url
    upstream.stop()
    tap = ModelTap(gone).start()
    try:
        answer = httpx.post(f"{tap.root_url}/v1/chat/completions", json={"messages": []}, timeout=10)
    finally:
        tap.stop()
    assert answer.status_code == 502 and "upstream unreachable" in answer.json()["error"]
    assert tap.calls == []
