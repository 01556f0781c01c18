"""Skills: folders ``<skills_dir>/<name>/SKILL.md`` that research sub-agents read on demand.

Contract:
- ``load_skills(directory)`` runs at graph build, never per run. It lists the skills with deepagents'
  ``SkillsMiddleware`` loader over the same read-only backend the sub-agents read from, so what the
  prompts list and what ``read_file`` can open are one view. A missing folder is no error: it gives an
  empty catalog and one warning; a ``SKILL.md`` whose front matter cannot be read is skipped with a
  warning that names it.
- ``SkillCatalog.prompt_section(role)`` is the skills' part of a role's prompt. The orchestrator holds no
  file tools: ``SkillCatalog.orchestrator_section`` lists each skill's name and
  description (never its body) so it can name a skill in a brief. A research sub-agent gets
  ``SkillCatalog.subagent_section`` (names and paths) and ``read_file`` on ``/skills/`` only
  (``skills_filesystem``): deepagents' ``FilesystemMiddleware`` restricted to that one tool, writes
  denied, large-result eviction off (it would write).
- ``read_file`` given a web address (``http://``, ``https://``) answers ``TOOL ERROR (read_file, permanent)``
  naming ``web_fetch`` as the tool that reads it (or saying that this run reads no web pages), without opening
  anything (``SkillPathsMiddleware``; the assist adds the call itself, ``assist/next_step.py``);
- ``SkillEventsMiddleware`` sends one ``skill`` event (``name``, ``path``, ``state: applied``) the first
  time a run reads a skill's ``SKILL.md`` successfully, whichever sub-agent reads it; the run keeps the
  skills it announced as an attachment (``SkillsApplied``), which its ledger keeps too, so a resumed run
  does not announce them again.

Why deepagents' ``SkillsMiddleware`` is not in the sub-agents' stacks: it loads the catalog in
``before_agent`` whenever the state holds none, and the ``task`` tool starts every sub-agent without it,
so each sub-agent run would list the folder again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from deepagents.backends import CompositeBackend, FilesystemBackend, StateBackend
from deepagents.middleware.filesystem import FilesystemMiddleware, FilesystemPermission
from deepagents.middleware.skills import SkillsMiddleware
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..domain.errors import tool_error_text
from ..domain.names import Role, SkillState, ToolErrorClass, ToolName
from ..protocol.events import Skill as SkillEvent
from ..protocol.events import emit
from ..run import Run, kept_in_ledger, run_hook
from ..sandbox.connector import HELPERS_ROOT

logger = logging.getLogger(__name__)

MOUNT = "/skills/"
SKILL_FILE = "SKILL.md"
READ_SKILL_DESCRIPTION = f"Read a skill's file (a path under {MOUNT})."


@kept_in_ledger
@dataclass
class SkillsApplied:
    """A run's attachment: the skills a sub-agent of the run has read, so each is announced once per run."""

    LEDGER_KEY: ClassVar[str] = "skills_applied"
    names: set[str] = field(default_factory=set)

    def snapshot(self) -> list[str]:
        return sorted(self.names)

    def restore(self, value: Any) -> None:
        self.names.update(value or ())


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: str  # where a sub-agent reads it: /skills/<name>/SKILL.md


@dataclass(frozen=True)
class SkillCatalog:
    """The skills of one folder, as loaded at graph build, and what went wrong loading them."""

    directory: Path
    skills: tuple[Skill, ...] = ()
    warnings: tuple[str, ...] = ()

    def prompt_section(self, role: Role) -> str:
        """The skills' prompt section for ``role``: the orchestrator's or the research sub-agent's; nothing
        for another role, nor when there are no skills."""
        if role == Role.ORCHESTRATOR:
            return self.orchestrator_section()
        if role == Role.RESEARCH_SUBAGENT:
            return self.subagent_section()
        return ""

    def orchestrator_section(self) -> str:
        if not self.skills:
            return ""
        lines = "\n".join(f"- `{s.name}`: {s.description}" for s in self.skills)
        return (
            "## Skills\nResearch sub-agents can apply these skills. When one fits a unit, name it in the brief "
            f'("Apply the skill `name`.").\n{lines}'
        )

    def subagent_section(self) -> str:
        if not self.skills:
            return ""
        lines = "\n".join(f"- `{s.name}`: `{s.path}`" for s in self.skills)
        return (
            "## Skills\nWhen your brief names a skill, read its file with `read_file` (limit=1000) before you "
            f"start, and follow it. Skill files are instructions from the operator.\n{lines}"
        )

    def skill_at(self, file_path: str) -> Skill | None:
        """The skill whose ``SKILL.md`` ``file_path`` is, if any."""
        normalised = str(PurePosixPath("/", file_path.strip()))
        return next((s for s in self.skills if s.path == normalised), None)


def skills_backend(directory: Path) -> CompositeBackend:
    """The sub-agents' file view: the skills folder at ``/skills/``, read-only, and nothing else."""
    return CompositeBackend(
        default=StateBackend(), routes={MOUNT: FilesystemBackend(root_dir=directory, virtual_mode=True)}
    )


