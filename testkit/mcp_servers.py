"""Real MCP servers for the end-to-end tests, on loopback.

``EverythingServer`` is ``@modelcontextprotocol/server-everything`` (pinned in tests/js/package-lock.json,
installed by ``./run.sh test`` with ``npm ci``) in its streamableHttp mode: the reference server of the MCP
project, serving ``/mcp``. It takes its port from ``PORT`` and has no host flag (it listens on every
interface); the tests dial it on 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self

from testkit.ports import free_port

PROJECT_ROOT = Path(__file__).resolve().parents[1]
EVERYTHING_ENTRY = PROJECT_ROOT / "tests/js/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


class LoopbackProcess:
    """A server process in a session of its own, ready once its port accepts connections; its log is kept
    in a temporary file so a failure can show it."""

    name = "server"

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log_file = tempfile.NamedTemporaryFile(prefix=f"{self.name}-", suffix=".log", delete=False)

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        """The command line and environment (None: this process's) for ``self.port``."""
        raise NotImplementedError

    def start(self, timeout: float = 30.0) -> Self:
        self.port = free_port()
        command, env = self.command()
        self.process = subprocess.Popen(
            command, env=env, stdout=self.log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited early:\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not listen within {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return Path(self.log_file.name).read_text(errors="replace")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        Path(self.log_file.name).unlink(missing_ok=True)


class EverythingServer(LoopbackProcess):
    """``node …/server-everything/dist/index.js streamableHttp`` in a subprocess of its own session."""

    name = "mcp-everything"

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        return [self.node, str(EVERYTHING_ENTRY), "streamableHttp"], {**os.environ, "PORT": str(self.port)}
