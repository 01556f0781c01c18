"""The bubblewrap command one exec runs as, and the runner that enforces its timeout and output cap.

Contract:
- The system inside is built from parts, read-only: ``/usr`` (with an empty ``/usr/local``, so host
  tools installed there stay out), the ``/bin``-style links of a merged-/usr host, and a short list of
  ``/etc`` entries programs need (dynamic linker cache, alternatives, CA certificates, resolver, time
  zone), plus a generated ``/etc/passwd`` naming the sandbox user. ``/workspace`` and ``/tmp`` are the
  session's own directories; ``/dev`` is bwrap's minimal one and ``/proc`` belongs to the new pid
  namespace. Nothing else of the host is mounted.
- Every namespace is new (user, pid, net, ipc, uts, mount, cgroup); a session without network keeps
  only its own ``lo``. The command runs as uid 1000 with no capabilities, in a new session (no TIOCSTI),
  with a clean environment, and under the seccomp filter when one is given.
- When the service runs as root, bwrap itself is started as ``sandbox_uid`` through ``setpriv``, so the
  sandbox's uid maps to an unprivileged host uid and host files owned by root stay unreadable to it.
  Before that, a tiny ``sh`` prologue moves the process into the session's cgroups.
- ``run()`` kills the whole sandbox (bwrap takes its pid namespace down with it) when the timeout
  passes and reports ``timed_out``; it keeps at most ``max_output`` bytes of each stream and drains the
  rest, so a command printing gigabytes costs the service nothing.

Why not llm-sandbox's or deepagents-sandbox's bubblewrap backends: neither enforces cgroup limits or
keeps a session's files across processes the way this API needs (components.md §A2, §A4).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

SANDBOX_UID = 1000
WORKDIR = "/workspace"
READ_CHUNK = 64 * 1024
ETC_ENTRIES = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "resolv.conf",
    "gai.conf",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "localtime",
    "timezone",
    "mime.types",
    "os-release",
    "debian_version",
    "protocols",
    "services",
    "magic",
    "fonts",
)
SANDBOX_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "USER": "sandbox",
    "PYTHONUNBUFFERED": "1",
}
# Moves this process into each cgroup.procs given, then execs the rest of argv.
CGROUP_PROLOGUE = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'


class BwrapUnavailable(RuntimeError):
    """bubblewrap is not installed or cannot create namespaces here."""


@dataclass(frozen=True)
class Toolchain:
    """The host binaries every exec uses, found once."""

    bwrap: str
    bwrap_version: str
    disable_userns: bool
    setpriv: str | None
    prlimit: str | None
    sh: str

    @classmethod
    def discover(cls) -> Toolchain:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise BwrapUnavailable("bubblewrap (bwrap) is not installed — apt-get install bubblewrap")
        try:
            out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BwrapUnavailable(f"bwrap --version failed: {exc}") from None
        version = out.stdout.strip().removeprefix("bubblewrap ").strip() or "unknown"
        numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:2]) or (0, 0)
        setpriv = shutil.which("setpriv")
        if os.geteuid() == 0 and setpriv is None:
            raise BwrapUnavailable("running as root needs setpriv (util-linux) to start bwrap unprivileged")
        prlimit = shutil.which("prlimit")
        if prlimit is not None and not prlimit.startswith("/usr/"):
            prlimit = "/usr/bin/prlimit" if Path("/usr/bin/prlimit").exists() else None
        return cls(
            bwrap=bwrap,
            bwrap_version=version,
            disable_userns=numbers >= (0, 8),
            setpriv=setpriv if os.geteuid() == 0 else None,
            prlimit=prlimit,
            sh=shutil.which("sh") or "/bin/sh",
        )


@functools.cache
def system_binds(etc_dir: Path) -> tuple[str, ...]:
    """The read-only system tree, as bwrap options (the host's layout is read once per process)."""
    args = ["--ro-bind", "/usr", "/usr"]
    if Path("/usr/local").is_dir():
        args += ["--tmpfs", "/usr/local", "--remount-ro", "/usr/local"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / top
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in ETC_ENTRIES:
        if (Path("/etc") / name).exists():
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for python_etc in sorted(Path("/etc").glob("python3*")):
        args += ["--ro-bind", str(python_etc), str(python_etc)]
    for name in ("passwd", "group"):
        args += ["--ro-bind", str(etc_dir / name), f"/etc/{name}"]
    return tuple(args)


def write_identity_files(etc_dir: Path) -> None:
    """``/etc/passwd`` and ``/etc/group`` for the sandbox, so ``id``/``whoami``/``getpass`` name the user."""
    etc_dir.mkdir(parents=True, exist_ok=True)
    (etc_dir / "passwd").write_text(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:/tmp:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    (etc_dir / "group").write_text(f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n")
    for name in ("passwd", "group"):
        (etc_dir / name).chmod(0o644)


@dataclass(frozen=True)
class SandboxSpec:
    """Everything that decides how one exec is isolated."""

    workspace: Path
    tmp: Path
    etc_dir: Path
    network: bool
    host_uid: int | None  # None: run bwrap as the service's own uid
    cgroup_procs: Sequence[Path] = ()
    rlimits: Sequence[str] = ()
    seccomp_fd: int | None = None


def sandbox_argv(tools: Toolchain, spec: SandboxSpec, command: Sequence[str]) -> list[str]:
    argv: list[str] = []
    if spec.cgroup_procs:
        argv += [tools.sh, "-c", CGROUP_PROLOGUE, "sh", str(len(spec.cgroup_procs)), *map(str, spec.cgroup_procs)]
    if spec.host_uid is not None and tools.setpriv is not None:
        argv += [tools.setpriv, f"--reuid={spec.host_uid}", f"--regid={spec.host_uid}", "--clear-groups"]
    argv += [tools.bwrap, *system_binds(spec.etc_dir)]
    argv += ["--bind", str(spec.workspace), WORKDIR, "--bind", str(spec.tmp), "/tmp"]
    argv += ["--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc"]
    argv += ["--unshare-all", "--unshare-user"]
    if spec.network:
        argv.append("--share-net")
    if tools.disable_userns:
        argv.append("--disable-userns")
    argv += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox"]
    argv += ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--chdir", WORKDIR, "--clearenv"]
    for key, value in SANDBOX_ENV.items():
        argv += ["--setenv", key, value]
    if spec.seccomp_fd is not None:
        argv += ["--seccomp", str(spec.seccomp_fd)]
    argv.append("--")
    if tools.prlimit is not None and spec.rlimits:
        argv += [tools.prlimit, *spec.rlimits, "--"]
    argv += list(command)
    return argv


@dataclass(frozen=True)
class RawResult:
    exit_code: int
    stdout: bytes
    stderr: bytes
    truncated: bool
    timed_out: bool
    duration_ms: int


async def _pump(stream: asyncio.StreamReader, buf: bytearray, limit: int) -> bool:
    """Read ``stream`` to EOF, keeping ``limit`` bytes; True when more arrived than was kept."""
    overflow = False
    while chunk := await stream.read(READ_CHUNK):
        room = limit - len(buf)
        if room > 0:
            buf += chunk[:room]
        if len(chunk) > max(room, 0):
            overflow = True
    return overflow


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command exited before reading all of it; its exit code tells the story
    finally:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.close()


async def run(
    argv: Sequence[str],
    *,
    timeout: float,
    max_output: int,
    stdin: bytes | None = None,
    pass_fds: Sequence[int] = (),
    started: Callable[[asyncio.subprocess.Process], None] | None = None,
) -> RawResult:
    """Run ``argv``; kill it after ``timeout`` seconds. Output past ``max_output`` bytes per stream is dropped."""
    begin = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        pass_fds=tuple(pass_fds),
        start_new_session=True,
    )
    if started is not None:
        started(process)
    out, err = bytearray(), bytearray()
    assert process.stdout is not None and process.stderr is not None
    pumps = asyncio.gather(_pump(process.stdout, out, max_output), _pump(process.stderr, err, max_output))
    feeder = asyncio.ensure_future(_feed(process.stdin, stdin)) if stdin is not None and process.stdin else None
    timed_out = False
    try:
        await asyncio.wait_for(process.wait(), timeout=timeout)
    except TimeoutError:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
    try:
        # The pipes close once every process inside is gone, which bwrap's exit guarantees.
        overflow_out, overflow_err = await asyncio.wait_for(pumps, timeout=5)
    except TimeoutError:
        pumps.cancel()
        overflow_out = overflow_err = True
    if feeder is not None:
        feeder.cancel()
    code = process.returncode if process.returncode is not None else -1
    if code < 0:
        code = 128 - code  # killed by a signal: report it the way a shell does
    return RawResult(
        exit_code=code,
        stdout=bytes(out),
        stderr=bytes(err),
        truncated=overflow_out or overflow_err,
        timed_out=timed_out,
        duration_ms=int((time.monotonic() - begin) * 1000),
    )
