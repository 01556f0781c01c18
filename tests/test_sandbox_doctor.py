"""What `./run.sh doctor` (and the service) say about the host's isolation, in plain words."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deep_research_agent.cli.doctor import OK, WARN, run_doctor
from dra_sandbox import isolation
from dra_sandbox.isolation import Capability, IsolationReport
from dra_sandbox.limits import CgroupControllers

ROOT = Path(__file__).resolve().parents[1]


def report(**missing: str) -> IsolationReport:
    """A report where every capability works except those named (with the reason given)."""
    fields = ("bubblewrap", "seccomp", "cgroup_memory", "cgroup_pids", "cgroup_cpu", "prlimit")
    values = {
        name: Capability(available=name not in missing, detail=missing.get(name, f"{name} works")) for name in fields
    }
    return IsolationReport(**values, runs_as="uid 65534 on the host (dropped from root), uid 1000 inside")


def words(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_full_isolation_reads_as_full_with_nothing_missing():
    full = report()
    assert full.level == "full" and full.missing() == []
    assert full.verdict().startswith("FULL ISOLATION — bubblewrap (no network, read-only system")
    assert "seccomp (inet sockets and namespace syscalls refused)" in full.verdict()
    assert "cgroup v1 memory and pid limits and a cpu quota" in full.verdict()


def test_a_host_without_cgroup_v1_is_partial_and_says_what_replaces_the_limits():
    partial = report(
        cgroup_memory="no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory",
        cgroup_pids="no cgroup v1 pids hierarchy",
        cgroup_cpu="no cgroup v1 cpu hierarchy",
    )
    assert partial.level == "partial"
    assert partial.verdict().startswith("PARTIAL ISOLATION")
    assert "rlimits in place of cgroup limits" in partial.verdict()
    gaps = " | ".join(partial.missing())
    assert "the memory cap falls back to prlimit --as (address space per process)" in gaps
    assert "the process cap falls back to prlimit --nproc (per uid)" in gaps
    assert "no cpu quota" in gaps


def test_a_host_without_bubblewrap_has_no_isolation_and_says_how_to_get_it():
    none = report(bubblewrap="bubblewrap (bwrap) is not installed — apt-get install bubblewrap")
    assert none.level == "none"
    assert (
        none.verdict()
        == "NO ISOLATION — the sandbox cannot run here: bubblewrap (bwrap) is not installed — apt-get install bubblewrap"
    )


def test_controllers_that_are_not_mounted_are_reported_not_writable(tmp_path: Path):
    controllers = CgroupControllers.detect(tmp_path)
    assert not any(controllers.writable(name) for name in ("memory", "pids", "cpu"))
    assert controllers.statuses["memory"].detail == f"no cgroup v1 memory hierarchy at {tmp_path / 'memory'}"


def test_run_doctor_prints_the_verdict_and_one_warning_per_missing_piece(monkeypatch, tmp_path):
    partial = report(seccomp="libseccomp cannot be loaded", cgroup_cpu="no cgroup v1 cpu hierarchy")
    monkeypatch.setattr(isolation, "probe", lambda *a, **k: partial)

    checks = [c for c in run_doctor("http://127.0.0.1:9", ROOT, {}) if c.name == "isolation"]

    assert checks[0].mark == WARN and checks[0].detail == partial.verdict()
    assert [c.detail for c in checks[1:]] == [f"missing: {gap}" for gap in partial.missing()]
    monkeypatch.setattr(isolation, "probe", lambda *a, **k: report())
    assert [(c.mark, c.detail) for c in run_doctor("http://127.0.0.1:9", ROOT, {}) if c.name == "isolation"] == [
        (OK, report().verdict())
    ]


def test_run_sh_doctor_shows_this_hosts_real_verdict():
    if not isolation.probe().bubblewrap.available and not os.environ.get("CI"):
        pytest.skip("bubblewrap is not installed")
    env = {**os.environ, "COLUMNS": "400", "OPENAI_API_KEY": "sk-doctor-0123456789"}
    env.pop("LLM_SANDBOX_URL", None)
    result = subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "doctor", "--url", "http://127.0.0.1:9"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert words(isolation.probe().verdict()) in words(result.stdout)
