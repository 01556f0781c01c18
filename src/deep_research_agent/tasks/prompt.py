"""The named tasks' prompt section: how the orchestrator continues a task from its view and records the
decisions later runs must keep, when the run belongs to a named task."""

from __future__ import annotations

from .. import prompts
from ..domain.names import Role

__all__ = ["tasks_section"]


def tasks_section(role: Role, *, enabled: bool) -> str:
    """The orchestrator's section on the task view and ``record_decision``, when the run belongs to a named
    task (``enabled``); nothing for another role."""
    return prompts.template(prompts.Prompt.TASKS) if role == Role.ORCHESTRATOR and enabled else ""
