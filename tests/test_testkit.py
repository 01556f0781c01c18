"""testkit is the support the tests and the benchmarks share: it and bench/ never import the tests."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_SOURCES = sorted([*(ROOT / "testkit").glob("*.py"), *(ROOT / "bench").glob("*.py")])


def imported_modules(source: Path) -> set[str]:
    """Every absolute module an ``import`` or ``from ... import`` in ``source`` names, wherever it stands."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"), filename=str(source))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
    return modules


def test_testkit_and_bench_have_sources_to_check():
    assert ROOT / "testkit" / "scripted_model.py" in SHARED_SOURCES
    assert ROOT / "bench" / "burst.py" in SHARED_SOURCES


@pytest.mark.parametrize("source", SHARED_SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_it_imports_nothing_from_the_tests(source: Path):
    from_tests = sorted(
        module for module in imported_modules(source) if module == "tests" or module.startswith("tests.")
    )
    assert not from_tests, f"{source.relative_to(ROOT)} imports {from_tests}: move what it needs into testkit/"


def test_the_import_reader_sees_imports_in_every_form(tmp_path: Path):
    source = tmp_path / "sample.py"
    source.write_text(
        "import tests.conftest\nfrom tests import conftest\nfrom . import sibling\n"
        "def late():\n    from tests.e2e import helpers\n",
        encoding="utf-8",
    )
    assert imported_modules(source) == {"tests.conftest", "tests", "tests.e2e"}


def test_the_wheel_ships_the_product_only():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["src/deep_research_agent"]
