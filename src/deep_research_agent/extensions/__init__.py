"""Extensions a deployment adds without touching the code: skills (``skills``) and custom tools
(owned by ``tools.custom``), both loaded once per graph build (``load_extensions``), never per run.
"""

from .loading import Extensions, load_extensions
from .skills import SkillCatalog, load_skills, skills_filesystem

__all__ = [
    "Extensions",
    "SkillCatalog",
    "load_extensions",
    "load_skills",
    "skills_filesystem",
]
