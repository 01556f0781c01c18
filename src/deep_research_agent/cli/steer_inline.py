"""Steering from ``ask``'s terminal: while a run streams, each line the user types is sent as a steering message.

Contract:
- only a terminal is read: ``SteerFromTerminal`` is given the input stream only when it is a TTY (``ask``
  passes ``None`` for a pipe, a file or CI, whose lines are never read as steering);
- while the context is open (one run's stream) the stream's file descriptor is watched on the event loop;
  each complete non-blank line is sent with ``service.steering.send_steering`` (``by="ask"``), the channel
  ``./run.sh steer`` and ``POST /steer`` use, without blocking the stream; the run's ack
  (``status: steer_received``) shows in the stream like any event. A line that cannot be sent (no run in
  progress any more, a server error) is reported and the run goes on;
- end of input (Ctrl-D) stops the watching; closing the context stops it too, so a clarification or plan
  review asked between runs reads the terminal as usual. Where the event loop cannot watch a file
  descriptor (Windows' proactor loop), nothing is read and ``./run.sh steer`` still steers.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Protocol, TextIO

from ..service.steering import NoRunningRun, send_steering

_READ = 4096


class SteerView(Protocol):
    """What the session's view shows of the terminal's steering."""

    def steering_inline(self) -> None: ...

    def steer_not_sent(self, why: str) -> None: ...


class SteerFromTerminal:
    """Sends each line typed on ``stream`` (a TTY, or None to read nothing) as a steering message for the run
    in progress on ``thread_id``."""

    def __init__(self, client: Any, thread_id: str, stream: TextIO | None, view: SteerView) -> None:
        self.client = client
        self.thread_id = thread_id
        self.view = view
        self._fd = stream.fileno() if stream is not None else None
        self._pending = b""
        self._watching = False
        self._sending: set[asyncio.Task[None]] = set()

    def __enter__(self) -> SteerFromTerminal:
        if self._fd is None:
            return self
        try:
            asyncio.get_running_loop().add_reader(self._fd, self._readable)
        except (NotImplementedError, RuntimeError, ValueError, OSError):
            return self
        self._watching = True
        self.view.steering_inline()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._watching and self._fd is not None:
            asyncio.get_running_loop().remove_reader(self._fd)
        self._watching = False

    def _readable(self) -> None:
        assert self._fd is not None, "only a watched stream is readable"
        try:
            chunk = os.read(self._fd, _READ)
        except OSError:
            chunk = b""
        if not chunk:
            self._stop()
            return
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        for line in lines:
            if text := line.decode("utf-8", errors="replace").strip():
                sending = asyncio.ensure_future(self._send(text))
                self._sending.add(sending)
                sending.add_done_callback(self._sending.discard)

    async def _send(self, text: str) -> None:
        try:
            await send_steering(self.client, self.thread_id, text, by="ask")
        except NoRunningRun:
            self.view.steer_not_sent("the run is no longer in progress")
        except Exception as exc:  # noqa: BLE001 - the run goes on; ./run.sh steer is still there
            self.view.steer_not_sent(type(exc).__name__)
