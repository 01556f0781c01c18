"""The packages form layers that only import downward, so no package depends on one built on it.

Every import counts: module level, ``TYPE_CHECKING`` and deferred ones inside functions alike, because an
import a type checker or a deferred call follows is a dependency all the same. ``LAYERS`` is the order,
lowest first (``docs/architecture.md`` draws it); a package may import its own modules and any package of
a lower layer, never one of its own layer or above.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = "deep_research_agent"
SOURCE = Path(__file__).resolve().parents[1] / "src" / PACKAGE

LAYERS: tuple[tuple[str, ...], ...] = (
    ("domain",),
    ("prompts", "documents"),
    ("settings",),
    ("protocol",),
    ("evidence",),
    ("run",),
    ("corpora",),
    ("report",),
    ("sandbox",),
    ("tools",),
    ("mcp",),
    ("extensions",),
    ("knowledge", "tasks"),
    ("handover",),
    ("delivery",),
    ("modelcalls",),
    ("guards",),
    ("lifecycle",),
    ("planning", "plan_review"),
    ("graph",),
    ("service", "export"),
    ("cli", "routes"),
    ("evaluation",),
)
RANK = {unit: rank for rank, layer in enumerate(LAYERS) for unit in layer}


def unit_of(module: str) -> str:
    """The layer unit of a dotted module: its subpackage, or the top-level module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<package>"


def module_of(path: Path) -> str:
    parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    relative = path.relative_to(SOURCE.parent).with_suffix("")
    parts = list(relative.parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target == PACKAGE:
                found += [(node.lineno, f"{PACKAGE}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, target))
    return [(line, target) for line, target in found if target.startswith(PACKAGE + ".")]


MODULES = sorted(SOURCE.rglob("*.py"))


def test_every_package_and_top_level_module_has_a_layer():
    units = {unit_of(module_of(path)) for path in MODULES}
    units.discard("<package>")
    assert units <= set(RANK), f"give these a layer in LAYERS: {sorted(units - set(RANK))}"
    assert set(RANK) <= units, f"LAYERS names what does not exist: {sorted(set(RANK) - units)}"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(SOURCE)))
def test_a_module_imports_only_its_own_package_and_lower_layers(path):
    own = unit_of(module_of(path))
    upward = [
        f"line {line}: {target} ({unit_of(target)} is layer {RANK[unit_of(target)]}, {own} is layer {RANK[own]})"
        for line, target in imports_of(path)
        if unit_of(target) != own and RANK.get(unit_of(target), -1) >= RANK[own]
    ]
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def test_no_two_packages_import_each_other():
    edges: dict[str, set[str]] = {}
    for path in MODULES:
        own = unit_of(module_of(path))
        edges.setdefault(own, set()).update(unit_of(target) for _, target in imports_of(path))
    mutual = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if a != b and a in edges.get(b, ())})
    assert mutual == []


ARCHITECTURE = SOURCE.parents[1] / "docs" / "architecture.md"


def concept_rows() -> list[tuple[str, list[str], int]]:
    """The architecture doc's concept → modules table: each concept, the modules it names, their count."""
    table = ARCHITECTURE.read_text(encoding="utf-8").split("## Concept → modules", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[2].isdigit():
            rows.append((cells[0], re.findall(r"`([^`]+\.py|[^`]+/)`", cells[1]), int(cells[2])))
    return rows


def test_every_concept_is_followed_in_at_most_three_modules_that_exist():
    rows = concept_rows()
    assert len(rows) > 40, "the concept table was not found"
    spread = [f"{concept}: {count}" for concept, _, count in rows if count > 3]
    assert not spread, "concepts followed in more than three modules:\n" + "\n".join(spread)
    for concept, modules, count in rows:
        assert len(modules) <= count, f"{concept}: names {len(modules)} modules but counts {count}"
        missing = [module for module in modules if not (SOURCE / module).exists()]
        assert not missing, f"{concept}: no such module {missing}"
