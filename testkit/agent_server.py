"""One real ``langgraph dev`` server for the whole end-to-end suite, and a helper to stream runs through the SDK.

The dev server silently moves to a random port when its port is busy, so ``start`` checks the log for
that warning and checks that the port it asked for answers with this project's graph.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from jsonschema import Draft202012Validator, FormatChecker
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from testkit.ports import free_port

PROJECT_ROOT = Path(__file__).resolve().parents[1]
GRAPH_ID = "deep_research_agent"
STREAM_MODES = ["messages", "updates", "custom"]
# Every event a run streams must validate against the published schema: an end reason, a halted value or
# a field the schema does not list fails the test that saw it.
EVENT_SCHEMA = Draft202012Validator(
    json.loads((PROJECT_ROOT / "schema" / "events.schema.json").read_text(encoding="utf-8")),
    format_checker=FormatChecker(),
)


class AgentServer:
    """``langgraph dev`` in a subprocess, in a scratch directory so its pickles never touch the tree."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        jobs: int = 10,
        graphs: dict[str, str] | None = None,
        http_app: str | None = None,
        store: dict[str, Any] | None = None,
        auth: dict[str, Any] | None = None,
        persist: bool = False,
    ) -> None:
        """``jobs`` is ``--n-jobs-per-worker``; ``graphs`` adds graph ids to this project's and ``http_app``
        replaces its ``http.app`` (benchmarks serve a baseline graph and a probe next to the product);
        ``store`` is langgraph.json's ``store`` (e.g. ``{"path": ...}`` for a custom store), ``auth`` its
        ``auth`` (``{"path": ...}``: who a request is, and what it may read); ``persist`` keeps the server's
        data in its scratch directory's ``.langgraph_api/`` as ``./run.sh up`` does, so ``restart`` finds it."""
        self.env = env
        self.jobs = jobs
        self.graphs = graphs or {}
        self.http_app = http_app
        self.store = store
        self.auth = auth
        self.persist = persist
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.workdir = Path(tempfile.mkdtemp(prefix="dra-dev-"))
        self.log_path = self.workdir / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """The ``langgraph dev`` process's pid (the root of the server's processes)."""
        if self.process is None:
            raise RuntimeError("not started")
        return self.process.pid

    def start(self, timeout: float = 90.0, port: int | None = None) -> AgentServer:
        self.port = port or free_port()
        config = json.loads((PROJECT_ROOT / "langgraph.json").read_text())
        config["dependencies"] = [str(PROJECT_ROOT)]
        config["graphs"].update({graph_id: {"path": path} for graph_id, path in self.graphs.items()})
        if self.http_app:
            config["http"]["app"] = self.http_app
        if self.store:
            config["store"] = self.store
        if self.auth:
            config["auth"] = self.auth
            # The product's own routes (/evidence, /reports, /mcp) sit behind the same auth as the API.
            config["http"]["enable_custom_route_auth"] = True
        (self.workdir / "langgraph.json").write_text(json.dumps(config, indent=2))
        env = {
            **os.environ,
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            "LANGGRAPH_NO_VERSION_CHECK": "true",
            "LANGGRAPH_DISABLE_FILE_PERSISTENCE": "false" if self.persist else "true",
            **self.env,
        }
        langgraph = Path(sys.executable).with_name("langgraph")
        command = [
            str(langgraph), "dev", "--no-browser", "--no-reload",
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n-jobs-per-worker", str(self.jobs), "--config", str(self.workdir / "langgraph.json"),
        ]  # fmt: skip
        log = self.log_path.open("ab")  # a restart adds to the same log
        self.process = subprocess.Popen(
            command, cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"langgraph dev exited early:\n{self.log()}")
            if "already in use" in self.log():
                self.stop()
                raise RuntimeError(f"port {self.port} was taken; langgraph dev moved away from it:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/ok", timeout=1).status_code == 200:
                    self._check_it_is_ours()
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"langgraph dev did not come up within {timeout}s:\n{self.log()}")

    def _check_it_is_ours(self) -> None:
        found = httpx.post(
            f"{self.url}/assistants/search", json={"graph_id": GRAPH_ID}, headers=self.probe_headers, timeout=5
        ).json()
        if not found:
            raise RuntimeError(f"the server on port {self.port} does not serve {GRAPH_ID}")

    @property
    def probe_headers(self) -> dict[str, str]:
        """What the start-up check sends: with auth on, the first of the ``DRA_AUTH_TOKENS`` (``user=token``
        pairs) that ``testkit/owner_auth.py`` checks."""
        pairs = [pair for pair in self.env.get("DRA_AUTH_TOKENS", "").split(",") if "=" in pair]
        return {"x-api-key": pairs[0].split("=", 1)[1].strip()} if self.auth and pairs else {}

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    async def log_after_run(self, thread_id: str, timeout: float = 10.0) -> str:
        """The server's whole log, once langgraph-api has logged the end of the thread's run.

        The stream can end before that line is written; once it is, every line the run wrote is in the log.
        Every line written during a run names its ``thread_id``.
        """
        deadline = time.monotonic() + timeout
        while True:
            log = self.log()
            if any("Background run" in line and thread_id in line for line in log.splitlines()):
                return log
            if time.monotonic() > deadline:
                raise AssertionError(f"langgraph-api logged no end of the run on thread {thread_id}")
            await asyncio.sleep(0.05)

    def stop(self) -> None:
        self._end()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def restart(self, timeout: float = 90.0) -> AgentServer:
        """Stop the server as Ctrl-C would and start it again on the same port and scratch directory."""
        self._end()
        return self.start(timeout, port=self.port)

    def _end(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=15)


