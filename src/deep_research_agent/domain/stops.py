"""Why a run or an agent stops: the causes every layer names, from the guard that fires to the end status.

``RunError`` is a failure that ends the run, kept in the orchestrator's state.
"""

from __future__ import annotations

from typing import TypedDict


class RunError(TypedDict):
    """A failure that ends the run, as kept in the orchestrator's state (plain strings, checkpointable)."""

    reason: str
    detail: str
