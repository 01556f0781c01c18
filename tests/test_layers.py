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
    ("embeddings",),
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


# The modules that may hold the run's whole configuration: where it is defined and resolved (``settings``),
# the roster that hands each feature its part (``graph.py``), and the entry points that resolve it for a
# command, a route or a service call. Every other module takes its own knobs: a settings sub-model
# (``settings/features.py``) or explicit arguments, checked where it is built (``domain/knobs.py``).
WHOLE_CONFIG_HOLDERS = ("settings", "graph", "cli", "routes", "service")


def names_of_the_whole_config(path: Path) -> list[int]:
    """The lines of ``path`` whose code (an import, a name, an attribute; never a docstring) names ``ResearchConfig``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.alias) and node.name.rpartition(".")[2] == "ResearchConfig":
            lines.append(node.lineno)
        elif (isinstance(node, ast.Name) and node.id == "ResearchConfig") or (
            isinstance(node, ast.Attribute) and node.attr == "ResearchConfig"
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _annotation_names_it(node.value):
            lines.append(node.lineno)
    return sorted(set(lines))


def _annotation_names_it(text: str) -> bool:
    """Whether a string is an annotation that names ``ResearchConfig`` (``"ResearchConfig | None"``)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return any(isinstance(node, ast.Name) and node.id == "ResearchConfig" for node in ast.walk(tree))


def test_the_holders_check_finds_every_way_of_naming_the_whole_config(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        '"""Takes its own knobs, never the ResearchConfig."""\n'
        "from ..settings import ResearchConfig as Config\n"
        "from .. import settings\n"
        "def build(cfg: settings.ResearchConfig) -> None: ...\n"
        "def later(cfg: 'ResearchConfig | None') -> None: ...\n"
        "def resolve() -> None:\n"
        "    ResearchConfig.resolve(None)\n",
        encoding="utf-8",
    )
    assert names_of_the_whole_config(module) == [2, 4, 5, 7]


@pytest.mark.parametrize(
    "path",
    [path for path in MODULES if unit_of(module_of(path)) not in WHOLE_CONFIG_HOLDERS],
    ids=lambda path: str(path.relative_to(SOURCE)),
)
def test_only_the_roster_and_the_entry_points_hold_the_whole_config(path):
    lines = names_of_the_whole_config(path)
    assert not lines, (
        f"lines {lines} name ResearchConfig: take the feature's settings sub-model (ResearchConfig.part) or "
        "explicit knobs, and let graph.py hand them over"
    )
