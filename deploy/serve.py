"""``./run.sh serve``: the agent on Aegra, with Postgres and Redis, as one or more supervised instances.

Run with the Aegra environment's Python from the project root (``deploy/.venv/bin/python -m deploy.serve``;
``./run.sh serve`` does). Contract:
- ``DATABASE_URL`` and ``REDIS_URL`` name the deployment's Postgres and Redis. Either one unset gets a server
  started here whose data lives under ``<DRA_DATA_DIR>/serve/`` (``data/serve`` in the project): created on
  the first start, reused by every later one, so threads, checkpoints, the store and queued runs outlive a
  restart (Redis keeps an append-only file). ``--ephemeral`` (or ``DRA_SERVE_EPHEMERAL=1``) starts throwaway
  servers instead, deleted on exit. serve says on start which data it uses; one serve at a time per data
  directory;
- ``serve delete-data`` deletes that data after asking for confirmation (``--yes`` skips the question);
  it refuses while a serve uses it;
- migrations run once (``aegra db upgrade``, then the checkpointer and store tables), then
  ``DRA_INSTANCES`` instances (default 1) start on ``DRA_HOST`` at ``DRA_PORT``, ``DRA_PORT+1``, ...
  (default 2024); a port already taken stops serve before anything starts. ``WORKER_COUNT`` and
  ``N_JOBS_PER_WORKER`` (Aegra's own settings, from the environment or ``.env``) size each instance;
  ``DRA_MAX_RUNS_PER_USER`` defaults to 3 here;
- every instance takes runs off the one Redis queue and keeps threads, checkpoints and the store in the
  one Postgres, so a load balancer may send any request to any instance;
- an instance that dies is restarted (``deploy/supervisor.py``: backoff, at most
  ``DRA_SERVE_MAX_RESTARTS`` restarts per minute, each logged with its exit status) while the others serve
  on; its runs resume on a live instance once their lease expires;
- SIGTERM or Ctrl-C drains: every instance stops taking runs, its runs in flight get ``DRA_SERVE_GRACE_S``
  (30) seconds to finish and the rest go back to the queue (for the next start), then the servers started
  here stop, keeping their data;
- the deployment is shared (``DRA_SHARED_DEPLOYMENT`` defaults to true here): a run's own MCP servers and
  ``sandbox_url`` are refused unless their host is on ``DRA_MCP_ALLOWED_HOSTS`` / ``DRA_SANDBOX_ALLOWED_HOSTS``;
- each instance logs to ``.aegra/<port>.log`` under the project.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from deploy.services import (
    PROJECT_ROOT,
    AegraInstance,
    DataLock,
    PostgresServer,
    RedisServer,
    aegra_environment,
    migrate,
)
from deploy.supervisor import Supervisor

LOG_DIR = PROJECT_ROOT / ".aegra"
DEFAULT_RUNS_PER_USER = "3"
# Open streams get this long after SIGTERM before Aegra's workers drain (its lifespan ends after them).
CONNECTIONS_GRACE_S = 3


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def fail(message: str) -> int:
    print(f"ERROR: {message}", file=sys.stderr, flush=True)
    return 1


def port_taken(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def local_url(host: str, port: int) -> str:
    """The address a client on this machine reaches ``host:port`` at (a wildcard host through loopback)."""
    reachable = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://[{reachable}]:{port}" if ":" in reachable else f"http://{reachable}:{port}"


def _number(environ: dict[str, str], name: str, default: str, *, least: int = 1) -> int:
    value = environ.get(name) or default
    if not value.isdigit() or int(value) < least:
        raise ValueError(f"{name} must be a whole number of {least} or more, got {value!r}")
    return int(value)


def data_root(environ: dict[str, str]) -> Path:
    """Where serve keeps the Postgres and Redis it starts: ``<DRA_DATA_DIR>/serve`` (relative to the project)."""
    base = Path(environ.get("DRA_DATA_DIR") or "data").expanduser()
    return (base if base.is_absolute() else PROJECT_ROOT / base) / "serve"


def redacted(url: str) -> str:
    """``url`` without its password, for the start message."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def delete_data(environ: dict[str, str], *, yes: bool, answer: str | None = None) -> int:
    root = data_root(environ)
    if not root.exists():
        say(f"No serve data in {root}: nothing to delete")
        return 0
    try:
        lock = DataLock(root).__enter__()
    except RuntimeError as exc:
        return fail(f"{exc}; stop it first")
    try:
        if not yes:
            print(f"This deletes every thread, checkpoint, knowledge-base entry and task in {root}.", flush=True)
            reply = answer if answer is not None else input("Type 'delete' to confirm: ")
            if reply.strip() != "delete":
                return fail("nothing deleted")
        shutil.rmtree(root)
    finally:
        lock.__exit__()
    say(f"Deleted the serve data in {root}")
    return 0


