"""Session-wide stand-ins: the scripted model server and one real ``langgraph dev`` serving the graph."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.agent_server import AgentServer
from tests.support.scripted_model import ScriptedModelServer

E2E_MODEL_KEY = "sk-e2e-model-key-0123456789"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="session")
def agent_server(model_server: ScriptedModelServer) -> Iterator[AgentServer]:
    server = AgentServer(
        {
            "OPENAI_BASE_URL": model_server.base_url,
            "OPENAI_API_KEY": E2E_MODEL_KEY,
            "DRA_MODEL_TIER": "extra-low",
            "DRA_MAX_RETRIES": "0",
        }
    ).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def scripted(model_server: ScriptedModelServer) -> ScriptedModelServer:
    """The model server with a clean scenario and request log for this test."""
    model_server.reset()
    return model_server