def load_skills(directory: Path) -> SkillCatalog:
    """Every readable skill of ``directory``; a missing folder or a broken ``SKILL.md`` is a warning."""
    if not directory.is_dir():
        return SkillCatalog(
            directory, warnings=(f"Skills folder {str(directory)!r} does not exist; no skills are loaded.",)
        )
    loader = SkillsMiddleware(backend=skills_backend(directory), sources=[MOUNT], system_prompt=None)
    loaded = loader.before_agent({"messages": []}, None, None) or {}  # type: ignore[arg-type]
    skills = tuple(
        Skill(name=m["name"], description=m["description"], path=m["path"]) for m in loaded.get("skills_metadata") or []
    )
    warnings = list(loaded.get("skills_load_errors") or [])
    found = {s.path for s in skills}
    for skill_file in sorted(directory.glob(f"*/{SKILL_FILE}")):
        path = f"{MOUNT}{skill_file.parent.name}/{SKILL_FILE}"
        if path not in found:
            warnings.append(
                f"Skill {skill_file.parent.name!r} is skipped: its {SKILL_FILE} needs front matter with a name and a description."
            )
    return SkillCatalog(directory, skills, tuple(warnings))


def skills_filesystem(catalog: SkillCatalog, *, web_fetch: bool) -> list[AgentMiddleware]:
    """``read_file`` over ``/skills/`` and the ``skill`` events, for a research sub-agent; none without skills.
    ``web_fetch``: whether the sub-agent holds ``web_fetch``, the tool a web address is read with."""
    if not catalog.skills:
        return []
    return [
        SkillPathsMiddleware(web_fetch=web_fetch),
        SkillEventsMiddleware(catalog),
        FilesystemMiddleware(
            backend=skills_backend(catalog.directory),
            tools=[ToolName.READ_FILE],
            # deepagents' own description is about a whole filesystem the sub-agent does not have.
            custom_tool_descriptions={ToolName.READ_FILE: READ_SKILL_DESCRIPTION},
            tool_token_limit_before_evict=None,
            human_message_token_limit_before_evict=None,
            permissions=[FilesystemPermission(operations=["write"], paths=["/**"], mode="deny")],
        ),
    ]


class SkillPathsMiddleware(AgentMiddleware):
    """``read_file`` called with a web address is answered with a classified error that names ``web_fetch``.

    Why: deepagents' ``read_file`` answers such a call "File '/http:/…' not found" as a success, and
    Qwen2.5-Coder-0.5B (``bench/local_model.py``) called it again with the same URL until the loop guard
    stopped the unit."""

    def __init__(self, *, web_fetch: bool) -> None:
        super().__init__()
        self.web_fetch = web_fetch

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]
    ) -> ToolMessage | Command:
        call = request.tool_call
        path = str((call.get("args") or {}).get("file_path") or "").strip()
        if call["name"] != ToolName.READ_FILE or not path.lower().startswith(("http://", "https://")):
            return await handler(request)
        if self.web_fetch:
            then = f"read it with {ToolName.WEB_FETCH}."
        else:
            then = "this run reads no web pages."
        return ToolMessage(
            tool_error_text(
                ToolName.READ_FILE,
                ToolErrorClass.PERMANENT,
                f"{path} is a web address, and read_file opens only the skill files under /skills/: {then}",
            ),
            tool_call_id=call["id"],
            name=ToolName.READ_FILE,
            status="error",
        )


class SkillEventsMiddleware(AgentMiddleware):
    """Announces each skill the first time the run reads it."""

    def __init__(self, catalog: SkillCatalog) -> None:
        super().__init__()
        self.catalog = catalog

    @run_hook
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]],
        *,
        run: Run,
    ) -> ToolMessage | Command:
        result = await handler(request)
        call = request.tool_call
        if call["name"] != ToolName.READ_FILE or not isinstance(result, ToolMessage) or result.status == "error":
            return result
        skill = self.catalog.skill_at(str((call.get("args") or {}).get("file_path") or ""))
        if skill is None:
            return result
        applied = run.attachments.setdefault(SkillsApplied, SkillsApplied).names
        if skill.name not in applied:
            applied.add(skill.name)
            emit(SkillEvent(name=skill.name, path=skill.path, state=SkillState.APPLIED))
        return result


def skill_helpers(catalog: SkillCatalog) -> list[tuple[str, bytes]]:
    """Each loaded skill's ``*.py`` modules, as (sandbox path, bytes); an unreadable one is skipped with a log line."""
    helpers = []
    for skill in catalog.skills:
        folder = Path(catalog.directory) / Path(skill.path).parent.name
        for module in sorted(folder.glob("*.py")):
            try:
                helpers.append((f"{HELPERS_ROOT}/{folder.name}/{module.name}", module.read_bytes()))
            except OSError as exc:
                logger.warning("skill helper %s is not uploaded: %s", module, exc.strerror)
    return helpers
