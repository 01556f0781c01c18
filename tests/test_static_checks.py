"""The code passes its static checks: ruff's lint and format check over the repository, and mypy in strict
mode over the layers everything else stands on (``[tool.mypy]`` in pyproject names them).

Each check fails on its first finding, so a new lint error, an unformatted file or a type error fails the
suite rather than piling up in a report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_no_lint_error():
    result = _run("ruff", "check", "--no-fix", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_python_file_is_formatted():
    result = _run("ruff", "format", "--check", ".")
    assert result.returncode == 0, "run `uv run ruff format .`:\n" + result.stdout + result.stderr


def test_the_lower_layers_type_check_strictly():
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
