"""run-stack.sh: the sandbox and the agent together — doctor, reuse, token checks and teardown.

The agent server is kept from starting here by holding its port (run.sh refuses a busy port), which
exercises everything run-stack.sh does around it; tests/e2e/test_run_stack.py runs a whole `ask`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from testkit.ports import free_port, port_is_free
from testkit.sandbox_service import SandboxService, require_bubblewrap

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "run-stack.sh"


def stack_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DRA_", "LLM_SANDBOX_", "SANDBOX_"))
        and k not in {"PORT", "OPENAI_API_KEY", "OPENROUTER_API_KEY"}
    }
    env.update({"SANDBOX_STATE_DIR": str(tmp_path / "state"), "NO_COLOR": "1", "COLUMNS": "200"})
    env.update(overrides)
    return env


def run_stack(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def state_dir() -> Iterator[Path]:
    """A state directory the sandbox uid can reach (pytest's tmp_path sits under a 0700 directory)."""
    scratch = Path(tempfile.mkdtemp(prefix="dra-run-stack-test-"))
    scratch.chmod(0o711)
    yield scratch / "state"
    shutil.rmtree(scratch, ignore_errors=True)


def test_help_lists_the_commands():
    result = run_stack("help", env=stack_env(Path("/nonexistent")))
    assert result.returncode == 0
    for command in ("up", "ask", "smoke", "doctor"):
        assert command in result.stdout


def test_unknown_command_fails_with_usage(tmp_path):
    result = run_stack("frobnicate", env=stack_env(tmp_path))
    assert result.returncode != 0 and "unknown command: frobnicate" in result.stderr and "Usage:" in result.stderr


def test_ask_without_a_question_says_how_to_call_it(tmp_path):
    result = run_stack("ask", env=stack_env(tmp_path))
    assert result.returncode != 0 and "ask needs a question" in result.stderr


def test_doctor_checks_both_halves_and_starts_nothing(tmp_path):
    require_bubblewrap()
    sandbox_port = free_port()
    env = stack_env(
        tmp_path, OPENAI_API_KEY="sk-doctor-secret-0123", LLM_SANDBOX_URL=f"http://127.0.0.1:{sandbox_port}"
    )

    result = run_stack("doctor", env=env)

    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "model API key" in out and "set (OPENAI_API_KEY)" in out  # the agent half is ./run.sh doctor
    assert f"nothing answers at http://127.0.0.1:{sandbox_port}" in out and "./run-stack.sh up starts one" in out
    assert "LLM_SANDBOX_TOKEN is not set" in out
    assert "ISOLATION" in out.split("Isolation this host gives a sandbox session", 1)[1]
    assert "Verdict: ready — ./run-stack.sh up will start a sandbox here." in out
    assert "sk-doctor-secret-0123" not in out + result.stderr
    assert port_is_free(sandbox_port) and not (tmp_path / "state").exists()


def test_doctor_says_not_ready_without_a_model_key(tmp_path):
    require_bubblewrap()
    result = run_stack("doctor", env=stack_env(tmp_path, LLM_SANDBOX_URL=f"http://127.0.0.1:{free_port()}"))
    assert result.returncode == 1
    assert "Verdict: NOT READY — fix the agent half (see above)." in result.stdout


def test_doctor_confirms_the_token_of_a_running_sandbox_and_flags_a_mismatch(tmp_path):
    with SandboxService() as service:
        base = stack_env(tmp_path, OPENAI_API_KEY="sk-x-0123456789", LLM_SANDBOX_URL=service.url)

        matching = run_stack("doctor", env={**base, "LLM_SANDBOX_TOKEN": service.token})
        assert matching.returncode == 0, matching.stdout
        assert f"✔ sandbox: up at {service.url} (bubblewrap); the token is accepted" in matching.stdout
        assert "Verdict: ready — the agent and the running sandbox" in matching.stdout

        wrong = run_stack("doctor", env={**base, "LLM_SANDBOX_TOKEN": "not-the-token-42"})
        assert wrong.returncode == 1
        assert "✖ sandbox: LLM_SANDBOX_TOKEN does not match the one the sandbox at" in wrong.stdout
        assert "Verdict: NOT READY — fix the sandbox token." in wrong.stdout
        for output in (matching.stdout + matching.stderr, wrong.stdout + wrong.stderr):
            assert service.token not in output and "not-the-token-42" not in output


def test_up_starts_the_sandbox_then_stops_it_when_the_server_cannot_start(state_dir, held_port):
    require_bubblewrap()
    sandbox_port = free_port()
    env = stack_env(
        state_dir.parent, DRA_PORT=str(held_port), SANDBOX_PORT=str(sandbox_port), SANDBOX_STATE_DIR=str(state_dir)
    )

    result = run_stack("up", env=env)

    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"Starting the sandbox service at http://127.0.0.1:{sandbox_port}" in out
    assert "ISOLATION" in out
    assert f"Port {held_port} on 127.0.0.1 is already in use" in out
    assert "Stopping the sandbox service" in out
    assert "generated one for this run (not shown)" in out
    assert port_is_free(sandbox_port)
    assert list((state_dir / "sessions").iterdir()) == []


def test_up_reaps_the_sessions_a_crashed_sandbox_left(state_dir, held_port):
    crashed = SandboxService(extra_env={"SANDBOX_STATE_DIR": str(state_dir)}).start()
    with crashed.client() as client:
        orphan = client.post("/sessions", json={}).json()["session_id"]
    os.killpg(crashed.process.pid, signal.SIGKILL)
    crashed.process.wait()
    assert (state_dir / "sessions" / orphan).is_dir()
    try:
        env = stack_env(
            state_dir.parent, DRA_PORT=str(held_port), SANDBOX_PORT=str(free_port()), SANDBOX_STATE_DIR=str(state_dir)
        )
        result = run_stack("up", env=env)
        assert "Stopping the sandbox service" in result.stdout
        assert not (state_dir / "sessions" / orphan).exists()
        assert not Path(f"/sys/fs/cgroup/pids/dra-sandbox-{orphan}").exists()
    finally:
        crashed.stop()


def test_up_reuses_a_running_sandbox_and_leaves_it_running(tmp_path, held_port):
    with SandboxService() as service:
        env = stack_env(tmp_path, DRA_PORT=str(held_port), LLM_SANDBOX_URL=service.url, LLM_SANDBOX_TOKEN=service.token)

        result = run_stack("up", env=env)

        out = result.stdout + result.stderr
        assert f"Reusing the sandbox already running at {service.url}" in out
        assert "Starting the sandbox service" not in out and "Stopping the sandbox service" not in out
        assert httpx.get(f"{service.url}/healthz").status_code == 200


def test_up_refuses_a_running_sandbox_that_rejects_the_token(tmp_path, held_port):
    with SandboxService() as service:
        env = stack_env(
            tmp_path, DRA_PORT=str(held_port), LLM_SANDBOX_URL=service.url, LLM_SANDBOX_TOKEN="stale-token-77"
        )

        result = run_stack("up", env=env)

        assert result.returncode != 0
        assert "LLM_SANDBOX_TOKEN does not match the one the sandbox at" in result.stderr
        assert "Starting the agent server" not in result.stdout
        assert (
            "stale-token-77" not in result.stdout + result.stderr and service.token not in result.stdout + result.stderr
        )
