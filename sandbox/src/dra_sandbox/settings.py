"""The service's settings, read once from the environment.

Contract:
- Every setting has a default that runs the service on loopback with the reference sidecar's limits; the
  names follow the reference (``LLM_SANDBOX_TOKEN``, ``SANDBOX_MAX_SESSIONS`` …) so one deployment's env
  works with either service.
- A malformed value is refused at startup with the variable's name and what it expects, never its value
  (the token is a ``SecretStr`` and appears in no repr, log or error).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

DEFAULT_PORT = 8900


class SettingsError(ValueError):
    """An environment variable holds a value the service cannot use."""


def _default_state_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"dra-sandbox-{os.geteuid()}"


class SandboxSettings(BaseModel):
    """What the service listens on, where it keeps sessions, and the ceilings it applies to callers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    token: SecretStr = Field(SecretStr(""), description="Bearer token callers must send; empty disables auth")
    host: str = "127.0.0.1"
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    state_dir: Path = Field(default_factory=_default_state_dir)
    max_sessions: int = Field(24, ge=0, description="live sessions at once; 0 = unlimited")
    max_request_bytes: int = Field(32 * 1024 * 1024, ge=1024)
    max_output_bytes: int = Field(1_000_000, ge=1024, description="per stream of one exec, and per file read")
    max_memory_mb: int = Field(4096, ge=64)
    max_cpus: float = Field(2.0, gt=0)
    max_session_seconds: int = Field(6 * 3600, ge=1)
    max_exec_seconds: int = Field(1800, ge=1)
    pids_max: int = Field(256, ge=8)
    max_file_bytes: int = Field(100 * 1024 * 1024, ge=1024, description="largest file one exec may write")
    max_concurrency: int = Field(32, ge=1, description="execs running at once across all sessions")
    allow_network: bool = Field(True, description="whether a caller may ask for network=true")
    sandbox_uid: int = Field(65534, ge=1, description="host uid sessions run as when the service runs as root")
    python: str = "/usr/bin/python3"
    cgroup_root: Path = Field(
        Path("/sys/fs/cgroup"), description="cgroup v1 mount; elsewhere limits fall back to rlimits"
    )
    allow_weak_isolation: bool = Field(False, description="start even without seccomp")
    reap_interval_seconds: float = Field(5.0, gt=0)


ENV_NAMES: dict[str, str] = {
    "token": "LLM_SANDBOX_TOKEN",
    "host": "SANDBOX_HOST",
    "port": "SANDBOX_PORT",
    "state_dir": "SANDBOX_STATE_DIR",
    "max_sessions": "SANDBOX_MAX_SESSIONS",
    "max_request_bytes": "SANDBOX_MAX_REQUEST_BYTES",
    "max_output_bytes": "SANDBOX_MAX_OUTPUT_BYTES",
    "max_memory_mb": "SANDBOX_MAX_MEMORY_MB",
    "max_cpus": "SANDBOX_MAX_CPUS",
    "max_session_seconds": "SANDBOX_MAX_SESSION_SECONDS",
    "max_exec_seconds": "SANDBOX_MAX_EXEC_SECONDS",
    "pids_max": "SANDBOX_PIDS_MAX",
    "max_file_bytes": "SANDBOX_MAX_FILE_BYTES",
    "max_concurrency": "SANDBOX_MAX_CONCURRENCY",
    "allow_network": "SANDBOX_ALLOW_NETWORK",
    "sandbox_uid": "SANDBOX_UID",
    "python": "SANDBOX_PYTHON",
    "cgroup_root": "SANDBOX_CGROUP_ROOT",
    "allow_weak_isolation": "SANDBOX_ALLOW_WEAK_ISOLATION",
    "reap_interval_seconds": "SANDBOX_REAP_INTERVAL",
}


def load_settings(environ: Mapping[str, str] | None = None, **overrides: object) -> SandboxSettings:
    """Settings from ``environ`` (default ``os.environ``); ``overrides`` (e.g. from the command line) win."""
    environ = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for field, name in ENV_NAMES.items():
        raw = environ.get(name, "").strip()
        if raw:
            values[field] = raw
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return SandboxSettings.model_validate(values)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "?"
            problems.append(f"{ENV_NAMES.get(field, field)}: {error['msg']}")
        raise SettingsError("invalid sandbox settings: " + "; ".join(problems)) from None
