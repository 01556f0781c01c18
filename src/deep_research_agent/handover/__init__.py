"""The findings hand-over from a research sub-agent to the orchestrator: the contract (``contract``), the
sub-agent's gate that bounces a bad answer once (``gate``), and the orchestrator's side that publishes it.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "Finding": "contract",
        "Findings": "contract",
        "FindingsGateMiddleware": "gate",
        "HandOverMiddleware": "publish",
        "hand_back": "contract",
        "parse_findings": "contract",
        "validate_findings": "contract",
    },
)
