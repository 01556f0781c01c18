"""``mcp-proxy`` (PyPI) serving stdio MCP servers over streamable HTTP, as internal gateways do.

``mcp-proxy --host 127.0.0.1 --port P --named-server time 'mcp-server-time --local-timezone UTC'`` serves
``http://127.0.0.1:P/servers/time/mcp``. Both commands come from the project's dev dependencies.
"""

from __future__ import annotations

import sys
from pathlib import Path

from testkit.mcp_servers import LoopbackProcess

BIN = Path(sys.executable).parent
TIME_SERVER = f"{BIN / 'mcp-server-time'} --local-timezone UTC"


class McpProxy(LoopbackProcess):
    """One ``mcp-proxy`` process with the named stdio servers it was given."""

    name = "mcp-proxy"

    def __init__(self, named: dict[str, str]) -> None:
        super().__init__()
        self.named = named

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/servers/{name}/mcp"

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        command = [str(BIN / "mcp-proxy"), "--host", "127.0.0.1", "--port", str(self.port)]
        for name, server in self.named.items():
            command += ["--named-server", name, server]
        return command, None
