"""The package layout is the architecture: each package states its concern and exports an explicit list."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import deep_research_agent

PACKAGES = sorted(
    name
    for _, name, is_package in pkgutil.iter_modules(deep_research_agent.__path__, "deep_research_agent.")
    if is_package
)


def test_the_layout_names_the_architecture():
    short = {name.rsplit(".", 1)[1] for name in PACKAGES}
    assert {
        "settings",
        "protocol",
        "run",
        "guards",
        "handover",
        "delivery",
        "lifecycle",
        "report",
        "tools",
        "prompts",
        "cli",
    } <= short


@pytest.mark.parametrize("name", PACKAGES)
def test_each_package_states_its_concern_and_every_export_resolves(name):
    package = importlib.import_module(name)
    assert package.__doc__ and package.__doc__.strip(), f"{name} has no docstring"
    exports = getattr(package, "__all__", None)
    assert exports, f"{name} exports no explicit list"
    for export in exports:
        assert getattr(package, export, None) is not None or importlib.import_module(f"{name}.{export}"), export
