"""The packages form layers that only import downward, so no package depends on one built on it.

Every import counts: module level, ``TYPE_CHECKING`` and deferred ones inside functions alike, because an
import a type checker or a deferred call follows is a dependency all the same. ``LAYERS`` is the order,
lowest first (``docs/architecture.md`` draws it); a package may import its own modules and any package of
a lower layer, never one of its own layer or above.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
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
    ("assist",),
    ("planning", "plan_review"),
    ("graph",),
    ("service", "export"),
    ("schedules",),
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


@dataclass(frozen=True)
class ConceptRow:
    """One row of the architecture doc's concept → modules table."""

    concept: str
    modules: tuple[str, ...]  # a module's path under the package, or a folder ending in "/"
    names: tuple[str, ...]  # identifiers, and values written as "quoted" strings
    count: int


def concept_rows() -> list[ConceptRow]:
    """The architecture doc's concept → modules table."""
    table = ARCHITECTURE.read_text(encoding="utf-8").split("## Concept → modules", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[-1].isdigit():
            assert len(cells) == 4, f"give the concept its names (Concept | Modules | Names | #): {line}"
            modules = tuple(re.findall(r"`([^`]+\.py|[^`]+/)`", cells[1]))
            rows.append(ConceptRow(cells[0], modules, tuple(re.findall(r"`([^`]+)`", cells[2])), int(cells[3])))
    return rows


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def names_used(tree: ast.AST) -> set[str]:
    """Every name a module uses (defined, imported, read, an attribute) and every string value its code
    holds (docstrings aside), quoted: ``"done"``."""
    docstrings = _docstrings(tree)
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.alias):
            used |= {node.name.rpartition(".")[2], node.asname or node.name}
        elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            used.add(node.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            used.add(json.dumps(node.value, ensure_ascii=False))
    return used


def only_reexports(tree: ast.Module) -> bool:
    """A package ``__init__`` that only imports and lists exports (eagerly or lazily) does no work of its own."""
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom | ast.If) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ):
            continue
        targets = [t for n in getattr(node, "targets", ()) for t in (n.elts if isinstance(n, ast.Tuple) else [n])]
        if isinstance(node, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id in ("__all__", "__getattr__", "__dir__") for t in targets
        ):
            continue
        return False
    return True


def module_names() -> dict[str, set[str]]:
    """The names each module uses, by its path under the package; re-exporting ``__init__`` files left out."""
    found = {}
    for path in MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if path.name == "__init__.py" and only_reexports(tree):
            continue
        found[str(path.relative_to(SOURCE))] = names_used(tree)
    return found


def _in(module: str, entry: str) -> bool:
    return module == entry or (entry.endswith("/") and module.startswith(entry))


def modules_using(row: ConceptRow, used: dict[str, set[str]]) -> list[str]:
    """The modules that use any of the row's names; graph.py (the roster, which wires every feature) only
    for the concepts that name it."""
    names = set(row.names)
    return sorted(
        module for module, its in used.items() if its & names and (module != "graph.py" or "graph.py" in row.modules)
    )


def test_every_concept_is_followed_in_at_most_three_modules_that_exist():
    rows = concept_rows()
    assert len(rows) > 40, "the concept table was not found"
    spread = [f"{row.concept}: {row.count}" for row in rows if row.count > 3]
    assert not spread, "concepts followed in more than three modules:\n" + "\n".join(spread)
    for row in rows:
        assert len(row.modules) == row.count, f"{row.concept}: names {len(row.modules)} modules but counts {row.count}"
        missing = [module for module in row.modules if not (SOURCE / module).exists()]
        assert not missing, f"{row.concept}: no such module {missing}"
        assert row.names, f"{row.concept}: names no identifier that marks it in the code"


@pytest.mark.parametrize("row", concept_rows(), ids=lambda row: row.concept[:60])
def test_a_concept_is_used_in_exactly_the_modules_its_row_names(row: ConceptRow):
    users = modules_using(row, module_names())

    elsewhere = [module for module in users if not any(_in(module, entry) for entry in row.modules)]
    assert not elsewhere, (
        f"{row.concept}: {', '.join(elsewhere)} also use {', '.join(row.names)}: move the work into the concept's "
        "modules, or name those modules in docs/architecture.md (at most three)"
    )
    left = [entry for entry in row.modules if not any(_in(module, entry) for module in users)]
    assert not left, f"{row.concept}: {', '.join(left)} use none of {', '.join(row.names)}"


def test_the_concept_check_counts_definitions_references_and_values_but_not_docstrings(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        '"""Mentions decide_outcome and "done" in prose only."""\n'
        "from .outcome import OutcomeFacts as Facts\n"
        "STATE = 'done'\n"
        "def close(run):\n"
        '    """Closes the run with decide_outcome."""\n'
        "    return run.outcome.decide(Facts())\n",
        encoding="utf-8",
    )

    used = names_used(ast.parse(module.read_text(encoding="utf-8")))

    assert {"OutcomeFacts", "Facts", '"done"', "close", "decide", "STATE"} <= used
    assert "decide_outcome" not in used


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
