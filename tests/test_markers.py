"""Every end-to-end test carries the ``e2e`` marker, so ``./run.sh test -m "not e2e"`` is the unit suite alone.

Each module under tests/e2e/ says so itself, in its ``pytestmark``; this checks what pytest selects from the
whole suite, the way a developer would select it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
E2E_MODULES = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "tests" / "e2e").glob("test_*.py"))


def collected(marker_expression: str) -> list[str]:
    """The node ids ``pytest -m <marker_expression> --collect-only`` selects from the whole suite."""
    result = subprocess.run(
        # addopts' -q would make this -qq, which prints counts per file instead of node ids.
        [
            sys.executable,
            "-m",
            "pytest",
            "-o",
            "addopts=",
            "-p",
            "no:cacheprovider",
            "--collect-only",
            "-q",
            "-m",
            marker_expression,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (
        f"collection failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return [line for line in result.stdout.splitlines() if "::" in line]


def module_of(node_id: str) -> str:
    return node_id.split("::", 1)[0]


def test_e2e_selects_every_end_to_end_module_and_nothing_else():
    selected = collected("e2e")
    assert sorted({module_of(node) for node in selected}) == E2E_MODULES


def test_not_e2e_selects_no_end_to_end_test():
    selected = collected("not e2e")
    assert selected, "the unit suite collected nothing"
    assert [node for node in selected if node.startswith("tests/e2e/")] == []
