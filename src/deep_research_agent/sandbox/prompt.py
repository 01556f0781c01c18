"""Code execution's prompt sections: for the orchestrator and the research sub-agent, what the attached
sandbox's coding and extract sub-agents do and how a computed figure is cited, or, with no sandbox, that
nothing may be claimed as computed; for the coding sub-agent, the skill helpers it may import."""

from __future__ import annotations

from collections.abc import Sequence

from .. import prompts
from ..domain.names import Role

__all__ = ["code_execution_section", "skill_helpers_section"]


def code_execution_section(role: Role, *, sandbox: bool) -> str:
    """Whether code can run in this run (``sandbox``), for the orchestrator and the research sub-agent."""
    if role not in (Role.ORCHESTRATOR, Role.RESEARCH_SUBAGENT):
        return ""
    return prompts.template(prompts.Prompt.CODE_EXECUTION if sandbox else prompts.Prompt.NO_CODE_EXECUTION)


def skill_helpers_section(role: Role, helper_paths: Sequence[str]) -> str:
    """The coding sub-agent's list of the skill modules uploaded to the sandbox; empty when there are none."""
    if role != Role.CODING_SUBAGENT or not helper_paths:
        return ""
    return prompts.fill(prompts.Prompt.SKILL_HELPERS, helpers="\n".join(f"- `{path}`" for path in helper_paths))
