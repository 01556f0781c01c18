"""A package's exports, each loaded from its module on first use, so importing one module of a package is cheap.

A package ``__init__`` that imports every module it exports makes ``from ..run.owner import X`` load the
whole package, the agent's framework with it: a client command that needs one constant would pay seconds
for the graph's middleware. Such a package lists its exports once, as the imports of an ``if
TYPE_CHECKING:`` block (what type checkers and editors read), and ends with::

    __getattr__, __dir__ = lazy_exports(__name__, __file__)

Contract:
- an exported name is imported from its module the first time it is read from the package, then kept as
  the package's attribute (later reads cost nothing); ``dir(package)`` lists it before that;
- only the ``from .module import name [as alias]`` imports of the ``TYPE_CHECKING`` block are exports;
- a name the package does not export raises ``AttributeError``, as for any module.

``lazy_loader`` does this from a ``.pyi`` stub file; the ``TYPE_CHECKING`` block keeps the exports in the
``__init__`` itself, one list for readers, type checkers and the loader, without a dependency.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["lazy_exports", "exported_names"]


def exported_names(init_file: str | Path) -> dict[str, tuple[str, str]]:
    """Each name the ``TYPE_CHECKING`` block of ``init_file`` imports, with its relative module and its name there."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.level == 1 and statement.module:
                for alias in statement.names:
                    found[alias.asname or alias.name] = (f".{statement.module}", alias.name)
    return found


def lazy_exports(package: str, init_file: str) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose ``__init__`` is ``init_file``."""
    exports = exported_names(init_file)
    module = sys.modules[package]

    def __getattr__(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        source, attribute = exports[name]
        value = getattr(importlib.import_module(source, package), attribute)
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *exports})

    return __getattr__, __dir__
