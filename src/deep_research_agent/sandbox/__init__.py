"""Code execution: the sandbox a run's code runs in, and the tools of the roles that use it.

The agent talks to a sandbox service over HTTP (``client``: the llm-sandbox API, ``LLM_SANDBOX_URL`` and
``LLM_SANDBOX_TOKEN``) or to one of deepagents' hosted sandbox integrations (``hosted``); ``session``
opens one session per run on first use, shares it between the run's agents and replaces it once when it
dies; ``connector`` builds that per graph with the skill helpers to upload; ``backend`` is deepagents'
sandbox backend protocol over it; ``tools`` trims deepagents' file and execute tools per role.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "SandboxBackend": "backend",
        "SandboxConnector": "connector",
        "SandboxSession": "session",
        "SessionGone": "client",
        "SidecarClient": "client",
        "missing_package": "hosted",
        "sandbox_connector": "connector",
        "sandbox_tools": "tools",
    },
)
