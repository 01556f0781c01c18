"""The base of every middleware that the orchestrator and each sub-agent carry an instance of.

langchain refuses two middleware of one name in an agent and names each by its class, so an instance's
name carries its role (``LoopGuard[research-subagent]``): the stacks of different agents never collide,
and a trace says whose guard acted.
"""

from __future__ import annotations

from typing import ClassVar

from langchain.agents.middleware import AgentMiddleware


class PerRoleMiddleware(AgentMiddleware):
    """A middleware bound to one agent role; subclasses set ``label``."""

    label: ClassVar[str]

    def __init__(self, *, role: str) -> None:
        super().__init__()
        self.role = role

    @property
    def name(self) -> str:
        return f"{self.label}[{self.role}]"
