"""Secrets never leave the process: scrubbing for events, state, tool texts and log lines.

Contract:
- ``register_secrets`` remembers the keys of a run's settings (the graph factory registers them on every
  run); ``redact`` replaces them, and anything shaped like an API key or a bearer token, by ``[redacted]``;
- ``redact_tree`` does the same through nested payloads (every event passes through it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_secrets: set[str] = set()
# Key-shaped tokens carry a long random run; prose and URL slugs ("sk-hynix-posts-...", "bearer securities")
# have short hyphenated words, so they are left alone.
_SECRET_PATTERNS = (
    re.compile(r"(?<![/\w-])sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{12,}"),
    re.compile(r"(?<![/\w-])tvly-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{12,}"),
    re.compile(r"(?i)(bearer\s+)(?=[A-Za-z0-9._\-~+/]*\d)[A-Za-z0-9._\-~+/]{12,}=*"),
)


def register_secrets(values: Iterable[str]) -> None:
    """Remember secrets so they are scrubbed from every event and log line."""
    _secrets.update(v for v in values if v and len(v) >= 6)


def redact(text: str) -> str:
    """Replace known secrets and key-shaped tokens with ``[redacted]``."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, "[redacted]")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "[redacted]", text)
    return text


def redact_tree(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_tree(v) for v in value]
    return value


