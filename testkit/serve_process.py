"""``./run.sh serve`` itself in a subprocess, as an operator starts it: the tests drive the real entry point.

``start`` waits until serve says every instance serves; the instances' pids are read from serve's own
output (``Serving ... (pid N)``, ``restarted the instance on port P (pid N)``), so a test can SIGKILL one
the way a crash would. ``stop`` sends serve SIGTERM (it drains) and waits for it to exit. Each instance
logs to ``.aegra/<port>.log`` (serve's own layout), which ``executor_of`` reads to tell which worker ran a run.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import anyio

from testkit.agent_server import PROJECT_ROOT
from testkit.ports import free_port

_SERVING = re.compile(r"Serving deep_research_agent at http://[^:]+:(\d+) \(pid (\d+)\)")
_RESTARTED = re.compile(r"restarted the instance on port (\d+) \(pid (\d+)\)")


def free_port_range(count: int) -> int:
    """A first port whose next ``count - 1`` ports are free too."""
    while True:
        first = free_port()
        if all(_free(first + n) for n in range(1, count)):
            return first


def _free(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class ServeProcess:
    def __init__(self, env: dict[str, str], log_path: Path, args: tuple[str, ...] = ()) -> None:
        self.env = env
        self.args = args
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.first_port = int(env["DRA_PORT"])
        self.count = int(env.get("DRA_INSTANCES", "1"))

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{self.first_port + n}" for n in range(self.count)]

    @property
    def ports(self) -> list[int]:
        return [self.first_port + n for n in range(self.count)]

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def instance_log(self, port: int) -> str:
        log = PROJECT_ROOT / ".aegra" / f"{port}.log"
        return log.read_text(errors="replace") if log.exists() else ""

    def pickups(self, run_id: str, port: int | None = None) -> int:
        """How many times a worker (of ``port``, or of any instance) picked the run up: more than once is a resume."""
        logs = [self.instance_log(p) for p in ([port] if port is not None else self.ports)]
        return sum("Worker picked up run" in line and run_id in line for log in logs for line in log.splitlines())

    async def executor_of(self, run_id: str, timeout: float = 60.0) -> int:
        """The port of the instance whose worker picked the run up."""
        with anyio.fail_after(timeout):
            while True:
                for port in self.ports:
                    if self.pickups(run_id, port):
                        return port
                await anyio.sleep(0.1)

    def start(self, timeout: float = 600.0) -> ServeProcess:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [str(PROJECT_ROOT / "run.sh"), "serve", *self.args],
            cwd=PROJECT_ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        mark = len(self.output())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"./run.sh serve exited with {self.process.returncode}:\n{self.output()[-6000:]}")
            if len(_SERVING.findall(self.output()[mark:])) >= self.count:
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"./run.sh serve did not serve within {timeout}s:\n{self.output()[-6000:]}")

    def pid_of(self, port: int) -> int:
        """The pid of the instance serving ``port`` now, from serve's latest word on it."""
        ordered = [
            (m.start(), int(m.group(2)))
            for pattern in (_SERVING, _RESTARTED)
            for m in pattern.finditer(self.output())
            if int(m.group(1)) == port
        ]
        if not ordered:
            raise AssertionError(f"serve never named the instance on port {port}")
        return max(ordered)[1]

    def kill_instance(self, port: int) -> int:
        """SIGKILL the instance's process group, as a crashed machine would; returns the pid killed."""
        pid = self.pid_of(port)
        os.killpg(pid, signal.SIGKILL)
        return pid

    def stop(self, timeout: float = 120.0) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
            raise