@dataclass
class RunResult:
    """Everything a client saw during one streamed run, plus the thread state afterwards."""

    thread_id: str
    parts: list[tuple[str, Any]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    # When each part arrived (``time.monotonic()``), index for index with ``parts``.
    arrived: list[float] = field(default_factory=list)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Protocol events from the custom channel, orchestrator and sub-agents alike, in arrival order."""
        return [data for name, data in self.parts if name.split("|")[0] == "custom"]

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == event_type]

    def statuses(self, state: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.of_type("status") if state is None or e.get("state") == state]

    @property
    def end_statuses(self) -> list[dict[str, Any]]:
        return [e for e in self.of_type("status") if e.get("state") in ("done", "error")]

    @property
    def values(self) -> dict[str, Any]:
        return self.state.get("values") or {}

    @property
    def run_id(self) -> str:
        """The run's id, from the stream's first ``metadata`` part."""
        return next(data["run_id"] for name, data in self.parts if name == "metadata")

    def stream_errors(self) -> list[Any]:
        return [data for name, data in self.parts if name == "error"]


async def stream_run(
    server: str | LangGraphClient,
    message: str | None,
    *,
    configurable: dict[str, Any] | None = None,
    thread_id: str | None = None,
    timeout: float = 120.0,
    resume: Any = None,
    stream_mode: list[str] | None = None,
    send_config: bool = True,
) -> RunResult:
    """Stream one run through langgraph_sdk the way a frontend does, then read the thread state.

    ``server`` is the server's URL, or an SDK client to share between runs as a long-lived frontend does:
    each new client builds its own TLS context and connection pool, about 25 ms of the caller's CPU.
    With ``resume`` (and no ``message``) the run answers the thread's interrupt: ``Command(resume=...)``.
    With ``send_config`` off the request carries no ``config`` at all, as deep-agents-ui's resume.
    """
    client = get_client(url=server) if isinstance(server, str) else server
    if thread_id is None:
        thread_id = (await client.threads.create())["thread_id"]
    result = RunResult(thread_id=thread_id)

    async def consume() -> None:
        async for part in client.runs.stream(
            thread_id,
            GRAPH_ID,
            input={"messages": [{"role": "user", "content": message}]} if message is not None else None,
            command={"resume": resume} if resume is not None else None,
            config={"configurable": configurable or {}} if send_config else None,
            stream_mode=stream_mode or STREAM_MODES,
            stream_subgraphs=True,
        ):
            result.parts.append((part.event, part.data))
            result.arrived.append(time.monotonic())

    await asyncio.wait_for(consume(), timeout=timeout)
    result.state = await client.threads.get_state(thread_id)
    invalid = [(event, error.message) for event in result.events for error in EVENT_SCHEMA.iter_errors(event)]
    assert not invalid, f"events outside the published schema: {invalid[:5]}"
    return result


async def get_evidence(server: str, thread_id: str, run_id: str | None = None) -> httpx.Response:
    """``GET /evidence/{thread_id}[/{run_id}]``: the evidence texts the server stored for a thread or one run."""
    path = f"/evidence/{thread_id}" + (f"/{run_id}" if run_id else "")
    async with httpx.AsyncClient(base_url=server, timeout=10) as client:
        return await client.get(path)


async def stored_records(server: str, run: RunResult) -> dict[str, dict[str, Any]]:
    """One run's stored evidence records by id, full texts included; fails when the route has none."""
    answer = await get_evidence(server, run.thread_id, run.run_id)
    assert answer.status_code == 200, answer.text
    return {record["id"]: record for record in answer.json()}
