"""Keeps serve's instances up: an instance that dies is started again, the others serve on.

Written here rather than with supervisord or circus: both are daemons of their own, configured by files and
driven over a socket, where serve needs a few lines in the one process that owns the instances' ports,
environment and logs, and must keep running the instances it already started.

Contract:
- ``Supervisor(start, ports)`` starts one instance per port through ``start(port)`` (an object with the
  ``AegraInstance`` methods ``launch``, ``alive``, ``ready``, ``returncode``, ``pid``, ``terminate``, ``kill``);
- ``tick()`` (called every half second by serve) notices an instance that exited, logs its exit status
  (``exited with status N`` or ``was killed by SIGNAME``) and starts it again on the same port after a
  backoff: ``backoff_s`` doubled for each restart that did not stay up a minute, at most ``max_backoff_s``;
  the next start after a minute of uptime waits ``backoff_s`` again. When an instance is back (``/health``
  200) it is logged too;
- an instance that needed more than ``max_restarts_per_minute`` restarts in the last 60 s is left down and
  the log says so; the others keep serving. ``all_given_up`` is true once no instance is left, and serve
  exits non-zero then;
- ``drain(grace_s)`` stops every instance at once with SIGTERM (each takes no new run, lets its runs finish
  for the grace period Aegra was given and queues the rest back for another instance or the next start) and
  SIGKILLs what is still running ``grace_s`` later; no instance is restarted once it began.
"""

from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar


class Instance(Protocol):
    port: int

    def launch(self) -> Any: ...
    def alive(self) -> bool: ...
    def ready(self) -> bool: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def pid(self) -> int: ...


I = TypeVar("I", bound=Instance)

UPTIME_THAT_COUNTS_S = 60.0


def exit_words(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


@dataclass
class Slot(Generic[I]):
    port: int
    instance: I
    started_at: float
    restarts: deque[float] = field(default_factory=deque)
    quick_failures: int = 0
    restart_at: float | None = None
    announced_ready: bool = True
    given_up: bool = False


class Supervisor(Generic[I]):
    def __init__(
        self,
        start: Callable[[int], I],
        ports: list[int],
        *,
        log: Callable[[str], None],
        max_restarts_per_minute: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_restarts_per_minute < 0 or backoff_s < 0 or max_backoff_s < backoff_s:
            raise ValueError("restart limits must be non-negative, and max_backoff_s at least backoff_s")
        self.start = start
        self.log = log
        self.max_restarts_per_minute = max_restarts_per_minute
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.clock = clock
        self.draining = False
        now = clock()
        self.slots = [Slot(port=port, instance=start(port), started_at=now) for port in ports]
        for slot in self.slots:
            slot.instance.launch()

    @property
    def instances(self) -> list[I]:
        return [slot.instance for slot in self.slots]

    @property
    def all_given_up(self) -> bool:
        return all(slot.given_up for slot in self.slots)

    def tick(self) -> None:
        if self.draining:
            return
        now = self.clock()
        for slot in self.slots:
            if slot.given_up:
                continue
            if slot.restart_at is None:
                if slot.instance.alive():
                    if not slot.announced_ready and slot.instance.ready():
                        slot.announced_ready = True
                        self.log(f"the instance on port {slot.port} is serving again (pid {slot.instance.pid})")
                    continue
                self._schedule(slot, now)
            elif now >= slot.restart_at:
                slot.restart_at = None
                slot.restarts.append(now)
                slot.started_at = now
                slot.announced_ready = False
                slot.instance = self.start(slot.port)
                slot.instance.launch()
                self.log(f"restarted the instance on port {slot.port} (pid {slot.instance.pid})")

    def _schedule(self, slot: Slot[I], now: float) -> None:
        words = exit_words(slot.instance.returncode)
        while slot.restarts and now - slot.restarts[0] > 60.0:
            slot.restarts.popleft()
        if len(slot.restarts) >= self.max_restarts_per_minute:
            slot.given_up = True
            self.log(
                f"the instance on port {slot.port} {words}; it was restarted {len(slot.restarts)} times in the "
                f"last minute (at most {self.max_restarts_per_minute}), so it stays down; the others keep serving "
                f"(its log: {getattr(slot.instance, 'log_path', '?')})"
            )
            return
        slot.quick_failures = 0 if now - slot.started_at >= UPTIME_THAT_COUNTS_S else slot.quick_failures + 1
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** max(0, slot.quick_failures - 1))
        slot.restart_at = now + delay
        self.log(
            f"the instance on port {slot.port} (pid {slot.instance.pid}) {words}; restarting it in {delay:g} s; "
            "its runs go on elsewhere once their lease expires"
        )

    def drain(self, grace_s: float) -> None:
        self.draining = True
        running = [slot.instance for slot in self.slots if slot.instance.alive()]
        for instance in running:
            instance.terminate()
        deadline = self.clock() + grace_s
        while any(instance.alive() for instance in running) and self.clock() < deadline:
            time.sleep(0.2)
        for instance in running:
            if instance.alive():
                self.log(f"the instance on port {instance.port} did not stop within {grace_s:g} s; killing it")
                instance.kill()
