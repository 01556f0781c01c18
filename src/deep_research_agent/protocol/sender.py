"""Who is emitting: the orchestrator, or the sub-agent one ``task`` call started.

``handover.publish`` sets ``current_sender`` around each ``task`` call; parallel calls each hold their own
value (a ``ContextVar``), so every event and every evidence record names the agent it came from.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from ..domain.names import Role


@dataclass(frozen=True)
class Sender:
    """The orchestrator, or a sub-agent started by one ``task`` call (``unit`` is its brief)."""

    role: str = Role.ORCHESTRATOR
    task_id: str | None = None
    unit: str | None = None


# A frozen Sender is immutable, so one shared default is safe.
current_sender: ContextVar[Sender] = ContextVar("current_sender", default=Sender())  # noqa: B039
