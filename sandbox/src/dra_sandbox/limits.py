"""Resource limits for one session: cgroup v1 memory, pids and cpu where this process can create child
cgroups, POSIX rlimits (``prlimit``) for everything else.

Contract:
- ``CgroupControllers.detect()`` finds the writable v1 controllers by creating and removing a probe
  cgroup, so a read-only or missing hierarchy (a cgroup v2 host, a container, a non-root user) simply
  reports "not writable" with the reason, and the session falls back to rlimits.
- A session's cgroups live at ``<controller>/dra-sandbox-<session id>`` and hold every process of every
  exec of that session, so an OOM inside the session is the kernel's memcg OOM: it kills the biggest
  process in the session (the exec that allocated), and the session itself, which is only files on
  disk, stays usable.
- ``SessionCgroups.remove()`` kills whatever is left inside and removes the directories; it is safe to
  call twice and on a half-created session.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_V1_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "dra-sandbox-"
CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000
MIB = 1024 * 1024


@dataclass(frozen=True)
class ControllerStatus:
    name: str
    path: Path | None
    detail: str

    @property
    def writable(self) -> bool:
        return self.path is not None


def _probe_controller(root: Path, name: str) -> ControllerStatus:
    base = root / name
    marker = {"memory": "memory.limit_in_bytes", "pids": "cgroup.procs", "cpu": "cpu.cfs_period_us"}[name]
    if not (base / marker).exists() or not (base / "tasks").exists():
        return ControllerStatus(name, None, f"no cgroup v1 {name} hierarchy at {base}")
    probe = base / f"{CGROUP_PREFIX}probe-{os.getpid()}-{time.monotonic_ns()}"
    try:
        probe.mkdir()
    except OSError as exc:
        return ControllerStatus(name, None, f"cannot create a cgroup under {base} ({exc.strerror})")
    try:
        limit_file = {"memory": "memory.limit_in_bytes", "pids": "pids.max", "cpu": "cpu.cfs_quota_us"}[name]
        (probe / limit_file).write_text({"memory": str(64 * MIB), "pids": "64", "cpu": str(CPU_PERIOD_US)}[name])
    except OSError as exc:
        return ControllerStatus(name, None, f"cannot set {limit_file} under {base} ({exc.strerror})")
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()
    return ControllerStatus(name, base, f"cgroup v1 {name} at {base} is writable")


@dataclass(frozen=True)
class CgroupControllers:
    """The v1 controllers this process may create session cgroups in."""

    statuses: dict[str, ControllerStatus]

    @classmethod
    def detect(cls, root: Path = CGROUP_V1_ROOT) -> CgroupControllers:
        return cls({name: _probe_controller(root, name) for name in CONTROLLERS})

    def writable(self, name: str) -> bool:
        return self.statuses[name].writable

    def create(self, session_id: str, *, memory_mb: int, pids_max: int, cpus: float) -> SessionCgroups:
        cgroups = SessionCgroups({})
        try:
            for name, status in self.statuses.items():
                if status.path is None:
                    continue
                path = status.path / f"{CGROUP_PREFIX}{session_id}"
                path.mkdir(exist_ok=True)
                cgroups.paths[name] = path
                if name == "memory":
                    limit = str(memory_mb * MIB)
                    (path / "memory.limit_in_bytes").write_text(limit)
                    # Without memsw a host with swap would let the session swap past its limit.
                    with contextlib.suppress(OSError):
                        (path / "memory.memsw.limit_in_bytes").write_text(limit)
                elif name == "pids":
                    (path / "pids.max").write_text(str(pids_max))
                elif name == "cpu":
                    (path / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
                    (path / "cpu.cfs_quota_us").write_text(str(max(1000, int(cpus * CPU_PERIOD_US))))
        except OSError:
            cgroups.remove()
            raise
        return cgroups


@dataclass
class SessionCgroups:
    paths: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def existing(cls, session_id: str, root: Path = CGROUP_V1_ROOT) -> SessionCgroups:
        """The cgroups a session of an earlier (crashed) service left behind."""
        paths = {name: root / name / f"{CGROUP_PREFIX}{session_id}" for name in CONTROLLERS}
        return cls({name: path for name, path in paths.items() if path.is_dir()})

    def procs_files(self) -> list[Path]:
        return [path / "cgroup.procs" for path in self.paths.values()]

    @property
    def memory_limit_mb(self) -> int | None:
        path = self.paths.get("memory")
        if path is None:
            return None
        try:
            return int((path / "memory.limit_in_bytes").read_text()) // MIB
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int | None:
        """How many processes the memory controller has OOM-killed in this session so far."""
        path = self.paths.get("memory")
        if path is None:
            return None
        try:
            for line in (path / "memory.oom_control").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            return None
        return None

    def kill_all(self) -> None:
        for procs in self.procs_files():
            with contextlib.suppress(OSError):
                for pid in procs.read_text().split():
                    with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
                        os.kill(int(pid), signal.SIGKILL)

    def remove(self, timeout: float = 2.0) -> None:
        self.kill_all()
        deadline = time.monotonic() + timeout
        for name, path in list(self.paths.items()):
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    # Busy until the killed processes are reaped; a stuck one is left for the next sweep.
                    if time.monotonic() > deadline:
                        break
                    self.kill_all()
                    time.sleep(0.02)
            self.paths.pop(name, None)


def rlimit_args(*, max_file_bytes: int, memory_mb: int | None, nproc: int | None) -> list[str]:
    """``prlimit`` options for every exec; ``memory_mb``/``nproc`` only where no cgroup does the job.

    RLIMIT_AS bounds each process's address space (a weaker, per-process stand-in for a memory cgroup);
    RLIMIT_NPROC counts the sandbox uid's processes.
    """
    args = ["--nofile=1024", f"--fsize={max_file_bytes}", "--core=0"]
    if memory_mb is not None:
        args.append(f"--as={memory_mb * MIB}")
    if nproc is not None:
        args.append(f"--nproc={nproc}")
    return args
