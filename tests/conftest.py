"""Session-wide stand-ins: the scripted model server and one real ``langgraph dev`` serving the graph."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from deep_research_agent.corpora.catalog import index_path
from deep_research_agent.corpora.fts5 import Fts5Index
from deep_research_agent.corpora.indexer import index_corpus
from deep_research_agent.corpora.vectors import embed_passages
from deep_research_agent.embeddings.bundled import BundledEmbedder
from deep_research_agent.run import Run, bound_run
from deep_research_agent.settings.corpora import CorpusSpec
from testkit import corpus as corpus_fixture
from testkit.agent_server import AgentServer
from testkit.bearer_proxy import BearerProxy
from testkit.mcp_servers import EVERYTHING_ENTRY, EverythingServer
from testkit.mcp_stand_in import McpStandIn
from testkit.sandbox_service import SandboxService
from testkit.scripted_model import ScriptedModelServer
from testkit.web import WebStandIn

E2E_MODEL_KEY = "sk-e2e-model-key-0123456789"
# Where the tests' webhook receiver listens (testkit/webhook_receiver.py), which the servers allow.
WEBHOOK_HOST = "127.0.0.1"
# The only root under which an end-to-end run may point its skills_dir or custom_tools_dir.
EXTENSION_FIXTURES = Path(__file__).parent / "fixtures" / "extensions"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="session")
def web_server() -> Iterator[WebStandIn]:
    """Loopback pages plus a Tavily-compatible API. No TAVILY_API_KEY is set, so runs default to keyless."""
    with WebStandIn() as server:
        yield server


class CorpusFixture:
    """The small corpus the tests write (``testkit/corpus.py``), declared and indexed in a data dir."""

    def __init__(self, root: Path, data_dir: Path) -> None:
        self.root = root
        self.data_dir = data_dir
        self.spec = CorpusSpec(
            name=corpus_fixture.CORPUS_NAME,
            root=str(root),
            title=corpus_fixture.CORPUS_TITLE,
            description="Manuals of the Halvorsen engine",
        )

    def env(self) -> dict[str, str]:
        declared = {
            self.spec.name: {"path": self.spec.root, "title": self.spec.title, "description": self.spec.description}
        }
        return {"DRA_CORPORA": json.dumps(declared), "DRA_DATA_DIR": str(self.data_dir)}

    def keyword_hits(self, query: str) -> list[str]:
        """The ids keyword search alone finds for ``query``."""
        index = Fts5Index(self.spec.name, index_path(self.data_dir, self.spec.name))
        try:
            return [hit.passage.id for hit in index.search(query, 5)]
        finally:
            index.close()

    def passage_id(self, query: str) -> str:
        """The id of the best passage for ``query``, as corpus_search would show it."""
        index = Fts5Index(self.spec.name, index_path(self.data_dir, self.spec.name))
        try:
            return index.search(query, 1)[0].passage.id
        finally:
            index.close()


@pytest.fixture(scope="session")
def test_corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusFixture:
    base = tmp_path_factory.mktemp("corpus")
    corpus = CorpusFixture(corpus_fixture.write_corpus(base / "docs"), base / "data")
    index = Fts5Index(corpus.spec.name, index_path(corpus.data_dir, corpus.spec.name), writable=True)
    try:
        index_corpus(corpus.spec, index, workers=1)
        embed_passages(index, BundledEmbedder())
    finally:
        index.close()
    return corpus


def agent_env(
    model_server: ScriptedModelServer, web_server: WebStandIn, corpus: CorpusFixture | None = None
) -> dict[str, str]:
    """The environment every test ``langgraph dev`` runs with: the stand-ins, no retries, no real keys, the
    claim judge off (a test that scripts the ``claim-judge`` role turns it on with ``claim_judge``), and the
    test corpus when given (the session server has it)."""
    return {
        **(corpus.env() if corpus else {}),
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": E2E_MODEL_KEY,
        "DRA_MODEL_TIER": "extra-low",
        "DRA_MAX_RETRIES": "0",
        "TAVILY_API_BASE_URL": web_server.base_url,
        "TAVILY_API_KEY": "",
        "DRA_FETCH_ALLOW_HOSTS": web_server.allow_host,
        "DRA_ALLOWED_EXTENSION_ROOTS": str(EXTENSION_FIXTURES),
        "DRA_CLAIM_JUDGE": "off",
        # The other search backends' stand-ins; runs pick them with configurable search_backends.
        **web_server.backend_env(),
        "DRA_SEARCH_BACKENDS": "tavily",
        # The stand-in plays a paid provider that honours cache breakpoints (auto would treat loopback as local).
        "DRA_PRICED": "on",
        "DRA_PROMPT_CACHING": "on",
        # Schedules may run every minute, and post their webhooks to the loopback receiver.
        "DRA_SCHEDULE_MIN_INTERVAL_S": "60",
        "DRA_WEBHOOK_ALLOW_HOSTS": WEBHOOK_HOST,
    }


@pytest.fixture(scope="session")
def agent_server(
    model_server: ScriptedModelServer, web_server: WebStandIn, test_corpus: CorpusFixture
) -> Iterator[AgentServer]:
    server = AgentServer(agent_env(model_server, web_server, test_corpus)).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def scripted(model_server: ScriptedModelServer) -> ScriptedModelServer:
    """The model server with a clean scenario and request log for this test."""
    model_server.reset()
    return model_server


@pytest.fixture
def web(web_server: WebStandIn) -> WebStandIn:
    """The web stand-in with Tavily's behaviour switches and request log cleared for this test."""
    web_server.tavily_reset()
    return web_server


