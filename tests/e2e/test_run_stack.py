"""``./run-stack.sh ask`` on a fresh setup: it brings up the sandbox and the agent, streams one run, tears both down."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from testkit.ports import free_port, port_is_free
from testkit.sandbox_service import require_bubblewrap
from testkit.scenarios import orchestrator, plan_and_delegate, researcher_reads, scenario, submit
from testkit.web import ARTICLES
from tests.conftest import agent_env

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_ask_brings_up_the_sandbox_and_the_agent_streams_the_run_and_tears_both_down(
    model_server, web_server, scripted, web
):
    require_bubblewrap()
    url = web.url(ARTICLES["halvorsen-cell"].path)
    scripted.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Find the energy density of sodium-glass batteries"),
                submit(f"# Sodium-glass batteries\n\nThey reach 412 Wh/kg [1].\n\n## Sources\n[1] Halvorsen — {url}\n"),
            ),
            researcher_reads(url, query="sodium glass battery", finding="412 Wh/kg", quote="412 Wh/kg"),
        )
    )
    agent_port, sandbox_port = free_port(), free_port()
    scratch = Path(tempfile.mkdtemp(prefix="dra-run-stack-e2e-"))
    scratch.chmod(0o711)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DRA_", "LLM_SANDBOX_", "SANDBOX_"))}
    env.update(agent_env(model_server, web_server))
    env.update(
        {
            "DRA_PORT": str(agent_port),
            "SANDBOX_PORT": str(sandbox_port),
            "SANDBOX_STATE_DIR": str(scratch / "state"),
            "LANGGRAPH_DISABLE_FILE_PERSISTENCE": "true",
            "COLUMNS": "120",
            "NO_COLOR": "1",
        }
    )
    try:
        done = subprocess.run(
            [str(ROOT / "run-stack.sh"), "ask", "How dense are sodium-glass batteries?"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert f"Starting the sandbox service at http://127.0.0.1:{sandbox_port}" in out
    assert "Sodium-glass batteries" in out and "Run time" in out
    assert out.index("Run time") < out.index("Stopping the agent server") < out.index("Stopping the sandbox service")
    assert port_is_free(agent_port) and port_is_free(sandbox_port)
    assert "generated one for this run (not shown)" in out


def session_processes(session_id: int) -> dict[int, tuple[bytes, bytes]]:
    """cmdline and environ of every process in the given session."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getsid(int(entry.name)) == session_id:
                found[int(entry.name)] = ((entry / "cmdline").read_bytes(), (entry / "environ").read_bytes())
        except OSError:
            continue
    return found


def test_up_wires_the_sandbox_into_the_agent_server_and_ctrl_c_stops_both(model_server, web_server):
    require_bubblewrap()
    agent_port, sandbox_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DRA_", "LLM_SANDBOX_", "SANDBOX_"))}
    env.update(agent_env(model_server, web_server))
    env.update(
        {"DRA_PORT": str(agent_port), "SANDBOX_PORT": str(sandbox_port), "LANGGRAPH_DISABLE_FILE_PERSISTENCE": "true"}
    )
    stack = subprocess.Popen(
        [str(ROOT / "run-stack.sh"), "up"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while port_is_free(agent_port) or port_is_free(sandbox_port):
            assert stack.poll() is None and time.monotonic() < deadline, "run-stack.sh up did not bring both up"
            time.sleep(0.5)
        servers = [environ for cmdline, environ in session_processes(stack.pid).values() if b"langgraph" in cmdline]
        assert servers and all(f"LLM_SANDBOX_URL=http://127.0.0.1:{sandbox_port}".encode() in e for e in servers)
        assert all(b"LLM_SANDBOX_TOKEN=" in e for e in servers)

        os.killpg(stack.pid, signal.SIGINT)  # what Ctrl-C in the terminal sends
        stack.wait(timeout=60)
    finally:
        if stack.poll() is None:
            os.killpg(stack.pid, signal.SIGKILL)
    out = stack.stdout.read()
    assert "Stopping the sandbox service" in out
    assert port_is_free(agent_port) and port_is_free(sandbox_port)
    assert session_processes(stack.pid) == {}
