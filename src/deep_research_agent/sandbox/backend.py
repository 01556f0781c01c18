"""deepagents' sandbox backend protocol over the run's sandbox session.

``SandboxBackend`` is deepagents' ``BaseSandbox``: its file operations (read, write, edit, ls, glob, grep)
are built by deepagents on ``execute`` and the upload/download primitives, which this class routes to the
current run's ``SandboxSession`` (one instance serves every run of a graph, since deepagents takes a
backend instance, not a factory). So each primitive is an entry point: deepagents' tools call it with no
run, and it looks up the run of the tool call it serves (``run/boundary.py``). Failures reach the tool as
classified ``ToolFailure``\\ s, which the agents' error middleware hands the model.

It is async only: every agent runs on the server's event loop, where a blocking call would stall every
run, so the sync methods refuse with a clear error instead of blocking.
"""

from __future__ import annotations

from deepagents.backends.protocol import ExecuteResponse, FileDownloadResponse, FileUploadResponse
from deepagents.backends.sandbox import BaseSandbox

from ..run import current_run
from .connector import SandboxConnector
from .session import SandboxSession

_ASYNC_ONLY = "this sandbox backend is async only; use the a-prefixed methods"


class SandboxBackend(BaseSandbox):
    def __init__(self, connector: SandboxConnector) -> None:
        self.connector = connector

    @property
    def id(self) -> str:
        return f"dra-{self.connector.provider}"

    async def aexecute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:  # noqa: ASYNC109 - the sandbox's timeout
        return await self._session().execute(command, timeout_s=timeout)

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return await self._session().upload(files)

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return await self._session().download(paths)

    def _session(self) -> SandboxSession:
        """The session of the run whose tool call this is: deepagents passes the backend no run."""
        return self.connector.session(current_run().attachments)

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        raise NotImplementedError(_ASYNC_ONLY)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        raise NotImplementedError(_ASYNC_ONLY)

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        raise NotImplementedError(_ASYNC_ONLY)
