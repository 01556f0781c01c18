"""run.sh: the busy-port guard (no dev server is ever started here), .env loading without echo, and help."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testkit.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("up", "--sync", "ask", "smoke", "doctor", "test", "help")
# ./run.sh test with no arguments: the unit and the end-to-end tests as two pytest processes side by side.
WHOLE_SUITE = sorted(["uv run --extra dev pytest -m e2e", "uv run --extra dev pytest -m not e2e -p no:cacheprovider"])


def clean_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRA_") and k != "PORT"}
    if "HOME" in overrides:
        # What run.sh writes to a temporary folder (the unit tests' log) stays in the test's own project.
        env["TMPDIR"] = overrides["HOME"]
    env.update(overrides)
    return env


def run(script: Path, *args: str, env: dict[str, str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(script), *args],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_up_refuses_a_busy_port(held_port: int) -> None:
    started = time.monotonic()
    result = run(ROOT / "run.sh", "up", env=clean_env(DRA_PORT=str(held_port)))
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert f"Port {held_port} on 127.0.0.1 is already in use" in output
    assert "DRA_PORT" in output
    assert time.monotonic() - started < 15


def test_bare_port_is_used_when_dra_port_is_unset(held_port: int) -> None:
    result = run(ROOT / "run.sh", env=clean_env(PORT=str(held_port)))
    assert result.returncode != 0
    assert f"Port {held_port}" in result.stderr


def test_dotenv_is_loaded_without_echoing_values(tmp_path: Path, held_port: int) -> None:
    # A copy of run.sh in an empty directory, so the real .env is neither read nor touched.
    script = tmp_path / "run.sh"
    shutil.copy2(ROOT / "run.sh", script)
    (tmp_path / ".env").write_text(
        f"# settings\n\nDRA_PORT={held_port}\nexport OPENAI_API_KEY='sk-dotenv-secret-123'\nTAVILY_API_KEY=tvly-x-secret\n"
    )
    result = run(script, "up", env=clean_env())
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"Port {held_port}" in output
    assert "sk-dotenv-secret-123" not in output and "tvly-x-secret" not in output


def test_missing_uv_is_installed_with_pip(tmp_path: Path, held_port: int) -> None:
    """A PATH without uv: run.sh asks pip for it (a stub here) and finds it in the user base."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "pip.log"
    python3 = stubs / "python3"
    python3.write_text(
        "#!/bin/sh\n"
        'if [ "$1 $2 $3" = "-m pip install" ]; then\n'
        f'  echo "$*" >> {log}\n'
        '  mkdir -p "$HOME/.local/bin"\n'
        "  printf '#!/bin/sh\\necho uv 0.0.0-stub\\n' > \"$HOME/.local/bin/uv\"\n"
        '  chmod +x "$HOME/.local/bin/uv"\n'
        "  exit 0\n"
        "fi\n"
        f'exec {sys.executable} "$@"\n'
    )
    python3.chmod(0o755)
    env = clean_env(PATH=f"{stubs}:/usr/bin:/bin", HOME=str(tmp_path / "home"), DRA_PORT=str(held_port))
    env.pop("PYTHONUSERBASE", None)
    result = run(ROOT / "run.sh", "up", env=env)
    output = result.stdout + result.stderr
    assert "installing it with pip" in output
    assert log.read_text().strip() == "-m pip install --user uv"
    assert "uv 0.0.0-stub" in output
    assert f"Port {held_port}" in output and result.returncode != 0


def test_help_lists_the_commands() -> None:
    result = run(ROOT / "run.sh", "help", env=clean_env())
    assert result.returncode == 0
    for command in COMMANDS:
        assert command in result.stdout


def test_unknown_command_fails_with_usage() -> None:
    result = run(ROOT / "run.sh", "frobnicate", env=clean_env())
    assert result.returncode != 0
    assert "unknown command: frobnicate" in result.stderr
    assert "Usage:" in result.stderr


