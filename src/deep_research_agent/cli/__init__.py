"""Command-line client of the agent server: ``python -m deep_research_agent.cli {ask,steer,tasks,doctor,corpus,kb}``.
``ask`` researches a question and renders the run live; ``doctor`` checks the local setup; the others are
listed in ``__main__``. Nothing is loaded with the package: each command loads only what it uses.
"""

from typing import TYPE_CHECKING

from ..domain.exports import lazy_exports

if TYPE_CHECKING:
    # ``main`` is loaded on first use, never while the package loads: ``python -m`` runs ``__main__`` itself,
    # and a copy imported while the package loads would make runpy warn and run the module twice.
    from .__main__ import main
    from .ask import ask
    from .doctor import run_doctor
    from .view import RunView

__all__ = ["RunView", "ask", "main", "run_doctor"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
