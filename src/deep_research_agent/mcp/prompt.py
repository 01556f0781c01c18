"""The MCP tools' prompt section: which MCP servers offer the run tools and how a finding from one is cited,
for the orchestrator (the servers, to list in Sources) and the research sub-agent (the servers, how to use
their tools and read their errors); each followed by the deployment's own guidance (``mcp_prompt``)."""

from __future__ import annotations

from collections.abc import Sequence

from .. import prompts
from ..domain.names import Role
from .calls import source_label
from .listing import Listing

__all__ = ["mcp_section"]


def mcp_section(role: Role, listings: Sequence[Listing], *, deployment_prompt: str = "") -> str:
    """The section for ``role`` on the servers of ``listings`` that offer tools; empty when none does."""
    ready = [listing.server for listing in listings if listing.tools]
    if not ready or role not in (Role.ORCHESTRATOR, Role.RESEARCH_SUBAGENT):
        return ""
    servers = ", ".join(f"`{server.label}` (cite as `{source_label(server)}`)" for server in ready)
    name = prompts.Prompt.MCP_ORCHESTRATOR if role == Role.ORCHESTRATOR else prompts.Prompt.MCP_TOOLS
    section = prompts.fill(name, servers=servers)
    guidance = deployment_prompt.strip()
    return f"{section}\n{guidance}" if guidance else section
