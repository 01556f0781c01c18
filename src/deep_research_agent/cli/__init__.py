"""Command-line client of the agent server: ``python -m deep_research_agent.cli {ask,doctor}``.
``ask`` researches a question and renders the run live; ``doctor`` checks the local setup."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ask import ask
from .doctor import run_doctor
from .view import RunView

if TYPE_CHECKING:
    from .__main__ import main

__all__ = ["RunView", "ask", "main", "run_doctor"]


def __getattr__(name: str) -> Any:
    # The entry point is loaded on first use, not here: ``python -m`` runs ``__main__`` itself, and a copy
    # imported while the package loads would make runpy warn and run the module twice.
    if name == "main":
        from .__main__ import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
