"""The real sandbox service (``python -m dra_sandbox``) in a subprocess on a free loopback port.

``SandboxService`` starts it with a random bearer token and a private state directory, waits until
``/healthz`` answers, and exposes ``url``, ``token``, ``headers``, ``client()``, ``session_ids()`` and
``delete_session()``; ``stop()`` ends it with SIGTERM, so
it removes its sessions as it would in production. The session-wide pytest fixture ``sandbox_service``
(tests/conftest.py) yields one; tests that need a service of their own (a session cap, another token)
construct one with ``extra_env``.

bubblewrap comes from ``./run.sh test`` (Debian's package). Without it ``require_bubblewrap()`` skips the
test with the reason, except under CI, where a missing install step must fail.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Self

import httpx
import pytest


def require_bubblewrap() -> None:
    if shutil.which("bwrap") is not None:
        return
    message = "bubblewrap is not installed (./run.sh test installs Debian's bubblewrap)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


class SandboxService:
    """One ``python -m dra_sandbox`` process; ``url`` and ``token`` are what LLM_SANDBOX_URL/TOKEN take."""

    def __init__(self, *, token: str | None = None, extra_env: dict[str, str] | None = None) -> None:
        self.token = secrets.token_hex(16) if token is None else token
        self.extra_env = extra_env or {}
        self.scratch = Path(tempfile.mkdtemp(prefix="dra-sandbox-test-"))
        self.scratch.chmod(0o711)  # the sandbox uid must reach the session directories below it
        self.state_dir = self.scratch / "state"
        self.url = ""
        self.process: subprocess.Popen[bytes] | None = None
        self._log = self.scratch / "service.log"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SANDBOX_", "LLM_SANDBOX_"))}
        env.update({"LLM_SANDBOX_TOKEN": self.token, "SANDBOX_STATE_DIR": str(self.state_dir), **self.extra_env})
        return env

    def start(self, timeout: float = 30.0) -> Self:
        require_bubblewrap()
        ready = self.scratch / "ready.json"
        command = [
            sys.executable,
            "-m",
            "dra_sandbox",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--ready-file",
            str(ready),
        ]
        with self._log.open("wb") as log:
            self.process = subprocess.Popen(
                command,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not ready.exists():
            if self.process.poll() is not None:
                raise RuntimeError(f"the sandbox service exited with {self.process.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the sandbox service did not start within {timeout}s:\n{self.log()}")
            time.sleep(0.05)
        self.url = json.loads(ready.read_text())["url"]
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the sandbox service did not answer /healthz:\n{self.log()}")
            time.sleep(0.05)

    def client(self, **kwargs: object) -> httpx.Client:
        """An HTTP client for the service, sending the token."""
        return httpx.Client(base_url=self.url, headers=self.headers, timeout=60, **kwargs)  # type: ignore[arg-type]

    def session_ids(self) -> list[str]:
        """The sessions this service holds now (its state directory), e.g. to kill one mid-run."""
        sessions = self.state_dir / "sessions"
        return sorted(p.name for p in sessions.iterdir() if (p / "owner").is_file()) if sessions.is_dir() else []

    def delete_session(self, session_id: str) -> int:
        """DELETE a session as an outage would end it; the status code (200, or 404 when already gone)."""
        with self.client() as client:
            return client.delete(f"/sessions/{session_id}").status_code

    def log(self) -> str:
        return self._log.read_text(errors="replace") if self._log.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
                # What a crash leaves (session cgroups) goes the way run-stack.sh clears it.
                subprocess.run(
                    [sys.executable, "-m", "dra_sandbox", "reap"],
                    env=self.env(),
                    capture_output=True,
                    timeout=30,
                    check=False,
                )
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
