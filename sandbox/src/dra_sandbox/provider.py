"""The bubblewrap provider: sessions as directories on disk, every exec a fresh sandbox over them.

Contract:
- A session is ``<state>/sessions/<id>/{workspace,tmp}`` plus its cgroups; it has no long-lived process,
  so an exec that is OOM-killed, times out or crashes takes only itself down and the next exec finds
  the same files. Its id is 16 random hex digits.
- Every file operation runs inside the session's sandbox too (``cat``/``head``/``find`` as the sandbox
  user), so a path means what it means to the code in the session, a symlink planted there cannot make
  the service touch a host file, and files written through the API belong to the sandbox user.
- Sessions end on ``destroy``, when their ``timeout_seconds`` pass (a reaper task), and when the service
  shuts down; running execs are killed, the cgroups and directories removed.
- Each running service holds an flock on ``<state>/instances/<instance>.lock``. At startup (and through
  ``reap_stale``) sessions whose owning instance holds no lock any more, i.e. a crashed service's, are
  killed and removed; another live service sharing the state directory keeps its sessions.
- Session ceilings come from settings: memory and cpus are clamped, lifetime and exec timeouts capped,
  and at most ``max_sessions`` live at once (``SessionLimitReached``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import logging
import os
import posixpath
import secrets
import shutil
import stat
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import bwrap, seccomp
from .isolation import HostCapabilities, IsolationReport
from .limits import SessionCgroups, rlimit_args
from .models import ExecResult, FileEntry
from .settings import SandboxSettings

log = logging.getLogger("dra_sandbox.provider")

TIMEOUT_EXIT = 124
LIST_MAX_ENTRIES = 2000
FILE_OP_TIMEOUT = 60
STALE_GRACE_SECONDS = 60

WRITE_SCRIPT = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
RUN_SCRIPT = 'cat > "$1" && "$2" "$1"; rc=$?; rm -f -- "$1"; exit $rc'
EXEC_SCRIPT = 'cd -- "$0" && exec sh -c "$1"'
LIST_SCRIPT = (
    'if [ ! -e "$1" ]; then echo "$1: No such file or directory" >&2; exit 2; fi; '
    'if [ ! -d "$1" ]; then echo "$1: Not a directory" >&2; exit 2; fi; '
    'find "$1" -mindepth 1 -maxdepth 1 -printf \'%y %s %f\\0\' | head -z -n "$2"'
)


class SessionNotFound(LookupError):
    """No live session has this id (never created, deleted, or expired)."""


class SessionLimitReached(RuntimeError):
    def __init__(self, live: int, limit: int) -> None:
        super().__init__(f"session limit reached ({live}/{limit} live) — retry once a running session ends")
        self.live, self.limit = live, limit


class SandboxSetupFailed(RuntimeError):
    """bwrap could not build the sandbox (not the command failing): an operator problem, not the caller's."""


class FileOperationFailed(RuntimeError):
    """A file operation the sandbox refused; ``code`` is one of deepagents' FileOperationError names."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code, self.detail = code, detail


def _classify(stderr: str) -> str:
    low = stderr.lower()
    if "no such file" in low:
        return "file_not_found"
    if "is a directory" in low:
        return "is_directory"
    if "permission denied" in low or "read-only file system" in low or "operation not permitted" in low:
        return "permission_denied"
    return "invalid_path"


def sandbox_path(path: str) -> str:
    """A caller's path as the sandbox sees it: relative paths are under /workspace."""
    return posixpath.normpath(posixpath.join(bwrap.WORKDIR, path))


@dataclass
class Session:
    id: str
    root: Path
    network: bool
    memory_mb: int
    cpus: float
    deadline: float
    cgroups: SessionCgroups
    running: set[asyncio.subprocess.Process] = field(default_factory=set)

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"


def _rmtree(path: Path) -> None:
    def retry_writable(function, failed, _exc):  # noqa: ANN001 - shutil's onexc signature
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), stat.S_IRWXU)
            os.chmod(failed, stat.S_IRWXU)
            function(failed)

    if path.exists():
        shutil.rmtree(path, onerror=retry_writable)


