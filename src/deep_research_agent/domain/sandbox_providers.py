"""The integration package each hosted sandbox provider needs, so settings can refuse a provider that is not installed.

``sandbox/hosted.py`` opens the providers' sandboxes; this table is what both it and the settings read.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from typing import NamedTuple

from .names import SandboxProvider


class IntegrationPackage(NamedTuple):
    package: str
    """The distribution to install, e.g. ``langchain-daytona``."""
    module: str
    """The module it provides, e.g. ``langchain_daytona``."""


HOSTED_PACKAGES: dict[SandboxProvider, IntegrationPackage] = {
    SandboxProvider.DAYTONA: IntegrationPackage("langchain-daytona", "langchain_daytona"),
    SandboxProvider.MODAL: IntegrationPackage("langchain-modal", "langchain_modal"),
    SandboxProvider.E2B: IntegrationPackage("langchain-e2b", "langchain_e2b"),
    SandboxProvider.RUNLOOP: IntegrationPackage("langchain-runloop", "langchain_runloop"),
}


@cache
def missing_package(provider: str) -> str | None:
    """The integration package ``provider`` needs when it is not installed, else None."""
    spec = HOSTED_PACKAGES.get(SandboxProvider(provider))
    if spec is None or importlib.util.find_spec(spec.module) is not None:
        return None
    return spec.package
