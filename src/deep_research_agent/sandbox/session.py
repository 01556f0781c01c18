"""One run's sandbox session: opened on first use, shared by every agent of the run, replaced once when it dies.

Contract of ``SandboxSession`` (``connector.SandboxConnector`` makes one per run and keeps it in the run's
stores):
- the remote session is opened lazily, on the run's first execute, file operation or offload, under a
  lock, so parallel first callers open one; the skill helper modules and the files of ``remember`` are
  uploaded into it as soon as it opens;
- a call whose session has died (``SessionGone``) opens a fresh session, uploads the skill helpers and the
  remembered offloads again, emits one ``status: sandbox_reset`` (``detail`` says why) and is retried once.
  Callers in flight on the dead session find it already replaced and only retry: one death, one reset,
  however many calls were in flight. A second death in the retried call is a transient ``ToolFailure``;
- ``notice_for(caller)`` is the one-time note each agent gets after a reset, that files it wrote before
  are gone (``tools.SandboxNoticeMiddleware`` appends it to that agent's next sandbox tool result);
- ``execute`` output is cut to ``max_output_chars`` with a note, and exit codes 124 and 137 are explained;
- ``close`` deletes the remote session and releases the run's connection (the run's end), ``discard``
  schedules that from sync code (a cancelled or evicted run). Failures here are logged, never raised: the service reaps a session that
  outlives its timeout anyway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from deepagents.backends.protocol import ExecuteResponse, FileDownloadResponse, FileUploadResponse

from ..domain.clock import utc_now_iso
from ..domain.errors import ToolFailure
from ..domain.secrets import redact
from ..protocol.events import SandboxResetStatus, emit
from .client import FileOperationFailed, SessionGone, SidecarClient

logger = logging.getLogger(__name__)

T = TypeVar("T")
TIMEOUT_EXIT = 124
KILLED_EXIT = 137
_DOWNLOAD_MAX_BYTES = 10_000_000


class Remote(Protocol):
    """One live remote session, whatever provider runs it."""

    async def execute(self, command: str, timeout_s: int) -> ExecuteResponse: ...

    async def upload(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]: ...

    async def download(self, paths: list[str]) -> list[FileDownloadResponse]: ...

    async def close(self) -> None: ...


Opener = Callable[[], Awaitable[Remote]]


class SidecarRemote:
    """A session of the sandbox service."""

    def __init__(self, client: SidecarClient, session_id: str) -> None:
        self.client = client
        self.session_id = session_id

    @classmethod
    async def open(cls, client: SidecarClient, *, timeout_s: int, network: bool) -> SidecarRemote:
        return cls(client, await client.create_session(timeout_s=timeout_s, network=network))

    async def execute(self, command: str, timeout_s: int) -> ExecuteResponse:
        result = await self.client.exec(self.session_id, command, timeout_s=timeout_s)
        output = result.stdout
        if result.stderr:
            output = f"{output}\n{result.stderr}" if output else result.stderr
        return ExecuteResponse(output=output, exit_code=result.exit_code, truncated=result.truncated)

    async def upload(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        responses = []
        for path, content in files:
            try:
                await self.client.write_file(self.session_id, path, content)
            except FileOperationFailed as refused:
                responses.append(FileUploadResponse(path=path, error=refused.code))
            except ToolFailure as failure:
                if failure.kind == "transient":
                    raise
                responses.append(FileUploadResponse(path=path, error=failure.message))
            else:
                responses.append(FileUploadResponse(path=path))
        return responses

    async def download(self, paths: list[str]) -> list[FileDownloadResponse]:
        responses = []
        for path in paths:
            try:
                content, _ = await self.client.read_file(self.session_id, path, max_bytes=_DOWNLOAD_MAX_BYTES)
            except FileOperationFailed as refused:
                responses.append(FileDownloadResponse(path=path, error=refused.code))
            else:
                responses.append(FileDownloadResponse(path=path, content=content))
        return responses

    async def close(self) -> None:
        await self.client.delete_session(self.session_id)


class SandboxSession:
    """The run's sandbox, opened lazily and replaced once per death; see the module contract."""

    def __init__(
        self,
        opener: Opener,
        *,
        helpers: Sequence[tuple[str, bytes]] = (),
        exec_timeout_s: int = 120,
        max_output_chars: int = 60_000,
        release: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._opener = opener
        self._release = release
        self._helpers = list(helpers)
        self._remembered: dict[str, bytes] = {}
        self.exec_timeout_s = exec_timeout_s
        self.max_output_chars = max_output_chars
        self._remote: Remote | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self.opened = 0
        """How many remote sessions this run has opened: 1 after the first, one more per reset."""
        self.resets = 0
        self.reset_at: str | None = None
        self._acknowledged: dict[str, int] = {}
        self._background: set[asyncio.Task[None]] = set()

    @property
    def is_open(self) -> bool:
        return self._remote is not None

    async def execute(self, command: str, *, timeout_s: int | None = None) -> ExecuteResponse:
        seconds = timeout_s if timeout_s is not None and timeout_s > 0 else self.exec_timeout_s
        response = await self._call(lambda remote: remote.execute(command, seconds))
        return _explained(response, seconds, self.max_output_chars)

    async def upload(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return await self._call(lambda remote: remote.upload(files))

    async def download(self, paths: list[str]) -> list[FileDownloadResponse]:
        return await self._call(lambda remote: remote.download(paths))

    def remember(self, path: str, content: bytes) -> None:
        """Upload this file again into any session that replaces the current one (an offloaded result)."""
        self._remembered[path] = content

    def notice_for(self, caller: str) -> str | None:
        """The note an agent gets once after each reset it has not yet been told of."""
        if self.resets <= self._acknowledged.get(caller, 0):
            return None
        self._acknowledged[caller] = self.resets
        kept = " Offloaded results were uploaded again." if self._remembered else ""
        return (
            f"[Sandbox reset: the sandbox session ended unexpectedly at {self.reset_at} and a fresh one replaced it. "
            f"Files written before then are gone.{kept} Re-create any other file you still need.]"
        )

    async def close(self) -> None:
        async with self._lock:
            self._closed = True
            remote, self._remote = self._remote, None
        if remote is not None:
            await _quietly(remote.close(), "could not delete the run's sandbox session")
        if self._release is not None:
            await _quietly(self._release(), "could not close the run's sandbox connection")

    def discard(self) -> None:
        """``close`` from sync code: scheduled on the running loop, or left to the service's own timeout."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self.close())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _call(self, operation: Callable[[Remote], Awaitable[T]]) -> T:
        remote, number = await self._current()
        try:
            return await operation(remote)
        except SessionGone as gone:
            remote = await self._replace(number, str(gone))
        try:
            return await operation(remote)
        except SessionGone as again:
            raise ToolFailure.transient(
                f"the sandbox session died again right after it was replaced ({again}). Retry once, or continue without it."
            ) from None

    async def _current(self) -> tuple[Remote, int]:
        async with self._lock:
            if self._closed:
                raise ToolFailure.permanent("the run's sandbox is already closed.")
            if self._remote is None:
                self._remote = await self._open()
            return self._remote, self.opened

    async def _replace(self, number: int, why: str) -> Remote:
        """The session that replaces session ``number``: opened here, or by the caller that got here first."""
        async with self._lock:
            if self._closed:
                raise ToolFailure.permanent("the run's sandbox is already closed.")
            if self._remote is not None and self.opened != number:
                return self._remote
            dead, self._remote = self._remote, None
            if dead is not None:
                await _quietly(dead.close(), "could not delete the dead sandbox session")
            self._remote = await self._open()
            self.resets += 1
            self.reset_at = utc_now_iso()
        detail = redact(f"The sandbox session died ({why}); a fresh one replaced it and files written before are gone.")
        logger.warning("%s", detail)
        emit(SandboxResetStatus(detail=detail))
        return self._remote

    async def _open(self) -> Remote:
        remote = await self._opener()
        self.opened += 1
        files = [*self._helpers, *self._remembered.items()]
        if files:
            try:
                failed = [r for r in await remote.upload(files) if r.error]
            except (ToolFailure, SessionGone) as exc:
                failed = [FileUploadResponse(path="(all)", error=str(exc))]
            for response in failed:
                logger.warning("could not upload %s into the new sandbox session: %s", response.path, response.error)
        return remote


def _explained(response: ExecuteResponse, timeout_s: int, max_chars: int) -> ExecuteResponse:
    """The output cut to ``max_chars`` with a note, and a note on what exit codes 124 and 137 mean."""
    output = response.output
    if max_chars and len(output) > max_chars:
        output = (
            output[:max_chars]
            + f"\n[Output cut to {max_chars:,} of {len(output):,} characters: print a summary, or write the rest to a file.]"
        )
    if response.exit_code == TIMEOUT_EXIT:
        output += f"\n[Timed out: the command ran past its {timeout_s} s limit and was stopped.]"
    elif response.exit_code == KILLED_EXIT:
        output += "\n[Killed: the command ran out of memory, or ignored the stop at its time limit.]"
    return ExecuteResponse(output=output, exit_code=response.exit_code, truncated=response.truncated)


async def _quietly(call: Awaitable[None], what: str) -> None:
    try:
        await call
    except Exception as exc:  # noqa: BLE001 - cleanup must never fail a run; the service reaps what is left
        logger.warning("%s: %s", what, redact(str(exc)) or type(exc).__name__)
