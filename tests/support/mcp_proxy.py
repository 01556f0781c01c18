"""``mcp-proxy`` (PyPI) serving stdio MCP servers over streamable HTTP, as internal gateways do.

``mcp-proxy --host 127.0.0.1 --port P --named-server time 'mcp-server-time --local-timezone UTC'`` serves
``http://127.0.0.1:P/servers/time/mcp``. Both commands come from the project's dev dependencies.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Self

from tests.support.mcp_servers import free_port

BIN = Path(sys.executable).parent
TIME_SERVER = f"{BIN / 'mcp-server-time'} --local-timezone UTC"


class McpProxy:
    """One ``mcp-proxy`` process with the named stdio servers it was given."""

    def __init__(self, named: dict[str, str]) -> None:
        self.named = named
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log_file = tempfile.NamedTemporaryFile(prefix="mcp-proxy-", suffix=".log", delete=False)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/servers/{name}/mcp"

    def start(self, timeout: float = 30.0) -> Self:
        self.port = free_port()
        command = [str(BIN / "mcp-proxy"), "--host", "127.0.0.1", "--port", str(self.port)]
        for name, server in self.named.items():
            command += ["--named-server", name, server]
        self.process = subprocess.Popen(command, stdout=self.log_file, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mcp-proxy exited early:\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"mcp-proxy did not listen within {timeout}s:\n{self.log()}")

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
