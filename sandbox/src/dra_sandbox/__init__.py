"""dra-sandbox: the code-execution sandbox service of deep-research-agent.

The reference llm-sandbox sidecar's HTTP API (sessions, exec, run, files) over a bubblewrap provider:
one isolated session per run, no network, a read-only system, a private /workspace and /tmp, a non-root
uid without capabilities, seccomp, cgroup v1 limits where the host allows them and rlimits otherwise.
Run it with ``python -m dra_sandbox``; ``dra_sandbox.isolation.probe()`` tells what this host can give.
"""

from .isolation import IsolationReport, probe
from .settings import SandboxSettings, load_settings

__all__ = ["IsolationReport", "SandboxSettings", "load_settings", "probe"]
