"""deepagents' hosted sandbox integrations (Daytona, Modal, E2B, Runloop) as session providers.

Contract:
- ``HOSTED`` pairs each provider's integration package (``domain/sandbox_providers.py``: the PyPI package and
  the module it imports; none is a dependency of this project) with how to open its sandbox. The settings
  turn a missing package into a ``config_error`` that names the install command, checked without importing;
- ``open_hosted(provider, timeout_s, network)`` creates one sandbox through the provider's SDK (in a worker
  thread: the SDKs block) and wraps it in the integration's ``BaseSandbox`` class; the provider's own
  credentials come from its usual environment variable (``DAYTONA_API_KEY``, Modal's token,
  ``E2B_API_KEY``, ``RUNLOOP_API_KEY``);
- ``HostedRemote`` runs the run's calls through that backend's async methods; an error that says the
  sandbox is gone ("not found", "not running", "terminated") is ``SessionGone``, so the run's session
  replaces it like a dead sidecar session; any other error is a transient ``ToolFailure`` naming the
  provider; ``close`` deletes (or terminates) the sandbox.

Why the SDKs are driven here and not through the integrations' own provider classes: those classes have
changed shape between releases (``SandboxClient``, ``SandboxProvider``, ``get_or_create``), while the SDK
calls and the ``BaseSandbox`` wrappers have stayed put. These paths cannot run in this project's offline
CI; the tests check the wiring against stand-in modules.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deepagents.backends.protocol import (
    ExecuteResponse,
    FileDownloadResponse,
    FileUploadResponse,
    SandboxBackendProtocol,
    execute_accepts_timeout,
)

from ..domain.errors import ToolFailure
from ..domain.names import SandboxProvider
from ..domain.sandbox_providers import HOSTED_PACKAGES, IntegrationPackage
from ..domain.secrets import redact
from .client import SessionGone

_GONE = re.compile(r"not found|no such|not running|terminated|has been stopped|does not exist", re.I)


@dataclass(frozen=True)
class HostedSpec:
    integration: IntegrationPackage
    create: Callable[[int, bool], tuple[SandboxBackendProtocol, Callable[[], None]]]

    @property
    def package(self) -> str:
        return self.integration.package


def _daytona(timeout_s: int, network: bool) -> tuple[SandboxBackendProtocol, Callable[[], None]]:
    daytona = importlib.import_module("daytona")
    integration = importlib.import_module("langchain_daytona")
    sandbox = daytona.Daytona().create()
    return integration.DaytonaSandbox(sandbox=sandbox), sandbox.delete


def _modal(timeout_s: int, network: bool) -> tuple[SandboxBackendProtocol, Callable[[], None]]:
    modal = importlib.import_module("modal")
    integration = importlib.import_module("langchain_modal")
    app = modal.App.lookup("deep-research-agent", create_if_missing=True)
    sandbox = modal.Sandbox.create(app=app, timeout=timeout_s, block_network=not network)
    return integration.ModalSandbox(sandbox=sandbox), sandbox.terminate


def _e2b(timeout_s: int, network: bool) -> tuple[SandboxBackendProtocol, Callable[[], None]]:
    e2b = importlib.import_module("e2b")
    integration = importlib.import_module("langchain_e2b")
    sandbox = e2b.Sandbox.create(timeout=timeout_s, allow_internet_access=network)
    return integration.E2BSandbox(sandbox=sandbox), sandbox.kill


def _runloop(timeout_s: int, network: bool) -> tuple[SandboxBackendProtocol, Callable[[], None]]:
    integration = importlib.import_module("langchain_runloop")
    provider = integration.RunloopProvider()
    backend = provider.get_or_create()
    return backend, lambda: provider.delete(sandbox_id=backend.id)


HOSTED: dict[SandboxProvider, HostedSpec] = {
    SandboxProvider.DAYTONA: HostedSpec(HOSTED_PACKAGES[SandboxProvider.DAYTONA], _daytona),
    SandboxProvider.MODAL: HostedSpec(HOSTED_PACKAGES[SandboxProvider.MODAL], _modal),
    SandboxProvider.E2B: HostedSpec(HOSTED_PACKAGES[SandboxProvider.E2B], _e2b),
    SandboxProvider.RUNLOOP: HostedSpec(HOSTED_PACKAGES[SandboxProvider.RUNLOOP], _runloop),
}


async def open_hosted(provider: SandboxProvider, *, timeout_s: int, network: bool) -> HostedRemote:
    spec = HOSTED[provider]
    try:
        backend, close = await asyncio.to_thread(spec.create, timeout_s, network)
    except ImportError as exc:
        raise ToolFailure.permanent(
            f"the {provider} sandbox needs the {spec.package} package ({exc}); install it, or unset DRA_SANDBOX_PROVIDER."
        ) from None
    except Exception as exc:  # noqa: BLE001 - an SDK failure becomes the model's classified error
        raise ToolFailure.transient(f"could not create a {provider} sandbox ({_said(exc)}).") from None
    return HostedRemote(str(provider), backend, close)


class HostedRemote:
    """One hosted sandbox, driven through its deepagents backend."""

    def __init__(self, provider: str, backend: SandboxBackendProtocol, close: Callable[[], None]) -> None:
        self.provider = provider
        self.backend = backend
        self._close = close

    async def execute(self, command: str, timeout_s: int) -> ExecuteResponse:
        if execute_accepts_timeout(type(self.backend)):
            return await self._guard(self.backend.aexecute(command, timeout=timeout_s))
        return await self._guard(self.backend.aexecute(command))

    async def upload(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return await self._guard(self.backend.aupload_files(files))

    async def download(self, paths: list[str]) -> list[FileDownloadResponse]:
        return await self._guard(self.backend.adownload_files(paths))

    async def close(self) -> None:
        await asyncio.to_thread(self._close)

    async def _guard(self, call: Any) -> Any:
        try:
            return await call
        except ToolFailure:
            raise
        except Exception as exc:  # noqa: BLE001 - SDK errors differ per provider; the model gets a classified one
            if _GONE.search(str(exc)):
                raise SessionGone(f"{self.provider}: {_said(exc)}") from None
            raise ToolFailure.transient(f"the {self.provider} sandbox failed ({_said(exc)}).") from None


def _said(exc: BaseException) -> str:
    text = " ".join(redact(str(exc)).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
