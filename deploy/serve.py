"""``./run.sh serve``: the agent on Aegra, with Postgres and Redis, as one or more instances.

Run with the Aegra environment's Python from the project root (``deploy/.venv/bin/python -m deploy.serve``;
``./run.sh serve`` does). Contract:
- ``DATABASE_URL`` and ``REDIS_URL`` name the deployment's Postgres and Redis; either one unset gets a
  throwaway server started here (``deploy/services.py``) and deleted on exit, and serve says so;
- migrations run once (``aegra db upgrade``, then the checkpointer and store tables), then
  ``DRA_INSTANCES`` instances (default 1) start on ``DRA_HOST`` at ``DRA_PORT``, ``DRA_PORT+1``, ...
  (default 2024); a port already taken stops serve before anything starts. ``WORKER_COUNT`` and ``N_JOBS_PER_WORKER`` (Aegra's own settings, from the
  environment or ``.env``) size each instance; ``DRA_MAX_RUNS_PER_USER`` defaults to 3 here;
- every instance takes runs off the one Redis queue and keeps threads, checkpoints and the store in the
  one Postgres, so a load balancer may send any request to any instance;
- each instance logs to ``.aegra/<port>.log`` under the project; serve stops everything it started on
  Ctrl-C or SIGTERM, and exits non-zero, stopping the rest, when an instance dies.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from contextlib import ExitStack

from deploy.services import PROJECT_ROOT, AegraInstance, PostgresServer, RedisServer, aegra_environment, migrate

LOG_DIR = PROJECT_ROOT / ".aegra"
DEFAULT_RUNS_PER_USER = "3"


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


def _number(environ: dict[str, str], name: str, default: str) -> int:
    value = environ.get(name) or default
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{name} must be a whole number of 1 or more, got {value!r}")
    return int(value)


def main(environ: dict[str, str] | None = None) -> int:
    environ = dict(os.environ if environ is None else environ)
    try:
        instances = _number(environ, "DRA_INSTANCES", "1")
        first_port = _number(environ, "DRA_PORT", environ.get("PORT") or "2024")
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
        try:
            if not database_url:
                postgres = stack.enter_context(PostgresServer())
                database_url = postgres.url
                say(f"DATABASE_URL unset: started a throwaway Postgres on port {postgres.port} (deleted on exit)")
            if not redis_url:
                redis = stack.enter_context(RedisServer())
                redis_url = redis.url
                say(f"REDIS_URL unset: started a throwaway Redis on port {redis.port} (deleted on exit)")
        except RuntimeError as exc:
            return fail(f"{exc}. Set DATABASE_URL and REDIS_URL to servers of your own, or install the packages.")
        env = aegra_environment(
            database_url,
            redis_url,
            DRA_MAX_RUNS_PER_USER=environ.get("DRA_MAX_RUNS_PER_USER") or DEFAULT_RUNS_PER_USER,
        )
        say("Running Aegra's migrations (aegra db upgrade) and creating the checkpointer and store tables")
        try:
            migrate(env)
        except RuntimeError as exc:
            return fail(str(exc))
        LOG_DIR.mkdir(exist_ok=True)
        servers = [AegraInstance(env, host=host, port=port, log_path=LOG_DIR / f"{port}.log") for port in ports]
        for server in servers:
            stack.callback(server.stop)
            server.launch()
        say(f"Starting {instances} Aegra instance(s); logs in {LOG_DIR}/")
        try:
            for server in servers:
                server.wait_ready(timeout=float(environ.get("DRA_SERVE_START_TIMEOUT") or 180))
        except RuntimeError as exc:
            return fail(str(exc))
        for server in servers:
            say(f"Serving deep_research_agent at {server.url} (pid {server.pid})")
        say(
            f"{env.get('WORKER_COUNT', '3')} worker(s) x {env.get('N_JOBS_PER_WORKER', '10')} jobs per instance, "
            f"at most {env['DRA_MAX_RUNS_PER_USER']} runs per user. Ctrl-C stops everything."
        )
        while stop["signal"] is None:
            if dead := [server for server in servers if not server.alive()]:
                tail = "\n".join(dead[0].log().splitlines()[-40:])
                return fail(
                    f"the instance on port {dead[0].port} exited; the others are stopped. Its log ends:\n{tail}"
                )
            time.sleep(0.5)
        say("Stopping")
    return 0


if __name__ == "__main__":
    sys.exit(main())
