"""``load_extensions(settings, results, cfg=...)``: the skills and custom tools one graph is built with, and
their warnings.

A run whose settings have problems (a refused ``custom_tools_dir`` among them) ends before any model call,
so its graph loads nothing (``refused``): no plugin named by a client is ever imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..settings import ExtensionSettings
from ..tools.custom import CustomToolSet, load_custom_tools
from ..tools.results import ResultLimits
from .skills import SkillCatalog, load_skills


@dataclass(frozen=True)
class Extensions:
    skills: SkillCatalog
    custom_tools: CustomToolSet

    @property
    def warnings(self) -> tuple[str, ...]:
        """What every run of the graph reports once, as ``status: warning``."""
        return (*self.skills.warnings, *(str(e) for e in self.custom_tools.errors))


def load_extensions(
    settings: ExtensionSettings,
    results: ResultLimits,
    *,
    cfg: Any,
    skills: SkillCatalog | None = None,
    refused: bool = False,
) -> Extensions:
    """The graph's skills (``skills`` when the caller loaded them already) and custom tools, whose large
    results ``results`` bounds; ``cfg`` is what the plugins are handed (``load_custom_tools``). ``refused``
    (the run's settings have problems): none of either, nothing imported."""
    if refused:
        return Extensions(SkillCatalog(Path(settings.skills_dir)), CustomToolSet(Path(settings.custom_tools_dir)))
    return Extensions(
        skills or load_skills(Path(settings.skills_dir)),
        load_custom_tools(
            Path(settings.custom_tools_dir), cfg, timeout_s=settings.custom_tool_timeout, results=results
        ),
    )
