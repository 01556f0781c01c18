"""Code execution: the sandbox a run's code runs in, and the tools of the roles that use it.

The agent talks to a sandbox service over HTTP (``client``: the llm-sandbox API, ``LLM_SANDBOX_URL`` and
``LLM_SANDBOX_TOKEN``) or to one of deepagents' hosted sandbox integrations (``hosted``); ``session``
opens one session per run on first use, shares it between the run's agents and replaces it once when it
dies; ``connector`` builds that per graph with the skill helpers to upload; ``backend`` is deepagents'
sandbox backend protocol over it; ``tools`` trims deepagents' file and execute tools per role.
"""

from .backend import SandboxBackend
from .client import SessionGone, SidecarClient
from .connector import SandboxConnector, sandbox_connector
from .session import SandboxSession
from .tools import sandbox_tools

__all__ = [
    "SandboxBackend",
    "SandboxConnector",
    "SandboxSession",
    "SessionGone",
    "SidecarClient",
    "sandbox_connector",
    "sandbox_tools",
]
