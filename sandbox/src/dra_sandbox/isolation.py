"""What isolation this host can give a sandbox session, found by trying it, with a verdict in plain words.

Contract:
- ``detect()`` looks for bwrap (and setpriv when running as root), libseccomp, the writable cgroup v1
  controllers and prlimit, then runs one real sandboxed command with the exact options a session
  uses, checking from the inside that it is a non-root uid with no capabilities and that the seccomp
  filter refuses an inet socket. It starts no server and leaves nothing behind.
- ``probe()`` returns the typed ``IsolationReport`` that the service's startup, ``python -m dra_sandbox
  probe``, ``./run.sh doctor`` and ``./run-stack.sh doctor`` all print: a level (``full`` /
  ``partial`` / ``none``), a one-line verdict, what works and what is missing.
- ``full`` needs bwrap working, seccomp, and cgroup memory and pids limits; without cgroups the
  session's limits fall back to rlimits (``partial``); without a working bwrap there is no sandbox
  (``none``) and the service refuses to start.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from . import seccomp
from .bwrap import BwrapUnavailable, SandboxSpec, Toolchain, sandbox_argv, write_identity_files
from .limits import CgroupControllers, rlimit_args
from .settings import SandboxSettings

Level = Literal["full", "partial", "none"]

# Runs inside the trial sandbox: who am I, which capabilities, can I open an inet socket.
TRIAL_SNIPPET = r"""
import json, os, socket
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    inet = "allowed"
except PermissionError:
    inet = "denied"
except OSError as exc:
    inet = "error: " + exc.strerror
print(json.dumps({"uid": os.getuid(), "cap_eff": status["CapEff"].strip(),
                  "seccomp": status["Seccomp"].strip(), "inet": inet,
                  "root_visible": os.path.exists("/root")}))
