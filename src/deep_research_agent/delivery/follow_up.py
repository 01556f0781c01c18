"""The follow-up prompt section: a new message on a thread that holds a report is read against that report
first, answered from it when it can be, and researched only for what it lacks. Every thread may hold an
earlier report, so the orchestrator always has it."""

from __future__ import annotations

from .. import prompts
from ..domain.names import Role

__all__ = ["follow_up_section"]


def follow_up_section(role: Role) -> str:
    """The orchestrator's section on follow-up questions; nothing for another role."""
    return prompts.template(prompts.Prompt.FOLLOW_UP) if role == Role.ORCHESTRATOR else ""
