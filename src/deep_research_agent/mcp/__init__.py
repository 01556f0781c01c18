"""MCP tools: which servers a run connects to, with which credentials (``servers``), their tool listings,
cached, as the research sub-agents' tools (``listing``), each call with its events, classified failures,
memo and evidence (``calls``), and failures as one readable line (``errors``).

The agent is always the MCP client; the server list comes from the run's ``configurable`` or the operator's
environment, with the precedence, URL guard and credential scoping that ``servers`` states.
"""

from .calls import instrument, source_label
from .listing import Listing, list_tools, listings_digest

__all__ = [
    "Listing",
    "instrument",
    "list_tools",
    "listings_digest",
    "source_label",
]