"""


class Capability(BaseModel):
    """One isolation feature: whether this host provides it, and what was found."""

    available: bool
    detail: str


class IsolationReport(BaseModel):
    """The isolation a sandbox session gets on this host."""

    bubblewrap: Capability
    seccomp: Capability
    cgroup_memory: Capability
    cgroup_pids: Capability
    cgroup_cpu: Capability
    prlimit: Capability
    runs_as: str

    @property
    def level(self) -> Level:
        if not self.bubblewrap.available:
            return "none"
        if self.seccomp.available and self.cgroup_memory.available and self.cgroup_pids.available:
            return "full"
        return "partial"

    def missing(self) -> list[str]:
        """What this host cannot give a session, each in a sentence."""
        gaps = []
        if not self.bubblewrap.available:
            gaps.append(f"no sandbox at all: {self.bubblewrap.detail}")
        if not self.seccomp.available:
            gaps.append(
                f"no seccomp filter (inet sockets and namespace syscalls are not blocked): {self.seccomp.detail}"
            )
        if not self.cgroup_memory.available:
            limit = "prlimit --as (address space per process)" if self.prlimit.available else "nothing"
            gaps.append(f"no cgroup memory limit, the memory cap falls back to {limit}: {self.cgroup_memory.detail}")
        if not self.cgroup_pids.available:
            limit = "prlimit --nproc (per uid)" if self.prlimit.available else "nothing"
            gaps.append(f"no cgroup pids limit, the process cap falls back to {limit}: {self.cgroup_pids.detail}")
        if not self.cgroup_cpu.available:
            gaps.append(f"no cpu quota (a session may use every core): {self.cgroup_cpu.detail}")
        if not self.prlimit.available:
            gaps.append(f"no rlimits (file size, open files): {self.prlimit.detail}")
        return gaps

    def verdict(self) -> str:
        if self.level == "none":
            return f"NO ISOLATION — the sandbox cannot run here: {self.bubblewrap.detail}"
        what = [
            f"bubblewrap (no network, read-only system, private /workspace and /tmp, {self.runs_as}, no capabilities)"
        ]
        if self.seccomp.available:
            what.append("seccomp (inet sockets and namespace syscalls refused)")
        if self.cgroup_memory.available and self.cgroup_pids.available:
            what.append("cgroup v1 memory and pid limits" + (" and a cpu quota" if self.cgroup_cpu.available else ""))
        elif self.prlimit.available:
            what.append("rlimits in place of cgroup limits")
        prefix = "FULL ISOLATION" if self.level == "full" else "PARTIAL ISOLATION"
        return f"{prefix} — " + "; ".join(what)

    def lines(self) -> list[str]:
        """The verdict, then one line per gap (none when the isolation is full)."""
        return [self.verdict(), *(f"missing: {gap}" for gap in self.missing())]


@dataclass(frozen=True)
class HostCapabilities:
    """What ``detect()`` found, kept in the form the service uses to build sessions."""

    tools: Toolchain | None
    bwrap_detail: str
    seccomp_ok: bool
    seccomp_detail: str
    controllers: CgroupControllers
    host_uid: int | None

    def report(self) -> IsolationReport:
        statuses = self.controllers.statuses
        prlimit = self.tools.prlimit if self.tools else shutil.which("prlimit")
        runs_as = (
            f"uid {self.host_uid} on the host (dropped from root), uid 1000 inside"
            if self.host_uid is not None
            else f"your uid {os.geteuid()} on the host, uid 1000 inside"
        )
        return IsolationReport(
            bubblewrap=Capability(available=self.tools is not None, detail=self.bwrap_detail),
            seccomp=Capability(available=self.seccomp_ok, detail=self.seccomp_detail),
            cgroup_memory=Capability(available=statuses["memory"].writable, detail=statuses["memory"].detail),
            cgroup_pids=Capability(available=statuses["pids"].writable, detail=statuses["pids"].detail),
            cgroup_cpu=Capability(available=statuses["cpu"].writable, detail=statuses["cpu"].detail),
            prlimit=Capability(
                available=prlimit is not None, detail=prlimit or "prlimit (util-linux) is not installed under /usr"
            ),
            runs_as=runs_as,
        )


def _trial(tools: Toolchain, python: str, host_uid: int | None, bpf: bytes | None) -> tuple[bool, str, dict]:
    """Run the trial snippet in a real sandbox; (worked, detail, what the inside reported)."""
    with tempfile.TemporaryDirectory(prefix="dra-sandbox-probe-") as scratch:
        root = Path(scratch)
        workspace, tmp, etc_dir = root / "workspace", root / "tmp", root / "etc"
        workspace.mkdir()
        tmp.mkdir()
        write_identity_files(etc_dir)
        root.chmod(0o711)
        if host_uid is not None:
            for path in (workspace, tmp):
                os.chown(path, host_uid, host_uid)
        fds: tuple[int, ...] = ()
        if bpf is not None:
            (root / "filter.bpf").write_bytes(bpf)
            fds = (os.open(root / "filter.bpf", os.O_RDONLY),)
        spec = SandboxSpec(
            workspace=workspace,
            tmp=tmp,
            etc_dir=etc_dir,
            network=False,
            host_uid=host_uid,
            rlimits=rlimit_args(max_file_bytes=1 << 20, memory_mb=None, nproc=None),
            seccomp_fd=fds[0] if fds else None,
        )
        command = [python, "-c", TRIAL_SNIPPET] if Path(python).exists() else ["/bin/sh", "-c", "echo '{}'"]
        try:
            result = subprocess.run(
                sandbox_argv(tools, spec, command),
                capture_output=True,
                text=True,
                timeout=30,
                pass_fds=fds,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"bwrap did not run: {exc}", {}
        finally:
            for fd in fds:
                os.close(fd)
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
        return False, f"bwrap {tools.bwrap_version} is installed but cannot build a sandbox: {reason[:300]}", {}
    try:
        inside = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        inside = {}
    return True, f"bubblewrap {tools.bwrap_version} works", inside


def detect(settings: SandboxSettings | None = None) -> HostCapabilities:
    settings = settings or SandboxSettings()
    host_uid = settings.sandbox_uid if os.geteuid() == 0 else None
    controllers = CgroupControllers.detect(settings.cgroup_root)
    seccomp_ok, seccomp_detail = seccomp.available()
    bpf = seccomp.build_filter(allow_inet=False) if seccomp_ok else None
    try:
        tools: Toolchain | None = Toolchain.discover()
    except BwrapUnavailable as exc:
        return HostCapabilities(None, str(exc), seccomp_ok, seccomp_detail, controllers, host_uid)
    ok, detail, inside = _trial(tools, settings.python, host_uid, bpf)
    if ok and bpf is not None and inside.get("inet") not in (None, "denied"):
        seccomp_ok, seccomp_detail = False, f"the filter loaded but an inet socket was {inside['inet']}"
    elif not ok and bpf is not None:
        # bwrap may work without the filter (a kernel without seccomp filters): say which part fails.
        ok_plain, _, _ = _trial(tools, settings.python, host_uid, None)
        if ok_plain:
            ok, detail = True, f"bubblewrap {tools.bwrap_version} works"
            seccomp_ok, seccomp_detail = False, "bwrap cannot load a seccomp filter on this kernel"
    if ok and inside:
        if inside.get("uid") == 0 or inside.get("cap_eff", "0") not in ("0000000000000000", "0"):
            ok, detail = (
                False,
                f"the sandboxed command ran as uid {inside.get('uid')} with capabilities {inside.get('cap_eff')}",
            )
        elif inside.get("root_visible"):
            ok, detail = False, "the host's /root is visible inside the sandbox"
    if ok and seccomp_ok:
        seccomp_detail += "; inside a session an inet socket is refused"
    return HostCapabilities(tools if ok else None, detail, seccomp_ok, seccomp_detail, controllers, host_uid)


def probe(settings: SandboxSettings | None = None) -> IsolationReport:
    """The isolation a session gets on this host, tried for real."""
    return detect(settings).report()