@pytest.fixture
def run() -> Iterator[Run]:
    """Fresh run stores, current for code the test runs outside a graph."""
    with bound_run() as stores:
        yield stores


@pytest.fixture(scope="session")
def mcp_everything() -> Iterator[EverythingServer]:
    """The MCP project's reference server (server-everything, streamable HTTP) on loopback.

    ``./run.sh test`` installs it with ``npm ci`` in tests/js; without node the tests that need it skip,
    like the JS client's.
    """
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed, and ./run.sh test could not install it")
    if not EVERYTHING_ENTRY.is_file():
        pytest.fail("server-everything is missing: run `npm ci` in tests/js (./run.sh test does)")
    server = EverythingServer(node).start()
    try:
        yield server
    finally:
        server.stop()


GUARD_BEARER = "guard-bearer-0123456789"


@pytest.fixture(scope="session")
def guarded_everything(mcp_everything: EverythingServer) -> Iterator[BearerProxy]:
    """server-everything behind a bearer-checking reverse proxy that wants ``GUARD_BEARER``; its MCP
    endpoint is ``guarded_everything.url()``."""
    with BearerProxy(f"http://127.0.0.1:{mcp_everything.port}", GUARD_BEARER) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def mcp_stand_in_server() -> Iterator[McpStandIn]:
    with McpStandIn() as server:
        yield server


@pytest.fixture
def mcp_stand_in(mcp_stand_in_server: McpStandIn) -> McpStandIn:
    """The MCP stand-in with default behaviour and zeroed counters for this test."""
    mcp_stand_in_server.reset()
    return mcp_stand_in_server


@pytest.fixture(scope="session")
def sandbox_service() -> Iterator[SandboxService]:
    """The real sandbox service (``python -m dra_sandbox``, bubblewrap) on loopback, with its own token.

    Point the agent at it with ``LLM_SANDBOX_URL=sandbox_service.url`` and
    ``LLM_SANDBOX_TOKEN=sandbox_service.token``. Skips without bubblewrap, except under CI.
    """
    with SandboxService() as service:
        yield service


@pytest.fixture(scope="session")
def sandbox_agent(
    model_server: ScriptedModelServer, web_server: WebStandIn, sandbox_service: SandboxService
) -> Iterator[AgentServer]:
    """A ``langgraph dev`` whose operator environment attaches the sandbox service: the extract and coding
    sub-agents exist only on it."""
    env = {
        **agent_env(model_server, web_server),
        "LLM_SANDBOX_URL": sandbox_service.url,
        "LLM_SANDBOX_TOKEN": sandbox_service.token,
    }
    server = AgentServer(env).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port some other process is listening on, as far as run.sh can tell."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]
