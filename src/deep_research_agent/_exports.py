"""Package exports loaded on first use (PEP 562), so importing one module never drags in its siblings.

Why: the middleware packages import each other's leaf modules (a guard stops an agent through the
hand-over contract, the hand-over gate runs inside the guard chain); eager re-exports in their
``__init__`` would make those imports circular.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """``__all__`` and a module ``__getattr__`` that imports ``name`` from ``exports[name]`` (a submodule)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f".{exports[name]}", package), name)

    return sorted(exports), __getattr__