@pytest.fixture
def project_without_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A copy of run.sh and the package.json of tests/js and ui, and a PATH with no node and no chromium:
    stubs for uv, apt-get and id.

    uv, apt-get, node and npm append each call to the returned log; ``id`` answers 0, as for root. Unless
    ``APT_FAILS`` is set, ``apt-get install`` puts node, npm, chromium, bwrap and redis-server stubs on the
    PATH and an ``initdb`` under ``POSTGRES_LIB``, which points at an empty folder until then.
    """
    project, stubs, postgres = tmp_path / "project", tmp_path / "bin", tmp_path / "postgresql"
    monkeypatch.setenv("POSTGRES_LIB", str(postgres))
    (project / "tests" / "js").mkdir(parents=True)
    (project / "ui").mkdir()
    stubs.mkdir()
    shutil.copy2(ROOT / "run.sh", project / "run.sh")
    shutil.copy2(ROOT / "tests" / "js" / "package.json", project / "tests" / "js" / "package.json")
    shutil.copy2(ROOT / "ui" / "package.json", project / "ui" / "package.json")
    log = tmp_path / "calls.log"
    for tool in ("bash", "env", "dirname"):
        (stubs / tool).symlink_to(shutil.which(tool))
    scripts = {
        "id": "echo 0\n",
        # The PDF export's Pango and fonts are there unless PDF_TOOLS_MISSING is set.
        "ldconfig": '[ -n "$PDF_TOOLS_MISSING" ] || echo "libpangoft2-1.0.so.0 (libc6,x86-64)"\n',
        "fc-list": '[ -n "$PDF_TOOLS_MISSING" ] || printf "DejaVu Sans\\nWenQuanYi Micro Hei\\n"\n',
        "uv": f'echo "uv $*" >> {log}\n',
        "apt-get": (
            f'echo "apt-get $*" >> {log}\n'
            '[ -n "$APT_FAILS" ] && exit 100\n'
            'case "$*" in *install*nodejs*)\n'
            f"  printf '#!/bin/sh\\necho \"node $*\" >> {log}\\n' > {stubs}/node\n"
            f"  printf '#!/bin/sh\\necho \"npm $* in $PWD\" >> {log}\\n' > {stubs}/npm\n"
            f"  printf '#!/bin/sh\\n' > {stubs}/chromium\n"
            f"  {shutil.which('chmod')} +x {stubs}/node {stubs}/npm {stubs}/chromium ;;\n"
            "esac\n"
            'case "$*" in *install*bubblewrap*)\n'
            f"  printf '#!/bin/sh\\n' > {stubs}/bwrap; {shutil.which('chmod')} +x {stubs}/bwrap ;;\n"
            "esac\n"
            'case "$*" in *install*postgresql*redis-server*)\n'
            f"  {shutil.which('mkdir')} -p {postgres}/16/bin; printf '#!/bin/sh\\n' > {postgres}/16/bin/initdb\n"
            f"  printf '#!/bin/sh\\n' > {stubs}/redis-server; {shutil.which('chmod')} +x {stubs}/redis-server {postgres}/16/bin/initdb ;;\n"
            "esac\n"
        ),
    }
    for name, body in scripts.items():
        (stubs / name).write_text("#!/bin/sh\n" + body)
        (stubs / name).chmod(0o755)
    return project, stubs, log


def test_test_installs_debians_node_and_chromium_when_missing_then_the_js_packages_and_a_clean_ui_build(
    project_without_node,
):
    project, stubs, log = project_without_node

    result = run(project / "run.sh", "test", "-k", "js", env=clean_env(PATH=str(stubs), HOME=str(project)))

    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "installing Debian's nodejs npm chromium bubblewrap libseccomp2 postgresql redis-server for the tests"
        in result.stdout
    )
    calls = log.read_text().splitlines()
    installed = calls.index("apt-get install -y -qq nodejs npm chromium bubblewrap libseccomp2 postgresql redis-server")
    assert calls[installed - 1] == "apt-get update -qq"
    assert calls.index(f"npm ci in {project / 'tests' / 'js'}") > installed
    built = calls.index(f"npm run build in {project / 'ui'}")
    assert calls[built - 1] == f"npm ci --no-audit --no-fund in {project / 'ui'}", (
        "the UI is built from a clean install"
    )
    assert calls[-1] == "uv run --extra dev pytest -k js"
    assert "will be skipped" not in result.stderr


def test_test_installs_bubblewrap_for_the_sandbox_in_the_one_apt_step(project_without_node):
    project, stubs, log = project_without_node
    initdb = Path(os.environ["POSTGRES_LIB"]) / "16" / "bin" / "initdb"
    initdb.parent.mkdir(parents=True)
    initdb.write_text("#!/bin/sh\n")
    for tool in ("node", "npm", "chromium", "redis-server"):
        (stubs / tool).write_text("#!/bin/sh\n")
        (stubs / tool).chmod(0o755)

    result = run(project / "run.sh", "test", env=clean_env(PATH=str(stubs), HOME=str(project)))

    assert result.returncode == 0, result.stdout + result.stderr
    calls = log.read_text().splitlines()
    assert [c for c in calls if c.startswith("apt-get")] == [
        "apt-get update -qq",
        "apt-get install -y -qq bubblewrap libseccomp2",
    ]
    assert "the sandbox tests" not in result.stderr


def test_test_and_up_install_pango_and_the_fonts_for_pdf_export_when_missing(project_without_node):
    project, stubs, log = project_without_node
    for tool in ("node", "npm", "chromium", "redis-server", "bwrap"):
        (stubs / tool).write_text("#!/bin/sh\n")
        (stubs / tool).chmod(0o755)
    initdb = Path(os.environ["POSTGRES_LIB"]) / "16" / "bin" / "initdb"
    initdb.parent.mkdir(parents=True)
    initdb.write_text("#!/bin/sh\n")
    missing = clean_env(PATH=str(stubs), HOME=str(project), PDF_TOOLS_MISSING="1", DRA_PORT=str(free_port()))

    tested = run(project / "run.sh", "test", env=missing)
    served = run(project / "run.sh", "up", env=missing)

    assert tested.returncode == 0 and served.returncode == 0, tested.stderr + served.stderr
    packages = "libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core fonts-wqy-microhei"
    installs = [c for c in log.read_text().splitlines() if c.startswith("apt-get install")]
    assert installs == [f"apt-get install -y -qq {packages}"] * 2, installs


def test_test_still_runs_the_suite_when_node_cannot_be_installed_and_says_which_tests_are_skipped(project_without_node):
    project, stubs, log = project_without_node

    result = run(project / "run.sh", "test", env=clean_env(PATH=str(stubs), HOME=str(project), APT_FAILS="1"))

    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "the JS client tests (tests/e2e/test_js_client.py) and the web UI tests (tests/e2e/test_web_ui.py) will be skipped"
        in result.stderr
    )
    assert "chromium is missing; the web UI tests (tests/e2e/test_web_ui.py) will be skipped" in result.stderr
    assert "the sandbox tests (tests/test_sandbox_service.py) will be skipped" in result.stderr
    assert "the tests on Aegra (tests/e2e/test_serve.py) will be skipped" in result.stderr
    calls = log.read_text().splitlines()
    assert not any(call.startswith("npm") for call in calls)
    assert sorted(calls[-2:]) == WHOLE_SUITE


def test_up_builds_the_web_ui_when_its_bundle_is_missing_then_starts_the_server(project_without_node):
    project, stubs, log = project_without_node
    port = free_port()

    result = run(project / "run.sh", "up", env=clean_env(PATH=str(stubs), HOME=str(project), DRA_PORT=str(port)))

    assert result.returncode == 0, result.stdout + result.stderr
    calls = log.read_text().splitlines()
    assert "apt-get install -y -qq nodejs npm" in calls
    built = calls.index(f"npm run build in {project / 'ui'}")
    assert calls[built - 1] == f"npm ci --no-audit --no-fund in {project / 'ui'}"
    assert calls[-1].startswith("uv run --extra dev langgraph dev") and built < len(calls) - 1
    assert f"the web UI is http://127.0.0.1:{port}/ui" in result.stdout


def test_up_leaves_a_fresh_ui_bundle_alone(project_without_node):
    project, stubs, log = project_without_node
    for name in ("src", "static", "scripts"):
        (project / "ui" / name).mkdir()
        (project / "ui" / name / "x").write_text("source\n")
    (project / "ui" / "dist").mkdir()
    (project / "ui" / "dist" / "index.html").write_text("<!doctype html>\n")

    result = run(project / "run.sh", "up", env=clean_env(PATH=str(stubs), HOME=str(project), DRA_PORT=str(free_port())))

    assert result.returncode == 0, result.stdout + result.stderr
    calls = log.read_text().splitlines()
    assert not any(call.startswith(("npm", "apt-get")) for call in calls), calls


def test_up_still_starts_the_server_when_the_ui_cannot_be_built(project_without_node):
    project, stubs, log = project_without_node

    result = run(
        project / "run.sh",
        "up",
        env=clean_env(PATH=str(stubs), HOME=str(project), DRA_PORT=str(free_port()), APT_FAILS="1"),
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "the server runs without the web UI" in result.stderr
    assert log.read_text().splitlines()[-1].startswith("uv run --extra dev langgraph dev")


def test_test_installs_postgres_and_redis_and_the_aegra_environment_from_its_lock(project_without_node):
    project, stubs, log = project_without_node
    python312 = stubs / "python3.12-stand-in"
    python312.write_text("#!/bin/sh\nexit 0\n")
    python312.chmod(0o755)

    result = run(
        project / "run.sh", "test", env=clean_env(PATH=str(stubs), HOME=str(project), DRA_AEGRA_PYTHON=str(python312))
    )

    assert result.returncode == 0, result.stdout + result.stderr
    calls = log.read_text().splitlines()
    assert [c for c in calls if c.startswith("apt-get install")][0].endswith(" postgresql redis-server")
    assert "the tests on Aegra" not in result.stderr
    locked = calls.index(f"uv lock --check --project deploy --python {python312}")
    synced = calls.index(f"uv sync --locked --project deploy --python {python312}")
    assert locked < synced < len(calls) - 2 and sorted(calls[-2:]) == WHOLE_SUITE


@pytest.mark.parametrize(
    "args, forwarded",
    [
        (["kb", "list", "--user", "ada"], "kb list --url http://127.0.0.1:2024 --user ada"),
        (
            ["kb", "export", "--dataset", "batteries", "--out", "kb.jsonl"],
            "kb export --url http://127.0.0.1:2024 --dataset batteries --out kb.jsonl",
        ),
        (["tasks", "--user", "ada"], "tasks --url http://127.0.0.1:2024 --user ada"),
        (
            ["schedule", "add", "sodium", "What changed?", "--cron", "0 8 * * MON"],
            "schedule add --url http://127.0.0.1:2024 sodium What changed? --cron 0 8 * * MON",
        ),
        (["schedule", "pause", "sodium"], "schedule pause --url http://127.0.0.1:2024 sodium"),
        (
            ["ask", "--task", "sodium", "Is it cheaper now?"],
            "ask --url http://127.0.0.1:2024 --task sodium Is it cheaper now?",
        ),
    ],
)
def test_the_knowledge_base_and_task_commands_reach_the_cli_with_the_server_url(project_without_node, args, forwarded):
    project, stubs, log = project_without_node

    result = run(project / "run.sh", *args, env=clean_env(PATH=str(stubs), HOME=str(project)))

    assert result.returncode == 0, result.stdout + result.stderr
    assert log.read_text().splitlines()[-1] == f"uv run --no-sync python -m deep_research_agent.cli {forwarded}"


def test_kb_without_an_action_says_how_to_use_it(project_without_node):
    project, stubs, _ = project_without_node

    result = run(project / "run.sh", "kb", env=clean_env(PATH=str(stubs), HOME=str(project)))

    assert result.returncode != 0 and "usage: ./run.sh kb list|export|delete" in result.stderr


def test_schedule_without_an_action_says_how_to_use_it(project_without_node):
    project, stubs, _ = project_without_node

    result = run(project / "run.sh", "schedule", env=clean_env(PATH=str(stubs), HOME=str(project)))

    assert result.returncode != 0 and "usage: ./run.sh schedule add|list|pause|resume|remove" in result.stderr


def test_a_command_syncs_the_environment_only_when_its_lock_changed_and_compiles_what_changed(project_without_node):
    project, stubs, log = project_without_node
    (stubs / "find").symlink_to(shutil.which("find"))
    (project / ".venv").mkdir()
    (project / "uv.lock").write_text("lock\n")
    (project / "pyproject.toml").write_text("[project]\n")
    (project / "src").mkdir()
    module = project / "src" / "module.py"
    module.write_text("x = 1\n")
    env = clean_env(PATH=str(stubs), HOME=str(project))

    def calls_of_one_command() -> list[str]:
        log.write_text("")
        result = run(project / "run.sh", "corpus", "list", env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        return log.read_text().splitlines()

    sync, compile_sources = "uv sync --extra dev --compile-bytecode", "uv run --no-sync python -m compileall -q src"
    command = "uv run --no-sync python -m deep_research_agent.cli corpus list"
    assert calls_of_one_command() == [sync, compile_sources, command], "a first run syncs and compiles"
    assert calls_of_one_command() == [command], "nothing changed: nothing is checked"

    earlier = time.time() - 60
    os.utime(project / ".venv" / ".dra-compiled", (earlier, earlier))
    module.write_text("x = 2\n")
    assert calls_of_one_command() == [compile_sources, command], "a changed module is compiled again"
    os.utime(project / ".venv" / ".dra-synced", (earlier, earlier))
    (project / "uv.lock").write_text("lock 2\n")
    assert calls_of_one_command() == [sync, command], "a changed lock syncs again"
