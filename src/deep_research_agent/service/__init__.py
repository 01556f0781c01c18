"""The agent as a service for other agents: its own MCP server (``mcp_server.py``), mounted by ``routes``, and
the server's own API reached as a request's caller (``caller.py``), and steering a run in progress as its
caller (``steering.py``)."""

from typing import TYPE_CHECKING

from ..domain.exports import lazy_exports

if TYPE_CHECKING:
    from .caller import caller_client
    from .mcp_server import MCP_PATH, McpService
    from .steering import NoRunningRun, SteerRequest, send_steering

__all__ = ["MCP_PATH", "McpService", "NoRunningRun", "SteerRequest", "caller_client", "send_steering"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
