"""``python -m dra_sandbox [serve|probe|reap]``: run the service, report the host's isolation, or clean up.

- ``serve`` (the default) probes the host, refuses to start (exit 2, with the reason) when it cannot
  sandbox anything, or has no seccomp and SANDBOX_ALLOW_WEAK_ISOLATION is unset, then serves the API
  on SANDBOX_HOST:SANDBOX_PORT until SIGINT/SIGTERM, removing its sessions on the way out.
  ``--port 0`` takes a free port; ``--ready-file`` receives ``{"url", "pid"}`` once it accepts requests.
- ``probe`` prints the isolation verdict and what is missing (``--json``: the typed report); exit 0
  unless there is no sandbox at all.
- ``reap`` removes the sessions and cgroups that stopped services left in SANDBOX_STATE_DIR.
- ``check URL`` says whether a sandbox answers at URL and accepts LLM_SANDBOX_TOKEN (exit 0), rejects it
  (exit 3), or is not running (exit 4).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import uvicorn

from . import isolation
from .api import create_app
from .bwrap import BwrapUnavailable
from .check import check_service
from .provider import BwrapProvider, StateDir
from .seccomp import SeccompUnavailable
from .settings import SandboxSettings, SettingsError, load_settings

log = logging.getLogger("dra_sandbox")
GRACEFUL_SHUTDOWN_SECONDS = 3


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted connections only when the socket says TCP;
    # without it every response waits ~40 ms for a delayed ACK between its header and body writes.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def _url(host: str, port: int) -> str:
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host, f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}"


class _Server(uvicorn.Server):
    """uvicorn's server, announcing itself (log line, ready file) once it accepts requests."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[], None]) -> None:
        super().__init__(config)
        self.announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.announce()


async def _serve(settings: SandboxSettings, provider: BwrapProvider, ready_file: Path | None) -> int:
    try:
        sock = _bind(settings.host, settings.port)
    except OSError as exc:
        print(f"dra-sandbox: cannot listen on {settings.host}:{settings.port}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        await provider.startup()
    except Exception as exc:  # noqa: BLE001 - any startup failure is reported and ends the process
        print(f"dra-sandbox: refusing to start: {exc}", file=sys.stderr)
        await provider.shutdown()
        return 2
    url = _url(settings.host, sock.getsockname()[1])

    def announce() -> None:
        log.info("listening on %s (auth %s)", url, "on" if settings.token.get_secret_value() else "OFF")
        if ready_file is not None:
            tmp = ready_file.with_suffix(ready_file.suffix + ".tmp")
            tmp.write_text(json.dumps({"url": url, "pid": os.getpid()}))
            tmp.replace(ready_file)

    # A running exec may last SANDBOX_MAX_EXEC_SECONDS; on shutdown it gets a few seconds, then the
    # lifespan's shutdown kills every session's processes and removes the sessions.
    config = uvicorn.Config(
        create_app(settings, provider),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    try:
        await _Server(config, announce).serve(sockets=[sock])
    finally:
        sock.close()
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    settings = load_settings(host=args.host, port=args.port, state_dir=args.state_dir)
    host = isolation.detect(settings)
    report = host.report()
    for line in report.lines():
        log.info("%s", line)
    try:
        provider = BwrapProvider(settings, host)
    except (BwrapUnavailable, SeccompUnavailable) as exc:
        print(f"dra-sandbox: refusing to start: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(_serve(settings, provider, args.ready_file))


def cmd_probe(args: argparse.Namespace) -> int:
    report = isolation.probe(load_settings())
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print("\n".join(report.lines()))
    return 1 if report.level == "none" else 0


def cmd_reap(_args: argparse.Namespace) -> int:
    settings = load_settings()
    reaped = StateDir(settings.state_dir, settings.cgroup_root).reap_stale()
    print(f"removed {len(reaped)} stale sandbox session(s) from {settings.state_dir}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    result = check_service(args.url, os.environ.get("LLM_SANDBOX_TOKEN", "").strip())
    print(result.detail)
    return {"ready": 0, "token_rejected": 3}.get(result.state, 4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dra_sandbox", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    serve = commands.add_parser("serve", help="run the sandbox service (the default)")
    serve.add_argument("--host", help="listen address (SANDBOX_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (SANDBOX_PORT, default 8900; 0 picks a free one)")
    serve.add_argument("--state-dir", type=Path, help="session directories (SANDBOX_STATE_DIR)")
    serve.add_argument("--ready-file", type=Path, help="write {url, pid} here once serving")
    probe = commands.add_parser("probe", help="print the isolation this host can give a session")
    probe.add_argument("--json", action="store_true", help="the typed report as JSON")
    commands.add_parser("reap", help="remove sessions that stopped services left behind")
    check = commands.add_parser("check", help="is a sandbox up at URL, and does it accept LLM_SANDBOX_TOKEN?")
    check.add_argument("url")
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in commands.choices and argv[0] not in ("-h", "--help"):
        argv = ["serve", *argv]
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        return {"serve": cmd_serve, "probe": cmd_probe, "reap": cmd_reap, "check": cmd_check}[args.command](args)
    except SettingsError as exc:
        print(f"dra-sandbox: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
