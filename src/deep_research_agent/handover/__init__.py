"""The findings hand-over from a research sub-agent to the orchestrator: the contract (``contract``), the
sub-agent's gate that bounces a bad answer once (``gate``), and the orchestrator's side that publishes it.
"""

from .contract import hand_back, parse_findings, validate_findings
from .gate import FindingsGateMiddleware
from .publish import HandOverMiddleware

__all__ = [
    "FindingsGateMiddleware",
    "HandOverMiddleware",
    "hand_back",
    "parse_findings",
    "validate_findings",
]
