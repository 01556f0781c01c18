"""The agent as a service for other agents: its own MCP server (``mcp_server.py``), mounted by ``routes``, and
the server's own API reached as a request's caller (``caller.py``)."""

from .caller import caller_client
from .mcp_server import MCP_PATH, McpService

__all__ = ["MCP_PATH", "McpService", "caller_client"]
