"""Extensions a deployment adds without touching the code: skills (``skills``) and custom tools
(owned by ``tools.custom``), both loaded once per graph build (``load_extensions``), never per run.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "Extensions": "loading",
        "SkillCatalog": "skills",
        "load_extensions": "loading",
        "load_skills": "skills",
        "skills_filesystem": "skills",
    },
)
