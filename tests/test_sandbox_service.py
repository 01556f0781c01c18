"""The sandbox service's contract, over HTTP against the real service (bubblewrap) started by the tests.

The same API as the reference llm-sandbox sidecar: sessions, exec, run, files, auth, limits — and the
isolation a session promises: no network, no host files, a non-root uid without capabilities, seccomp,
an exec timeout (124) and an OOM that kills the exec but not the session.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from dra_sandbox import isolation
from testkit.sandbox_service import SandboxService

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def report() -> isolation.IsolationReport:
    return isolation.probe()


@pytest.fixture
def client(sandbox_service: SandboxService) -> Iterator[httpx.Client]:
    with sandbox_service.client() as client:
        yield client


@pytest.fixture
def session(client: httpx.Client) -> Iterator[str]:
    response = client.post("/sessions", json={})
    assert response.status_code == 200, response.text
    session_id = response.json()["session_id"]
    yield session_id
    client.delete(f"/sessions/{session_id}")


def execute(client: httpx.Client, session_id: str, command: str, **options: object) -> dict:
    response = client.post(f"/sessions/{session_id}/exec", json={"command": command, **options})
    assert response.status_code == 200, response.text
    return response.json()


def python(client: httpx.Client, session_id: str, code: str, **options: object) -> dict:
    response = client.post(f"/sessions/{session_id}/run", json={"language": "python", "code": code, **options})
    assert response.status_code == 200, response.text
    return response.json()


# sessions, exec, run ----------------------------------------------------------------------------------


def test_a_session_has_a_16_hex_id_and_names_its_provider(client: httpx.Client):
    body = client.post("/sessions", json={"timeout_seconds": 60, "memory_mb": 256, "cpus": 0.5}).json()
    assert set(body) == {"session_id", "provider"}
    assert len(body["session_id"]) == 16 and int(body["session_id"], 16) >= 0
    assert body["provider"] == "bubblewrap"
    assert client.delete(f"/sessions/{body['session_id']}").json() == {"ok": True}


def test_exec_runs_a_shell_command_in_the_workspace_and_reports_its_exit_code(client, session):
    result = execute(client, session, "pwd; echo oops >&2; awk 'BEGIN { print 2 * 3 }'; exit 3")
    assert result["stdout"] == "/workspace\n6\n"
    assert result["stderr"] == "oops\n"
    assert result["exit_code"] == 3
    assert result["truncated"] is False
    assert isinstance(result["duration_ms"], int)


def test_files_persist_across_execs_and_workdir_is_honoured(client, session):
    execute(client, session, "mkdir -p data && echo 41 > data/n.txt")
    result = execute(client, session, "echo $(( $(cat n.txt) + 1 ))", workdir="/workspace/data")
    assert result["stdout"] == "42\n"
    missing = execute(client, session, "true", workdir="/workspace/nowhere")
    assert missing["exit_code"] != 0 and "nowhere" in missing["stderr"]


def test_run_executes_python_with_the_workspace_as_cwd(client, session):
    client.put(f"/sessions/{session}/files", json={"path": "rows.csv", "content": "a,b\n1,2\n3,4\n"})
    result = python(
        client,
        session,
        "import csv\nrows = list(csv.DictReader(open('rows.csv')))\nprint(sum(int(r['b']) for r in rows))",
    )
    assert (result["stdout"], result["exit_code"]) == ("6\n", 0)
    failed = python(client, session, "1/0")
    assert failed["exit_code"] == 1 and "ZeroDivisionError" in failed["stderr"]
    # The script itself lives outside /workspace and is gone afterwards.
    assert execute(client, session, "ls -A /workspace")["stdout"] == "rows.csv\n"


def test_run_accepts_only_python(client, session):
    response = client.post(f"/sessions/{session}/run", json={"language": "ruby", "code": "puts 1"})
    assert response.status_code == 422


# files ------------------------------------------------------------------------------------------------


def test_files_written_through_the_api_land_in_the_workspace_as_the_sandbox_user(client, session):
    put = client.put(f"/sessions/{session}/files", json={"path": "notes/plan.md", "content": "# plan\n"})
    assert put.json() == {"ok": True}
    result = execute(
        client, session, "cat /workspace/notes/plan.md; stat -c %U /workspace/notes/plan.md; echo more >> notes/plan.md"
    )
    assert result["stdout"] == "# plan\nsandbox\n" and result["exit_code"] == 0
    read = client.get(f"/sessions/{session}/files", params={"path": "/workspace/notes/plan.md"}).json()
    assert read == {
        "path": "/workspace/notes/plan.md",
        "content": "# plan\nmore\n",
        "encoding": "utf-8",
        "truncated": False,
    }


def test_binary_files_round_trip_as_base64(client, session):
    blob = bytes(range(256)) * 4
    encoded = base64.b64encode(blob).decode()
    client.put(f"/sessions/{session}/files", json={"path": "blob.bin", "content": encoded, "encoding": "base64"})
    assert execute(client, session, "wc -c < blob.bin")["stdout"].strip() == "1024"
    read = client.get(f"/sessions/{session}/files", params={"path": "blob.bin"}).json()
    assert read["encoding"] == "base64" and base64.b64decode(read["content"]) == blob


def test_reading_a_file_stops_at_max_bytes_and_says_so(client, session):
    execute(client, session, "seq 1 1000 > numbers.txt")
    read = client.get(f"/sessions/{session}/files", params={"path": "numbers.txt", "max_bytes": 10}).json()
    assert read["content"] == "1\n2\n3\n4\n5\n" and read["truncated"] is True


def test_listing_a_directory_gives_names_paths_kinds_and_sizes(client, session):
    execute(client, session, "mkdir -p sub && printf 12345 > five.txt && touch sub/x")
    listing = client.get(f"/sessions/{session}/files/list").json()
    assert listing["path"] == "/workspace" and listing["truncated"] is False
    assert listing["entries"] == [
        {"name": "five.txt", "path": "/workspace/five.txt", "is_dir": False, "size": 5},
        {"name": "sub", "path": "/workspace/sub", "is_dir": True, "size": 0},
    ]
    assert client.get(f"/sessions/{session}/files/list", params={"path": "sub"}).json()["entries"][0]["name"] == "x"


def test_file_errors_are_400_with_a_file_operation_code_never_404(client, session):
    missing = client.get(f"/sessions/{session}/files", params={"path": "nope.txt"})
    assert missing.status_code == 400
    assert missing.json()["error"] == "file_not_found" and "nope.txt" in missing.json()["detail"]
    read_only = client.put(f"/sessions/{session}/files", json={"path": "/usr/evil", "content": "x"})
    assert read_only.status_code == 400 and read_only.json()["error"] == "permission_denied"
    directory = client.get(f"/sessions/{session}/files", params={"path": "/workspace"})
    assert directory.status_code == 400 and directory.json()["error"] == "is_directory"
    not_a_dir = client.get(f"/sessions/{session}/files/list", params={"path": "/etc/passwd"})
    assert not_a_dir.status_code == 400 and not_a_dir.json()["error"] == "invalid_path"


# limits -----------------------------------------------------------------------------------------------


def test_an_exec_past_its_timeout_is_killed_with_124_and_keeps_its_output(client, session):
    started = time.monotonic()
    result = execute(client, session, "echo before; sleep 30; echo after", timeout_seconds=1)
    assert time.monotonic() - started < 10
    assert result["exit_code"] == 124
    assert result["stdout"] == "before\n"
    assert "timed out after 1s" in result["stderr"]
    assert execute(client, session, "echo still here")["stdout"] == "still here\n"


def host_processes_running(marker: str) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except OSError:
            continue
    return pids


def test_background_processes_end_with_their_exec(client, session):
    started = time.monotonic()
    result = execute(client, session, "sleep 6123.0417 & echo started")
    assert result["stdout"] == "started\n" and time.monotonic() - started < 10
    time.sleep(0.2)
    assert host_processes_running("6123.0417") == []


def test_deleting_a_session_kills_the_command_it_is_running(client: httpx.Client):
    session_id = client.post("/sessions", json={}).json()["session_id"]
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(execute, client, session_id, "sleep 6124.0417")
        time.sleep(0.5)
        assert client.delete(f"/sessions/{session_id}").status_code == 200
        result = running.result(timeout=10)
    assert result["exit_code"] == 137 and "the session was deleted while the command ran" in result["stderr"]
    assert host_processes_running("6124.0417") == []


def test_parallel_calls_in_one_session_each_get_their_own_result(client, session):
    with ThreadPoolExecutor(6) as pool:
        results = list(
            pool.map(lambda n: python(client, session, f"import time\ntime.sleep(0.2)\nprint({n} * {n})"), range(6))
        )
    assert [r["stdout"] for r in results] == [f"{n * n}\n" for n in range(6)]


def test_python_multiprocessing_works_inside(client, session):
    result = python(
        client,
        session,
        "import multiprocessing as mp, getpass\nwith mp.Pool(2) as pool:\n    print(pool.map(abs, [-1, -2]), getpass.getuser())",
    )
    assert result["stdout"] == "[1, 2] sandbox\n", result["stderr"]


def test_an_oom_kills_the_exec_and_not_the_session(client: httpx.Client, report):
    session_id = client.post("/sessions", json={"memory_mb": 128}).json()["session_id"]
    try:
        execute(client, session_id, "echo kept > before.txt")
        result = python(client, session_id, "block = bytearray(400 * 1024 * 1024)\nprint('allocated')")
        assert result["exit_code"] != 0 and "allocated" not in result["stdout"]
        if report.cgroup_memory.available:
            assert result["exit_code"] == 137
            assert "exceeding the session's memory limit (128 MiB)" in result["stderr"]
        else:
            assert "MemoryError" in result["stderr"]
        after = execute(client, session_id, "cat before.txt")
        assert (after["stdout"], after["exit_code"]) == ("kept\n", 0)
    finally:
        client.delete(f"/sessions/{session_id}")


def test_a_fork_bomb_hits_the_pid_limit_and_the_session_survives():
    with SandboxService(extra_env={"SANDBOX_PIDS_MAX": "32"}) as service, service.client() as client:
        session_id = client.post("/sessions", json={}).json()["session_id"]
        result = execute(client, session_id, "for i in $(seq 64); do sleep 5 & done; wait; echo finished")
        assert "fork" in result["stderr"].lower() and result["exit_code"] != 0
        assert execute(client, session_id, "echo ok")["stdout"] == "ok\n"


def test_output_past_the_cap_is_cut_and_flagged():
    with SandboxService(extra_env={"SANDBOX_MAX_OUTPUT_BYTES": "4096"}) as service, service.client() as client:
        session_id = client.post("/sessions", json={}).json()["session_id"]
        result = execute(client, session_id, "yes | head -c 1000000; echo done >&2")
        assert len(result["stdout"]) == 4096 and result["truncated"] is True
        assert result["stderr"] == "done\n" and result["exit_code"] == 0


# isolation --------------------------------------------------------------------------------------------


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A TCP port on the host's loopback that accepts connections."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


CONNECT = "import socket, sys\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3).close()\n    print('connected')\nexcept OSError as exc:\n    print(type(exc).__name__, exc.errno)\n"


def test_a_session_has_no_network(client, session, host_listener, report):
    result = python(client, session, CONNECT.format(port=host_listener))
    assert "connected" not in result["stdout"]
    if report.seccomp.available:
        assert result["stdout"].strip() == "PermissionError 13"  # seccomp: socket(AF_INET) is EACCES
    # Its own network namespace: nothing but a loopback of its own.
    interfaces = execute(client, session, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")["stdout"]
    assert interfaces == "lo\n"
    unix = python(client, session, "import socket\nsocket.socket(socket.AF_UNIX).close()\nprint('unix ok')")
    assert unix["stdout"] == "unix ok\n"


def test_a_session_that_asks_for_network_can_reach_the_host(client, host_listener):
    session_id = client.post("/sessions", json={"network": True}).json()["session_id"]
    try:
        assert python(client, session_id, CONNECT.format(port=host_listener))["stdout"] == "connected\n"
    finally:
        client.delete(f"/sessions/{session_id}")


def test_no_host_files_are_visible_and_the_system_is_read_only(client, session):
    probe = execute(
        client,
        session,
        f"for p in /root /home /work {ROOT} /etc/shadow /sys/fs/cgroup /var /opt; do [ -e $p ] && echo visible $p; done; "
        "ls -A /usr/local; touch /usr/bin/x 2>&1; touch /etc/x 2>&1; echo tmp > /tmp/t && cat /tmp/t",
    )
    assert "visible" not in probe["stdout"], probe["stdout"]
    assert "Read-only file system" in probe["stdout"]
    assert probe["stdout"].endswith("tmp\n")


def test_the_command_runs_as_a_non_root_user_with_no_capabilities_and_seccomp(client, session, report, sandbox_service):
    result = execute(
        client, session, "id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; touch owned"
    )
    lines = result["stdout"].split("\n")
    assert lines[0] == "1000"
    status = dict(line.split(":\t") for line in lines[1:] if line)
    assert status["CapEff"] == status["CapBnd"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1"
    if report.seccomp.available:
        assert status["Seccomp"] == "2"
    if os.geteuid() == 0:
        # On the host the sandbox user is an unprivileged uid, not root.
        owned = next(sandbox_service.state_dir.glob(f"sessions/{session}/workspace/owned"))
        assert owned.stat().st_uid == 65534


def test_seccomp_refuses_new_namespaces(client, session, report):
    if not report.seccomp.available:
        pytest.skip(f"no seccomp on this host: {report.seccomp.detail}")
    result = execute(client, session, "unshare -U true; unshare -n true")
    assert result["stderr"].count("Operation not permitted") == 2


def test_two_sessions_do_not_see_each_other(client, session):
    execute(client, session, "echo mine > secret.txt")
    other = client.post("/sessions", json={}).json()["session_id"]
    try:
        assert execute(client, other, "ls -A /workspace /tmp")["stdout"].count("secret") == 0
    finally:
        client.delete(f"/sessions/{other}")


# auth, ids, errors ------------------------------------------------------------------------------------


def test_a_missing_or_wrong_token_gets_401_and_health_needs_none(sandbox_service: SandboxService):
    url = sandbox_service.url
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": sandbox_service.token},
        {"Authorization": "Bearer " + sandbox_service.token + "x"},
        {"Authorization": "Bearer é".encode("latin-1")},
    ):
        response = httpx.post(f"{url}/sessions", json={}, headers=headers)
        assert response.status_code == 401
        assert response.json() == {"detail": "missing or invalid bearer token"}
    assert httpx.get(f"{url}/healthz").json() == {"ok": True, "provider": "bubblewrap"}
    ready = httpx.get(f"{url}/readyz").json()
    assert ready["ok"] is True and ready["isolation"] in {"full", "partial"}
    assert sandbox_service.token not in sandbox_service.log()


def test_an_empty_token_disables_auth():
    with SandboxService(token="") as service:
        assert httpx.post(f"{service.url}/sessions", json={}).status_code == 200
        assert "auth OFF" in service.log()


def test_a_deleted_session_is_404_everywhere(client: httpx.Client, sandbox_service: SandboxService):
    session_id = client.post("/sessions", json={}).json()["session_id"]
    assert session_id in sandbox_service.session_ids()
    assert sandbox_service.delete_session(session_id) == 200
    assert session_id not in sandbox_service.session_ids()
    calls = [
        client.post(f"/sessions/{session_id}/exec", json={"command": "true"}),
        client.post(f"/sessions/{session_id}/run", json={"language": "python", "code": "pass"}),
        client.put(f"/sessions/{session_id}/files", json={"path": "a", "content": ""}),
        client.get(f"/sessions/{session_id}/files", params={"path": "a"}),
        client.get(f"/sessions/{session_id}/files/list"),
        client.delete(f"/sessions/{session_id}"),
    ]
    for response in calls:
        assert response.status_code == 404
        assert response.json() == {"detail": f"session {session_id} not found", "error": "session_not_found"}


def test_a_malformed_session_id_is_422(client: httpx.Client):
    for bad in ("xyz", "0123456789ABCDEF", "0123456789abcdef0"):
        response = client.post(f"/sessions/{bad}/exec", json={"command": "true"})
        assert response.status_code == 422, bad
        assert "16 lowercase hex" in response.text


def test_validation_errors_say_where_and_never_echo_the_payload(client, session):
    marker = "payload-marker-" + "z" * 40
    response = client.post(f"/sessions/{session}/exec", json={"command": "true", "timeout_seconds": marker})
    assert response.status_code == 422
    assert marker not in response.text
    assert response.json()["detail"][0]["loc"] == ["body", "timeout_seconds"]
    bad_b64 = client.put(
        f"/sessions/{session}/files", json={"path": "x", "content": "%%%" + marker, "encoding": "base64"}
    )
    assert bad_b64.status_code == 422 and marker not in bad_b64.text
    not_json = client.post(
        f"/sessions/{session}/exec", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert not_json.status_code == 422 and "not valid JSON" in not_json.text


def test_the_session_cap_answers_429_with_retry_after_and_frees_on_delete():
    with SandboxService(extra_env={"SANDBOX_MAX_SESSIONS": "2"}) as service, service.client() as client:
        first, second = (client.post("/sessions", json={}).json()["session_id"] for _ in range(2))
        refused = client.post("/sessions", json={})
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "5"
        assert "session limit reached (2/2 live)" in refused.json()["detail"]
        client.delete(f"/sessions/{first}")
        assert client.post("/sessions", json={}).status_code == 200
        assert second


def test_a_body_over_the_request_limit_is_413():
    with SandboxService(extra_env={"SANDBOX_MAX_REQUEST_BYTES": "2048"}) as service, service.client() as client:
        session_id = client.post("/sessions", json={}).json()["session_id"]
        response = client.put(f"/sessions/{session_id}/files", json={"path": "big", "content": "x" * 5000})
        assert response.status_code == 413
        assert "SANDBOX_MAX_REQUEST_BYTES" in response.json()["detail"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
            yield b'{"path": "big", "content": "'
            for _ in range(10):
                yield b"y" * 500
            yield b'"}'

        streamed = client.put(
            f"/sessions/{session_id}/files", content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert streamed.status_code == 413


# lifecycle --------------------------------------------------------------------------------------------


def test_a_session_reaps_itself_after_its_timeout():
    with SandboxService(extra_env={"SANDBOX_REAP_INTERVAL": "0.2"}) as service, service.client() as client:
        session_id = client.post("/sessions", json={"timeout_seconds": 1}).json()["session_id"]
        assert (service.state_dir / "sessions" / session_id).is_dir()
        time.sleep(2)
        assert client.post(f"/sessions/{session_id}/exec", json={"command": "true"}).status_code == 404
        assert not (service.state_dir / "sessions" / session_id).exists()


def test_sessions_a_crashed_service_left_are_removed_at_the_next_start_and_a_live_ones_are_kept():
    crashed = SandboxService().start()
    shared = {"SANDBOX_STATE_DIR": str(crashed.state_dir)}
    live = SandboxService(extra_env=shared).start()
    successor = None
    try:
        with crashed.client() as client:
            orphan = client.post("/sessions", json={}).json()["session_id"]
        with live.client() as client:
            kept = client.post("/sessions", json={}).json()["session_id"]
        os.killpg(crashed.process.pid, signal.SIGKILL)
        crashed.process.wait()
        assert (crashed.state_dir / "sessions" / orphan).is_dir()

        successor = SandboxService(extra_env=shared).start()

        assert not (crashed.state_dir / "sessions" / orphan).exists()
        assert not Path(f"/sys/fs/cgroup/memory/dra-sandbox-{orphan}").exists()
        assert "removed 1 session(s) a stopped service left behind" in successor.log()
        with live.client() as client:
            assert execute(client, kept, "echo alive")["stdout"] == "alive\n"
    finally:
        for service in (successor, live, crashed):
            if service is not None:
                service.stop()


def test_stopping_the_service_removes_its_sessions_and_kills_what_they_run():
    service = SandboxService().start()
    client = service.client()
    session_id = client.post("/sessions", json={}).json()["session_id"]
    session_dir = service.state_dir / "sessions" / session_id
    assert session_dir.is_dir()
    pool = ThreadPoolExecutor(1)
    running = pool.submit(
        client.post, f"/sessions/{session_id}/exec", json={"command": "sleep 6125.0417", "timeout_seconds": 600}
    )
    time.sleep(0.5)
    started = time.monotonic()
    os.killpg(service.process.pid, signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises SIGTERM as its exit status.
    assert service.process.wait(timeout=15) in (0, -signal.SIGTERM)
    assert time.monotonic() - started < 10
    assert host_processes_running("6125.0417") == []
    with contextlib.suppress(httpx.HTTPError):
        running.result(timeout=10)
    pool.shutdown()
    client.close()
    assert not session_dir.exists()
    assert not Path(f"/sys/fs/cgroup/pids/dra-sandbox-{session_id}").exists()
    service.stop()


def test_the_service_refuses_bad_settings_naming_the_variable():
    env = {**os.environ, "SANDBOX_MAX_SESSIONS": "lots", "LLM_SANDBOX_TOKEN": "tok-secret-123"}
    result = subprocess.run(
        [sys.executable, "-m", "dra_sandbox", "serve", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "SANDBOX_MAX_SESSIONS" in result.stderr and "tok-secret-123" not in result.stderr


def test_probe_prints_the_verdict_and_json_report():
    plain = subprocess.run([sys.executable, "-m", "dra_sandbox", "probe"], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0].startswith(("FULL ISOLATION", "PARTIAL ISOLATION"))
    report = json.loads(
        subprocess.run(
            [sys.executable, "-m", "dra_sandbox", "probe", "--json"], capture_output=True, text=True, timeout=60
        ).stdout
    )
    assert report["bubblewrap"]["available"] is True


def test_without_writable_cgroups_limits_fall_back_to_rlimits_and_still_contain_an_oom(tmp_path: Path):
    no_cgroups = {"SANDBOX_CGROUP_ROOT": str(tmp_path / "no-cgroups"), "SANDBOX_PIDS_MAX": "64"}
    with SandboxService(extra_env=no_cgroups) as service, service.client() as client:
        ready = client.get("/readyz").json()
        assert ready["isolation"] == "partial"
        assert any("falls back to prlimit --as" in gap for gap in ready["missing"])
        session_id = client.post("/sessions", json={"memory_mb": 128}).json()["session_id"]
        limits = execute(client, session_id, "prlimit --as --nproc --noheadings --output SOFT")["stdout"].split()
        assert limits == [str(128 * 1024 * 1024), "64"]
        oom = python(client, session_id, "block = bytearray(400 * 1024 * 1024)")
        assert oom["exit_code"] == 1 and "MemoryError" in oom["stderr"]
        assert execute(client, session_id, "echo alive")["stdout"] == "alive\n"
