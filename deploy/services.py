"""The processes of a deployment on Aegra: a throwaway Postgres and Redis, migrations, Aegra instances.

Used by ``./run.sh serve`` (``deploy/serve.py``), the end-to-end tests and the benchmarks, so all three
start the stack the same way. Standard library only: it runs under the project's Python 3.11 (tests,
benches) and under the Aegra environment's 3.12 (``serve``).

Contract:
- ``PostgresServer`` runs Debian's ``postgresql`` from its own ``initdb`` on a free loopback port; it never
  touches a system-wide cluster. Run as root, it runs as the ``postgres`` user (``initdb`` refuses root).
  Without ``data_dir`` its cluster is in a temporary directory thrown away on ``stop`` (so it runs without
  fsync); with ``data_dir`` the cluster lives there, durable: created on the first start (``created`` says
  so), reused by every later one, a server left running by a killed serve stopped first, and ``stop``
  shuts it down cleanly and keeps it;
- ``RedisServer`` runs Debian's ``redis-server`` on a free loopback port: without ``data_dir`` with
  persistence off, with ``data_dir`` with its append-only file there, so the queued runs survive a restart;
- ``DataLock`` holds a data directory for one serve at a time (an advisory lock on ``serve.lock``);
- ``AegraInstance`` is one ``uvicorn aegra_api.main:app`` process of the Aegra environment
  (``deploy/.venv``) serving ``deploy/aegra.json``, started in a new session so ``kill`` can SIGKILL it
  as a crash would; it is up once ``/health`` answers 200;
- ``migrate`` runs Aegra's migrations once (``aegra db upgrade``), so instances start with
  ``RUN_MIGRATIONS_ON_STARTUP=false`` and never race on the schema;
- ``missing()`` names what is not installed (an empty list when everything is), so tests can skip with
  a reason and ``serve`` can say what to install.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

DEPLOY_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = DEPLOY_DIR.parent
AEGRA_CONFIG = DEPLOY_DIR / "aegra.json"
AEGRA_VENV = DEPLOY_DIR / ".venv"
AEGRA_BIN = AEGRA_VENV / "bin"
POSTGRES_ROOT = Path("/usr/lib/postgresql")
DATABASE = "aegra"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bin() -> Path | None:
    """The newest Debian PostgreSQL's bin directory, if one is installed."""
    versions = sorted(
        (p for p in POSTGRES_ROOT.glob("*/bin") if (p / "initdb").is_file()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    return versions[-1] if versions else None


def missing() -> list[str]:
    """What the stack needs and this machine lacks, one phrase each."""
    gaps = []
    if postgres_bin() is None:
        gaps.append("Debian's postgresql (apt-get install postgresql)")
    if shutil.which("redis-server") is None:
        gaps.append("Debian's redis-server (apt-get install redis-server)")
    if not (AEGRA_BIN / "aegra").is_file():
        gaps.append("the Aegra environment deploy/.venv (./run.sh serve or ./run.sh test creates it)")
    return gaps


def _as_postgres_user() -> list[str]:
    """The command prefix that runs PostgreSQL's tools as a non-root user."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("running as root, but there is no postgres user to run PostgreSQL as") from None
    return ["runuser", "-u", "postgres", "--"]


class DataLock:
    """One serve per data directory: a second one would start a second server on the same files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._file: IO[str] | None = None

    def __enter__(self) -> DataLock:
        self.root.mkdir(parents=True, exist_ok=True)
        self._file = (self.root / "serve.lock").open("w")
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.close()
            raise RuntimeError(f"another ./run.sh serve is using the data in {self.root}") from None
        return self

    def __exit__(self, *_: object) -> None:
        if self._file is not None:
            self._file.close()


class PostgresServer:
    """A PostgreSQL cluster on a free loopback port, throwaway or kept in ``data_dir``; ``url`` is its
    ``aegra`` database."""

    def __init__(self, data_dir: Path | None = None) -> None:
        self.bin = postgres_bin()
        if self.bin is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self.persistent = data_dir is not None
        self.workdir = data_dir if data_dir is not None else Path(tempfile.mkdtemp(prefix="dra-pg-"))
        self.data = self.workdir / "data"
        self.log = self.workdir / "postgres.log"
        self.port = 0
        self.created = False
        self._prefix = _as_postgres_user()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *command: str) -> None:
        result = subprocess.run([*self._prefix, *command], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            hint = ""
            if self._prefix and "Permission denied" in result.stderr:
                hint = f" (PostgreSQL runs as the postgres user, which must be able to reach {self.workdir})"
            raise RuntimeError(
                f"{Path(command[0]).name} failed: {result.stderr.strip() or result.stdout.strip()}{hint}"
            )

    def _pg_ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [*self._prefix, str(self.bin / "pg_ctl"), "-D", str(self.data), *args]  # type: ignore[operator]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    def start(self) -> PostgresServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self._prefix:
            shutil.chown(self.workdir, "postgres", "postgres")
        self.workdir.chmod(0o700)
        self.created = not (self.data / "PG_VERSION").is_file()
        if self.created:
            shutil.rmtree(self.data, ignore_errors=True)  # an initdb cut off half-way
            no_sync = [] if self.persistent else ["--no-sync"]
            self._run(
                str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", *no_sync
            )
        elif self._pg_ctl("status").returncode == 0:
            # Left running by a serve that was killed; the caller holds the data lock, so it is nobody's now.
            self._pg_ctl("-m", "fast", "-w", "-t", "60", "stop")
        self.port = free_port()
        flags = [
            f"-p {self.port}",
            f"-k {self.workdir}" if not self.persistent else "-c unix_socket_directories=''",
            "-c listen_addresses=127.0.0.1",
            "-c max_connections=300",
        ]
        if not self.persistent:
            # Thrown away on stop: durability buys nothing here.
            flags.append("-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            " ".join(flags),
            "-w",
            "-t",
            "60",
            "start",
        )
        if self.created:
            self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", DATABASE)
        return self

    @property
    def pid(self) -> int:
        """The postmaster's pid (the first line of its ``postmaster.pid``); every backend is its child."""
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            raise RuntimeError("PostgreSQL is not running") from None

    def stop(self) -> None:
        if self.data.exists() and self.port:
            self._pg_ctl("-m", "fast" if self.persistent else "immediate", "-w", "-t", "60", "stop")
        if not self.persistent:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


class RedisServer:
    """A Redis on a free loopback port, throwaway (persistence off) or with its append-only file in
    ``data_dir``; ``url`` is its database 0."""

    def __init__(self, data_dir: Path | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.binary = binary
        self.persistent = data_dir is not None
        self.workdir = data_dir if data_dir is not None else Path(tempfile.mkdtemp(prefix="dra-redis-"))
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def _stop_stale(self) -> None:
        """Stop a Redis a killed serve left running on these files (the caller holds the data lock)."""
        pidfile = self.workdir / "redis.pid"
        try:
            pid = int(pidfile.read_text().strip())
            if "redis" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + 20
                while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
        except (OSError, ValueError):
            pass

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 20.0) -> RedisServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.persistent:
            self._stop_stale()
        self.port = free_port()
        command = [
            self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
            "--save", "", "--appendonly", "yes" if self.persistent else "no", "--daemonize", "no",
            "--pidfile", str(self.workdir / "redis.pid"), "--logfile", str(self.workdir / "redis.log"),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"redis-server exited early: {(self.workdir / 'redis.log').read_text(errors='replace')}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer within {timeout}s")

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("not started")
        return self.process.pid

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if not self.persistent:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def aegra_environment(database_url: str, redis_url: str, **overrides: str) -> dict[str, str]:
    """The environment of every Aegra process of one deployment: the shared Postgres and Redis, the
    Redis job queue (so any instance runs any run), and migrations left to ``migrate``."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "REDIS_BROKER_ENABLED": "true",
        "RUN_MIGRATIONS_ON_STARTUP": "false",
        "AEGRA_CONFIG": str(AEGRA_CONFIG),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        **overrides,
    }


# Aegra's own start-up path for the LangGraph checkpointer and store tables and the graphs' default
# assistants, run once here: every instance runs it again at start, and two first runs at once race on the
# same migration row or assistant row (``assistant_pkey``) and one instance dies.
_SETUP_PERSISTENCE = (
    "import asyncio\n"
    "from aegra_api.core.database import db_manager\n"
    "from aegra_api.services.langgraph_service import get_langgraph_service\n"
    "async def main():\n"
    "    await db_manager.initialize()\n"
    "    await get_langgraph_service().initialize()\n"
    "    await db_manager.close()\n"
    "asyncio.run(main())\n"
)


def migrate(env: dict[str, str], timeout: float = 180.0) -> None:
    """Bring the database schema to Aegra's head and create the checkpointer's and store's tables, once for
    the whole deployment, before any instance starts."""
    steps = (
        ("aegra db upgrade", [str(AEGRA_BIN / "aegra"), "db", "upgrade"]),
        ("the checkpointer, store and assistants setup", [str(AEGRA_BIN / "python"), "-c", _SETUP_PERSISTENCE]),
    )
    for what, command in steps:
        result = subprocess.run(command, cwd=DEPLOY_DIR, env=env, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"{what} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")


class AegraInstance:
    """One Aegra API + worker process on ``host:port``, logging to ``log_path``."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        log_path: Path | None = None,
        connections_grace_s: float | None = None,
    ) -> None:
        self.env = env
        self.host = host
        self.port = port
        # On SIGTERM uvicorn waits for open streams before Aegra's workers drain; None waits for every one.
        self.connections_grace_s = connections_grace_s
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = log_path or Path(tempfile.mkstemp(prefix="dra-aegra-", suffix=".log")[1])

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    def launch(self) -> AegraInstance:
        """Start the process without waiting for it (``wait_ready`` waits), so instances boot in parallel."""
        self.port = self.port or free_port()
        command = [
            str(AEGRA_BIN / "python"),
            "-m",
            "uvicorn",
            "aegra_api.main:app",
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        if self.connections_grace_s is not None:
            command += ["--timeout-graceful-shutdown", str(int(self.connections_grace_s))]
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            command, cwd=DEPLOY_DIR, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        return self

    def wait_ready(self, timeout: float = 120.0) -> AegraInstance:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"Aegra on port {self.port} exited during startup:\n{self.log()[-6000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"Aegra on port {self.port} did not answer /health within {timeout}s:\n{self.log()[-6000:]}")

    def start(self, timeout: float = 120.0) -> AegraInstance:
        return self.launch().wait_ready(timeout)

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("not started")
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def ready(self) -> bool:
        """True when ``/health`` answers 200 now."""
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as answer:
                return answer.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def terminate(self) -> None:
        """SIGTERM without waiting: Aegra stops taking runs and drains (``WORKER_DRAIN_TIMEOUT``)."""
        if self.alive():
            os.killpg(self.pid, signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL, as a crashed machine would: no shutdown, no lease released."""
        if self.alive():
            os.killpg(self.pid, signal.SIGKILL)
            self.process.wait(timeout=10)  # type: ignore[union-attr]

    def stop(self, timeout: float = 30.0) -> None:
        if self.alive():
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)  # type: ignore[union-attr]
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.process.wait(timeout=10)  # type: ignore[union-attr]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