def main(environ: dict[str, str] | None = None, argv: list[str] | None = None) -> int:
    environ = dict(os.environ if environ is None else environ)
    parser = argparse.ArgumentParser(prog="./run.sh serve", description="The agent on Aegra for a team.")
    parser.add_argument("action", nargs="?", choices=["delete-data"], help="delete the data serve keeps")
    parser.add_argument("--ephemeral", action="store_true", help="throwaway Postgres and Redis, deleted on exit")
    parser.add_argument("--yes", action="store_true", help="delete-data without asking")
    args = parser.parse_args([] if argv is None else argv)
    if args.action == "delete-data":
        return delete_data(environ, yes=args.yes)
    ephemeral = args.ephemeral or environ.get("DRA_SERVE_EPHEMERAL", "").lower() in ("1", "true", "yes")
    try:
        instances = _number(environ, "DRA_INSTANCES", "1")
        first_port = _number(environ, "DRA_PORT", environ.get("PORT") or "2024")
        max_restarts = _number(environ, "DRA_SERVE_MAX_RESTARTS", "5", least=0)
        grace_s = _number(environ, "DRA_SERVE_GRACE_S", "30", least=0)
    except ValueError as exc:
        return fail(str(exc))
    host = environ.get("DRA_HOST") or "127.0.0.1"
    ports = [first_port + n for n in range(instances)]
    if busy := [port for port in ports if port_taken(host, port)]:
        return fail(f"port(s) {', '.join(map(str, busy))} on {host} already in use; set DRA_PORT to a free range")

    stop = {"signal": None}

    def on_signal(signum: int, _frame: object) -> None:
        stop["signal"] = signum

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)

    with ExitStack() as stack:
        database_url, redis_url = environ.get("DATABASE_URL", ""), environ.get("REDIS_URL", "")
        root = data_root(environ)
        try:
            if not ephemeral and not (database_url and redis_url):
                stack.enter_context(DataLock(root))
            if database_url:
                say(f"Data: Postgres at {redacted(database_url)} (DATABASE_URL)")
            else:
                postgres = stack.enter_context(PostgresServer(None if ephemeral else root / "postgres"))
                database_url = postgres.url
                if ephemeral:
                    say(f"Data: a throwaway Postgres on port {postgres.port}, deleted on exit (--ephemeral)")
                else:
                    how = "created now" if postgres.created else "reused"
                    say(f"Data: the Postgres cluster in {postgres.workdir} ({how}), on port {postgres.port}")
            if redis_url:
                say(f"Data: Redis at {redacted(redis_url)} (REDIS_URL)")
            else:
                redis = stack.enter_context(RedisServer(None if ephemeral else root / "redis"))
                redis_url = redis.url
                if ephemeral:
                    say(f"Data: a throwaway Redis on port {redis.port}, deleted on exit (--ephemeral)")
                else:
                    say(f"Data: Redis with its append-only file in {redis.workdir}, on port {redis.port}")
        except RuntimeError as exc:
            return fail(f"{exc}. Set DATABASE_URL and REDIS_URL to servers of your own, or install the packages.")
        if not ephemeral and not (environ.get("DATABASE_URL") and environ.get("REDIS_URL")):
            say("This data is kept across restarts; ./run.sh serve delete-data deletes it")
        env = aegra_environment(
            database_url,
            redis_url,
            DRA_MAX_RUNS_PER_USER=environ.get("DRA_MAX_RUNS_PER_USER") or DEFAULT_RUNS_PER_USER,
            WORKER_DRAIN_TIMEOUT=str(max(0, grace_s - CONNECTIONS_GRACE_S - 2)),
            # A team server: no user may make it reach internal services through a run's own URLs.
            DRA_SHARED_DEPLOYMENT=environ.get("DRA_SHARED_DEPLOYMENT") or "true",
            # Chart images in the answer a generic UI renders are links to this server (behind a proxy: set it).
            DRA_PUBLIC_URL=environ.get("DRA_PUBLIC_URL") or local_url(host, first_port),
        )
        say("Running Aegra's migrations (aegra db upgrade) and creating the checkpointer and store tables")
        try:
            migrate(env)
        except RuntimeError as exc:
            return fail(str(exc))
        LOG_DIR.mkdir(exist_ok=True)

        def start(port: int) -> AegraInstance:
            return AegraInstance(
                env, host=host, port=port, log_path=LOG_DIR / f"{port}.log", connections_grace_s=CONNECTIONS_GRACE_S
            )

        say(f"Starting {instances} Aegra instance(s); logs in {LOG_DIR}/")
        supervisor = Supervisor(start, ports, log=say, max_restarts_per_minute=max_restarts)
        stack.callback(supervisor.drain, float(grace_s))
        try:
            for server in supervisor.instances:
                server.wait_ready(timeout=float(environ.get("DRA_SERVE_START_TIMEOUT") or 180))
        except RuntimeError as exc:
            return fail(str(exc))
        for server in supervisor.instances:
            say(f"Serving deep_research_agent at {server.url} (pid {server.pid})")
        say(
            f"{env.get('WORKER_COUNT', '3')} worker(s) x {env.get('N_JOBS_PER_WORKER', '10')} jobs per instance, "
            f"at most {env['DRA_MAX_RUNS_PER_USER']} runs per user; an instance that dies is restarted "
            f"(at most {max_restarts} times a minute). Ctrl-C or SIGTERM drains and stops."
        )
        while stop["signal"] is None:
            supervisor.tick()
            if supervisor.all_given_up:
                return fail("every instance stays down after too many restarts; see their logs in " + str(LOG_DIR))
            time.sleep(0.5)
        say(
            f"Draining: the instances take no new runs; runs in flight get {grace_s} s to finish, the rest are "
            "queued for the next start"
        )
    say("Stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main(argv=sys.argv[1:]))
