"""The agent as a service for other agents: its own MCP server (``mcp_server.py``), mounted by ``routes``."""

from .mcp_server import MCP_PATH, McpService

__all__ = ["MCP_PATH", "McpService"]