class StateDir:
    """``<root>/instances/<id>.lock`` (held while a service runs) and ``<root>/sessions/<sid>/owner``."""

    def __init__(self, root: Path, cgroup_root: Path) -> None:
        self.root = root
        self.cgroup_root = cgroup_root
        self.instances = root / "instances"
        self.sessions = root / "sessions"

    def prepare(self) -> None:
        for path in (self.root, self.instances, self.sessions):
            path.mkdir(parents=True, exist_ok=True)
            # Traversable by the sandbox uid (bwrap binds the session directories), listable by nobody.
            path.chmod(0o711)

    def lock_instance(self) -> tuple[str, int]:
        instance = uuid.uuid4().hex[:12]
        # Locked before it is visible under its name, so no reaper ever sees it unlocked while we live.
        pending = self.instances / f".{instance}.pending"
        fd = os.open(pending, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        pending.rename(self.instances / f"{instance}.lock")
        return instance, fd

    def _instance_alive(self, instance: str) -> bool:
        lock = self.instances / f"{instance}.lock"
        try:
            fd = os.open(lock, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def reap_stale(self) -> list[str]:
        """Remove sessions (and their cgroups) whose service is gone; return their ids."""
        reaped: list[str] = []
        if not self.sessions.is_dir():
            return reaped
        for session_dir in sorted(self.sessions.iterdir()):
            owner_file = session_dir / "owner"
            try:
                owner = owner_file.read_text().strip()
            except FileNotFoundError:
                # A session being created right now writes its owner first; an old one without is debris.
                with contextlib.suppress(FileNotFoundError):
                    if time.time() - session_dir.stat().st_mtime < STALE_GRACE_SECONDS:
                        continue
                owner = ""
            if owner and self._instance_alive(owner):
                continue
            SessionCgroups.existing(session_dir.name, self.cgroup_root).remove()
            _rmtree(session_dir)
            reaped.append(session_dir.name)
        for lock in self.instances.glob("*.lock"):
            if not self._instance_alive(lock.stem):
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()
                _rmtree(self.instances / lock.stem)
        return reaped


class BwrapProvider:
    """Sessions, execs and file operations over bubblewrap (see the module docstring for the contract)."""

    name = "bubblewrap"

    def __init__(self, settings: SandboxSettings, host: HostCapabilities) -> None:
        if host.tools is None:
            raise bwrap.BwrapUnavailable(host.bwrap_detail)
        if not host.seccomp_ok and not settings.allow_weak_isolation:
            raise seccomp.SeccompUnavailable(
                f"{host.seccomp_detail} — refusing to run sessions without seccomp "
                "(set SANDBOX_ALLOW_WEAK_ISOLATION=1 to accept that)"
            )
        self.settings = settings
        self.host = host
        self.tools = host.tools
        self.state = StateDir(settings.state_dir, settings.cgroup_root)
        self.sessions: dict[str, Session] = {}
        self._pending = 0
        self._slots = asyncio.Lock()
        self._exec_slots = asyncio.Semaphore(settings.max_concurrency)
        self._instance = ""
        self._lock_fd: int | None = None
        self._reaper: asyncio.Task[None] | None = None
        self._filters: dict[bool, Path] = {}
        self.started = False

    @property
    def report(self) -> IsolationReport:
        return self.host.report()

    @property
    def _instance_dir(self) -> Path:
        return self.state.instances / self._instance

    # lifecycle -----------------------------------------------------------------------------------

    async def startup(self) -> None:
        self.state.prepare()
        reaped = self.state.reap_stale()
        if reaped:
            log.warning("removed %d session(s) a stopped service left behind", len(reaped))
        self._instance, self._lock_fd = self.state.lock_instance()
        self._instance_dir.mkdir(mode=0o711)
        bwrap.write_identity_files(self._instance_dir / "etc")
        (self._instance_dir / "etc").chmod(0o755)
        if self.host.seccomp_ok:
            for allow_inet in (False, True):
                path = self._instance_dir / f"seccomp-{'net' if allow_inet else 'nonet'}.bpf"
                path.write_bytes(seccomp.build_filter(allow_inet=allow_inet))
                self._filters[allow_inet] = path
        await self._self_test()
        self._reaper = asyncio.create_task(self._reap_expired_forever(), name="dra-sandbox-reaper")
        self.started = True

    async def _self_test(self) -> None:
        """One exec in a real session under the state directory, so a setup problem stops the start."""
        session_id = await self.create(timeout_seconds=60, network=False, memory_mb=64, cpus=0.5)
        try:
            try:
                raw = await self._run(
                    self.sessions[session_id], ["/bin/sh", "-c", "echo ok > probe && cat probe"], timeout=30
                )
                detail = "" if raw.stdout.strip() == b"ok" else raw.stderr.decode(errors="replace").strip()
            except SandboxSetupFailed as exc:
                detail = str(exc)
            if detail:
                hint = ""
                if "Permission denied" in detail and self.host.host_uid is not None:
                    hint = (
                        f" — every directory above {self.state.root} must be searchable (o+x) by uid "
                        f"{self.host.host_uid}; set SANDBOX_STATE_DIR elsewhere"
                    )
                raise SandboxSetupFailed(f"a test command in a fresh session failed: {detail}{hint}")
        finally:
            await self.destroy(session_id)

    async def shutdown(self) -> None:
        self.started = False
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for session_id in list(self.sessions):
            await self.destroy(session_id)
        if self._instance:
            _rmtree(self._instance_dir)
        if self._lock_fd is not None:
            with contextlib.suppress(FileNotFoundError):
                (self.state.instances / f"{self._instance}.lock").unlink()
            os.close(self._lock_fd)
            self._lock_fd = None

    async def _reap_expired_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reap_interval_seconds)
            try:
                await self.reap_expired()
            except Exception:  # noqa: BLE001 - one failed sweep must not end reaping for good
                log.exception("sweeping expired sessions failed; retrying on the next sweep")

    async def reap_expired(self) -> list[str]:
        now = time.monotonic()
        expired = [sid for sid, session in self.sessions.items() if session.deadline <= now]
        for session_id in expired:
            log.info("session %s reached its timeout; removing it", session_id)
            with contextlib.suppress(SessionNotFound):
                await self.destroy(session_id)
        return expired

    # sessions ------------------------------------------------------------------------------------

    async def create(self, *, timeout_seconds: int, network: bool, memory_mb: int, cpus: float) -> str:
        settings = self.settings
        memory_mb = max(64, min(memory_mb, settings.max_memory_mb))
        cpus = max(0.1, min(cpus, settings.max_cpus))
        timeout_seconds = min(timeout_seconds, settings.max_session_seconds)
        async with self._slots:
            live = len(self.sessions) + self._pending
            if settings.max_sessions and live >= settings.max_sessions:
                raise SessionLimitReached(live, settings.max_sessions)
            self._pending += 1
        session_id = secrets.token_hex(8)
        try:
            root = self.state.sessions / session_id
            root.mkdir(mode=0o711)
            (root / "owner").write_text(self._instance)
            for sub in ("workspace", "tmp"):
                (root / sub).mkdir(mode=0o755)
                if self.host.host_uid is not None:
                    os.chown(root / sub, self.host.host_uid, self.host.host_uid)
            cgroups = self.host.controllers.create(
                session_id, memory_mb=memory_mb, pids_max=settings.pids_max, cpus=cpus
            )
            self.sessions[session_id] = Session(
                id=session_id,
                root=root,
                network=network,
                memory_mb=memory_mb,
                cpus=cpus,
                deadline=time.monotonic() + timeout_seconds,
                cgroups=cgroups,
            )
        except BaseException:
            with contextlib.suppress(Exception):
                _rmtree(self.state.sessions / session_id)
            raise
        finally:
            self._pending -= 1
        log.info(
            "created session %s (network=%s, memory=%sMiB, cpus=%s, timeout=%ss)",
            session_id,
            network,
            memory_mb,
            cpus,
            timeout_seconds,
        )
        return session_id

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None or session.deadline <= time.monotonic():
            raise SessionNotFound(session_id)
        return session

    async def destroy(self, session_id: str) -> None:
        session = self.sessions.pop(session_id, None)
        if session is None:
            raise SessionNotFound(session_id)
        for process in list(session.running):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        await asyncio.to_thread(session.cgroups.remove)
        await asyncio.to_thread(_rmtree, session.root)
        log.info("removed session %s", session_id)

    # execution -----------------------------------------------------------------------------------

    async def _run(
        self,
        session: Session,
        command: list[str],
        *,
        timeout: float,
        stdin: bytes | None = None,
        max_output: int | None = None,
    ) -> bwrap.RawResult:
        cgroups = session.cgroups
        rlimits = rlimit_args(
            max_file_bytes=self.settings.max_file_bytes,
            memory_mb=None if "memory" in cgroups.paths else session.memory_mb,
            nproc=None if "pids" in cgroups.paths else self.settings.pids_max,
        )
        filter_path = self._filters.get(session.network)
        fd = os.open(filter_path, os.O_RDONLY) if filter_path is not None else None
        spec = bwrap.SandboxSpec(
            workspace=session.workspace,
            tmp=session.tmp,
            etc_dir=self._instance_dir / "etc",
            network=session.network,
            host_uid=self.host.host_uid,
            cgroup_procs=cgroups.procs_files(),
            rlimits=rlimits,
            seccomp_fd=fd,
        )
        try:
            async with self._exec_slots:
                raw = await bwrap.run(
                    bwrap.sandbox_argv(self.tools, spec, command),
                    timeout=timeout,
                    stdin=stdin,
                    max_output=max_output or self.settings.max_output_bytes,
                    pass_fds=(fd,) if fd is not None else (),
                    started=session.running.add,
                )
        finally:
            if fd is not None:
                os.close(fd)
            session.running.difference_update({p for p in session.running if p.returncode is not None})
        if raw.exit_code in (1, 125) and raw.stderr.startswith((b"bwrap: ", b"sh: 1: cannot create /sys/")):
            raise SandboxSetupFailed(raw.stderr.decode(errors="replace").strip()[:500])
        return raw

    async def _exec_result(
        self, session: Session, command: list[str], timeout_seconds: int, stdin: bytes | None = None
    ) -> ExecResult:
        seconds = max(1, min(timeout_seconds, self.settings.max_exec_seconds))
        oom_before = session.cgroups.oom_kills()
        raw = await self._run(session, command, timeout=seconds, stdin=stdin)
        stdout = raw.stdout.decode("utf-8", errors="replace")
        stderr = raw.stderr.decode("utf-8", errors="replace")
        exit_code = raw.exit_code
        if raw.timed_out:
            exit_code = TIMEOUT_EXIT
            stderr += f"\nsandbox: the command timed out after {seconds}s and was killed"
        else:
            oom_after = session.cgroups.oom_kills()
            if oom_before is not None and oom_after is not None and oom_after > oom_before:
                stderr += (
                    f"\nsandbox: a process was killed for exceeding the session's memory limit "
                    f"({session.memory_mb} MiB); the session and its files are intact"
                )
        if session.id not in self.sessions:
            stderr += "\nsandbox: the session was deleted while the command ran"
        return ExecResult(
            stdout=stdout, stderr=stderr, exit_code=exit_code, truncated=raw.truncated, duration_ms=raw.duration_ms
        )

    async def exec(self, session_id: str, command: str, *, timeout_seconds: int, workdir: str | None) -> ExecResult:
        session = self.get(session_id)
        directory = sandbox_path(workdir) if workdir else bwrap.WORKDIR
        return await self._exec_result(session, ["/bin/sh", "-c", EXEC_SCRIPT, directory, command], timeout_seconds)

    async def run_python(self, session_id: str, code: str, *, timeout_seconds: int) -> ExecResult:
        session = self.get(session_id)
        # A per-call file outside /workspace: concurrent runs in one session must not share a script.
        script = f"/tmp/_run_python_{uuid.uuid4().hex}.py"
        return await self._exec_result(
            session,
            ["/bin/sh", "-c", RUN_SCRIPT, "sh", script, self.settings.python],
            timeout_seconds,
            stdin=code.encode("utf-8"),
        )

    # files ---------------------------------------------------------------------------------------

    async def write_file(self, session_id: str, path: str, data: bytes) -> None:
        session = self.get(session_id)
        target = sandbox_path(path)
        raw = await self._run(
            session,
            ["/bin/sh", "-c", WRITE_SCRIPT, "sh", target],
            timeout=FILE_OP_TIMEOUT,
            stdin=data,
            max_output=64 * 1024,
        )
        if raw.exit_code != 0:
            detail = raw.stderr.decode(errors="replace").strip() or f"exit {raw.exit_code}"
            raise FileOperationFailed(_classify(detail), f"cannot write {target}: {detail}")

    async def read_file(self, session_id: str, path: str, *, max_bytes: int) -> tuple[str, str, bool]:
        session = self.get(session_id)
        target = sandbox_path(path)
        limit = max(1, min(max_bytes, self.settings.max_output_bytes))
        raw = await self._run(
            session, ["head", "-c", str(limit + 1), "--", target], timeout=FILE_OP_TIMEOUT, max_output=limit + 1
        )
        if raw.exit_code != 0:
            detail = raw.stderr.decode(errors="replace").strip() or f"exit {raw.exit_code}"
            raise FileOperationFailed(_classify(detail), f"cannot read {target}: {detail}")
        data = raw.stdout[:limit]
        truncated = len(raw.stdout) > limit
        try:
            return data.decode("utf-8"), "utf-8", truncated
        except UnicodeDecodeError:
            return base64.b64encode(data).decode("ascii"), "base64", truncated

    async def list_files(self, session_id: str, path: str) -> tuple[str, list[FileEntry], bool]:
        session = self.get(session_id)
        target = sandbox_path(path)
        raw = await self._run(
            session, ["/bin/sh", "-c", LIST_SCRIPT, "sh", target, str(LIST_MAX_ENTRIES + 1)], timeout=FILE_OP_TIMEOUT
        )
        if raw.exit_code != 0:
            detail = raw.stderr.decode(errors="replace").strip() or f"exit {raw.exit_code}"
            code = "invalid_path" if "not a directory" in detail.lower() else _classify(detail)
            raise FileOperationFailed(code, f"cannot list {target}: {detail}")
        entries = []
        for record in raw.stdout.split(b"\0"):
            if not record:
                continue
            kind, size, name = record.decode("utf-8", errors="replace").split(" ", 2)
            entries.append(
                FileEntry(
                    name=name,
                    path=posixpath.join(target, name),
                    is_dir=kind == "d",
                    size=int(size) if kind == "f" else 0,
                )
            )
        entries.sort(key=lambda entry: entry.name)
        truncated = len(entries) > LIST_MAX_ENTRIES
        return target, entries[:LIST_MAX_ENTRIES], truncated
