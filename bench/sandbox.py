"""Sandbox service latency: session create, exec and run against the real service, versus no isolation.

Starts ``python -m dra_sandbox`` (bubblewrap, seccomp, cgroups where writable) on loopback and times, over
HTTP as the agent's client calls it:
- ``create``: ``POST /sessions`` then ``DELETE`` (the create is timed);
- ``exec``: ``POST /sessions/{id}/exec`` with ``echo hi``;
- ``run``: ``POST /sessions/{id}/run`` with a one-line Python script;
- ``write+read``: ``PUT`` then ``GET /sessions/{id}/files`` of a 10 kB file.

The baseline, measured in the same process and interleaved with the sandboxed calls, is the same work
with no isolation and no HTTP: ``subprocess.run(["/bin/sh", "-c", "echo hi"])`` and ``/usr/bin/python3``
on the same script, a local file write and read, and ``mkdir`` of a session directory for create. The
ratios say what isolation plus the API cost per call. Medians and p95 over ``ROUNDS`` calls each.

Run: ``uv run python -m bench.sandbox``. Exits 1 when any call fails; it asserts no speed target.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from dra_sandbox import bwrap
from dra_sandbox.isolation import detect
from testkit.sandbox_service import SandboxService

ROUNDS = 60
WARMUP = 5
SCRIPT = "print(sum(range(1000)))"
PAYLOAD = "x" * 10_000


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main() -> int:
    failures: list[str] = []

    def check(ok: bool, what: str) -> None:
        if not ok:
            failures.append(what)

    scratch = Path(tempfile.mkdtemp(prefix="dra-bench-baseline-"))
    with SandboxService() as service, service.client() as client:
        session_id = client.post("/sessions", json={}).json()["session_id"]

        def sandbox_create() -> None:
            created = client.post("/sessions", json={})
            check(created.status_code == 200, f"create: {created.status_code}")
            sandbox_create.last = created.json().get("session_id")  # type: ignore[attr-defined]

        def sandbox_exec() -> None:
            result = client.post(f"/sessions/{session_id}/exec", json={"command": "echo hi"}).json()
            check(result.get("stdout") == "hi\n", f"exec: {result}")

        def sandbox_run() -> None:
            result = client.post(f"/sessions/{session_id}/run", json={"language": "python", "code": SCRIPT}).json()
            check(result.get("stdout") == "499500\n", f"run: {result}")

        def sandbox_files() -> None:
            client.put(f"/sessions/{session_id}/files", json={"path": "bench.txt", "content": PAYLOAD})
            read = client.get(f"/sessions/{session_id}/files", params={"path": "bench.txt"}).json()
            check(read.get("content") == PAYLOAD, "write+read: content differs")

        def plain_create() -> None:
            (scratch / uuid.uuid4().hex / "workspace").mkdir(parents=True)

        def plain_exec() -> None:
            subprocess.run(["/bin/sh", "-c", "echo hi"], capture_output=True, check=True)

        def plain_run() -> None:
            subprocess.run(["/usr/bin/python3", "-c", SCRIPT], capture_output=True, check=True)

        def plain_files() -> None:
            path = scratch / "bench.txt"
            path.write_text(PAYLOAD)
            assert path.read_text() == PAYLOAD

        host = detect()
        assert host.tools is not None, host.bwrap_detail
        bare = scratch / "bare"
        for sub in ("workspace", "tmp"):
            (bare / sub).mkdir(parents=True)
        bwrap.write_identity_files(bare / "etc")
        scratch.chmod(0o711)
        if host.host_uid is not None:
            for sub in ("workspace", "tmp"):
                os.chown(bare / sub, host.host_uid, host.host_uid)
        bare_argv = bwrap.sandbox_argv(
            host.tools,
            bwrap.SandboxSpec(
                workspace=bare / "workspace",
                tmp=bare / "tmp",
                etc_dir=bare / "etc",
                network=False,
                host_uid=host.host_uid,
            ),
            ["/bin/sh", "-c", "echo hi"],
        )

        def bwrap_only_exec() -> None:
            out = subprocess.run(bare_argv, capture_output=True, check=False)
            check(out.stdout == b"hi\n", f"bwrap only: {out.stderr[:200]!r}")

        cases = {
            "create": (sandbox_create, plain_create),
            "exec": (sandbox_exec, plain_exec),
            "exec (bwrap only)": (bwrap_only_exec, plain_exec),
            "run": (sandbox_run, plain_run),
            "write+read": (sandbox_files, plain_files),
        }
        results: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in cases}
        for round_number in range(WARMUP + ROUNDS):
            for name, (sandboxed, plain) in cases.items():
                sandboxed_ms, plain_ms = timed(sandboxed), timed(plain)
                if name == "create":
                    client.delete(f"/sessions/{sandbox_create.last}")  # type: ignore[attr-defined]
                if round_number >= WARMUP:
                    results[name][0].append(sandboxed_ms)
                    results[name][1].append(plain_ms)
        isolation = client.get("/readyz").json()["isolation"]

    print(f"sandbox service (bubblewrap, isolation: {isolation}) vs no isolation, {ROUNDS} calls each, ms")
    print(f"{'call':<19}{'median':>9}{'p95':>9}{'baseline':>10}{'base p95':>10}{'ratio':>8}")
    for name, (sandboxed, plain) in results.items():
        median, base = statistics.median(sandboxed), statistics.median(plain)
        print(f"{name:<19}{median:>9.1f}{p95(sandboxed):>9.1f}{base:>10.2f}{p95(plain):>10.2f}{median / base:>7.1f}x")
    if failures:
        print(f"FAILED: {len(failures)} call(s); first: {failures[0]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
