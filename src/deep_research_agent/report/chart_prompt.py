"""The orchestrator's prompt section on charts: how to write a ```` ```chart ```` block and how its points are checked."""

from __future__ import annotations

from .. import prompts
from ..domain.names import Role


def charts_section(role: Role, *, max_charts: int) -> str:
    """The orchestrator's section on charts while a report may hold any (``max_charts`` above 0); nothing otherwise."""
    if role != Role.ORCHESTRATOR or max_charts <= 0:
        return ""
    return prompts.fill(prompts.Prompt.CHARTS, max_charts=str(max_charts))
