"""The offline stack every end-to-end benchmark runs on: scripted model, web stand-in and a real dev server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from testkit.agent_server import AgentServer
from testkit.scripted_model import ScriptedModelServer
from testkit.web import WebStandIn


@dataclass
class Stack:
    model: ScriptedModelServer
    web: WebStandIn
    server: AgentServer


@contextmanager
def running_stack(**env: str) -> Iterator[Stack]:
    """Start the stand-ins and one ``langgraph dev`` wired to them; ``env`` adds server settings."""
    with ScriptedModelServer() as model, WebStandIn() as web:
        server = AgentServer(
            {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-bench-000000000000",
                "TAVILY_API_BASE_URL": web.base_url,
                "DRA_FETCH_ALLOW_HOSTS": web.allow_host,
                # The benchmarks' scenarios script no claim judge; bench.claim_labels measures it.
                "DRA_CLAIM_JUDGE": "off",
                **env,
            }
        ).start()
        try:
            yield Stack(model=model, web=web, server=server)
        finally:
            server.stop()
