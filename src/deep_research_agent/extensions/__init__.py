"""Extensions a deployment adds without touching the code: skills (``skills``) and custom tools
(``custom_tools``), both loaded once per graph build (``load_extensions``), never per run.
"""

from .custom_tools import CustomTool, CustomToolSet, load_custom_tools
from .loading import Extensions, load_extensions
from .skills import load_skills, SkillCatalog, skills_filesystem

__all__ = [
    "CustomTool",
    "CustomToolSet",
    "Extensions",
    "SkillCatalog",
    "load_custom_tools",
    "load_extensions",
    "load_skills",
    "skills_filesystem",
]
