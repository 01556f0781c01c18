"""Per graph: the sandbox its runs use, opened per run on first use, and the skill helpers put into it.

Contract:
- ``sandbox_connector(settings, helpers)`` is None when the sandbox settings attach no sandbox (code execution is
  then disabled: no execute tool, no coding or extract sub-agent, and the prompts say so); otherwise it
  is built once per graph, at build time, and holds no run's state;
- ``SandboxConnector.session(run.attachments)`` is the run's ``SandboxSession``, made on first use and kept
  among the run's attachments, so every agent of the run (and the offloading of large results) shares one session;
  the remote session itself opens on the session's first call;
- the skill helper modules, ``<skills_dir>/<name>/*.py``, are read at build time and uploaded to
  ``/workspace/skills/<name>/`` of every session the run opens, so a skill can import tested code.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..domain.names import SandboxProvider
from ..run.attachments import Attachments
from ..settings.features import SandboxSettings
from .client import SidecarClient
from .hosted import open_hosted
from .session import Remote, SandboxSession, SidecarRemote

logger = logging.getLogger(__name__)

HELPERS_ROOT = "/workspace/skills"


class SandboxConnector:
    """Opens the sandbox session of each run of one graph."""

    def __init__(
        self, settings: SandboxSettings, helpers: Sequence[tuple[str, bytes]] = (), *, max_output_chars: int = 60_000
    ) -> None:
        self.provider = SandboxProvider(settings.sandbox_provider)
        self.url = settings.sandbox_url
        self._token = settings.sandbox_token.get_secret_value() if settings.sandbox_token else None
        self.network = settings.sandbox_network
        self.session_timeout_s = settings.sandbox_session_timeout
        self.exec_timeout_s = settings.sandbox_exec_timeout
        self.max_output_chars = max_output_chars
        self.helpers = tuple(helpers)

    @property
    def helper_paths(self) -> tuple[str, ...]:
        return tuple(path for path, _ in self.helpers)

    def session(self, attachments: Attachments) -> SandboxSession:
        """The session of the run whose ``attachments`` these are, made on first use."""
        return attachments.setdefault(SandboxSession, self.new_session)

    def new_session(self) -> SandboxSession:
        """A session of its own (the run's is ``session(run.attachments)``): for the sandbox service, with one connection
        that every remote session it opens shares, closed with it."""
        options = {
            "helpers": self.helpers,
            "exec_timeout_s": self.exec_timeout_s,
            "max_output_chars": self.max_output_chars,
        }
        if self.provider != SandboxProvider.SIDECAR:
            return SandboxSession(self._open_hosted, **options)
        client = SidecarClient(self.url, self._token)

        async def open_remote() -> Remote:
            return await SidecarRemote.open(client, timeout_s=self.session_timeout_s, network=self.network)

        return SandboxSession(open_remote, release=client.aclose, **options)

    async def _open_hosted(self) -> Remote:
        return await open_hosted(self.provider, timeout_s=self.session_timeout_s, network=self.network)


def sandbox_connector(
    settings: SandboxSettings, helpers: Sequence[tuple[str, bytes]] = (), *, max_output_chars: int
) -> SandboxConnector | None:
    """The graph's sandbox, with ``helpers`` (sandbox path, bytes) to upload into each session, its ``execute``
    output cut at ``max_output_chars``; None without one."""
    if not settings.sandbox_attached:
        return None
    return SandboxConnector(settings, helpers, max_output_chars=max_output_chars)
