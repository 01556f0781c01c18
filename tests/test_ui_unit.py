"""The web UI's own unit tests (ui/test: the run model, the report's citation anatomy) in node's test runner.

They run on the bundle ``npm test`` builds, so they see the code the browser gets; skipped only when no node
that ui/package.json's engines accept is installed (./run.sh test installs one).
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from testkit.agent_server import PROJECT_ROOT

UI = PROJECT_ROOT / "ui"


def test_the_ui_unit_tests_pass_in_node():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed, and ./run.sh test could not install Debian's nodejs and npm packages")
    need = int(json.loads((UI / "package.json").read_text())["engines"]["node"].removeprefix(">="))
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.removeprefix("v").split(".")[0]) < need:
        pytest.skip(f"node {version} is older than the {need} the UI needs")
    if not (UI / "node_modules").is_dir():
        pytest.fail("ui/node_modules is missing: run `npm ci` in ui (./run.sh test does)")

    built = subprocess.run([node, "scripts/build.mjs", "--tests"], cwd=UI, capture_output=True, text=True, timeout=180)
    assert built.returncode == 0, built.stdout + built.stderr
    tested = subprocess.run([node, "--test", "dist-tests/"], cwd=UI, capture_output=True, text=True, timeout=120)

    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "# fail 0" in tested.stdout and "# pass 0" not in tested.stdout
