"""Secrets never leave the process: scrubbing for events, state, tool texts and log lines.

Contract:
- ``register_secrets`` remembers the keys of a run's settings (the graph factory registers them on every
  run); ``redact`` replaces them, and anything shaped like an API key or a bearer token, by ``[redacted]``;
- ``redact_tree`` does the same through nested payloads (every event passes through it);
- every log record the process makes is scrubbed as it is made (``scrub_log_record``), whatever logger
  writes it and whatever handler renders it: its message after %-formatting, its exception and stack
  text, and the values of a structlog event (langgraph-api logs through structlog). A provider that
  rejects a key often echoes it back (``401 Incorrect API key provided: sk-…``), so a log call never has
  to redact its own text. ``install_log_scrubbing`` sets this up when this module is first imported, so
  every entry point (the server importing the graph, the CLI, a test) has it before any key is known.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

# Replaced whole, never changed in place: log records are scrubbed on whatever thread logs them, and a
# set that grows while ``redact`` walks it would raise there. Writers take the lock so none is lost.
_secrets: frozenset[str] = frozenset()
_secrets_lock = threading.Lock()
# Key-shaped tokens carry a long random run; prose and URL slugs ("sk-hynix-posts-...", "bearer securities")
# have short hyphenated words, so they are left alone.
_SECRET_PATTERNS = (
    re.compile(r"(?<![/\w-])sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{12,}"),
    re.compile(r"(?<![/\w-])tvly-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{12,}"),
    re.compile(r"(?i)(bearer\s+)(?=[A-Za-z0-9._\-~+/]*\d)[A-Za-z0-9._\-~+/]{12,}=*"),
)
_EXCEPTION_FORMATTER = logging.Formatter()


def register_secrets(values: Iterable[str]) -> None:
    """Remember secrets so they are scrubbed from every event and log line."""
    global _secrets
    candidates = {v for v in values if v and len(v) >= 6}
    if candidates <= _secrets:  # every run registers its keys again: the common case takes no lock
        return
    with _secrets_lock:
        _secrets = _secrets | candidates


def redact(text: str) -> str:
    """Replace known secrets and key-shaped tokens with ``[redacted]``.

    Redact a text before cutting it short, never after: a key cut in two no longer matches, and its first
    half would stay.
    """
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, "[redacted]")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "[redacted]", text)
    return text


def redact_tree(value: Any) -> Any:
    """``redact`` through mappings, lists and tuples (tuples come back as lists).

    Numbers, booleans and None are kept; any other object is kept unless its repr shows a secret, in which
    case the redacted repr stands in for it (an exception passed as a structlog value renders as its repr).
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_tree(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    shown = repr(value)
    scrubbed = redact(shown)
    return value if scrubbed == shown else scrubbed


def scrub_log_record(record: logging.LogRecord) -> None:
    """Redact one log record in place, so that no handler or formatter can render a secret from it.

    The exception (``exc_info``) and stack texts are rendered once and redacted, and ``exc_info`` is
    cleared, so no handler renders the raw exception again. A text message is rendered once
    (``msg % args``), the exception and stack texts are appended to it as ``logging.Formatter`` would
    append them, the whole is redacted, and ``args``, ``exc_text`` and ``stack_info`` are emptied: the
    texts go into the message because langgraph-api's formatter (structlog's ``ProcessorFormatter``) drops
    ``exc_text`` when ``exc_info`` is gone. A structlog event arrives as a dict in ``msg``, which that
    formatter renders later, so it keeps its shape with its values redacted; structlog has already put its
    exception and stack into it as strings, and the copies ``Logger.exception`` adds to the record are
    kept redacted in ``exc_text`` and ``stack_info``.
    """
    exception = _EXCEPTION_FORMATTER.formatException(record.exc_info) if record.exc_info else None
    record.exc_info = None
    if isinstance(record.msg, Mapping) and not record.args:
        record.msg = redact_tree(record.msg)
        record.exc_text = redact(exception) if exception else None
        record.stack_info = redact(record.stack_info) if record.stack_info else None
        return
    try:
        message = record.getMessage()
    except Exception:  # arguments that do not fit the format must not break the caller: log both
        message = f"{record.msg!r} with arguments {record.args!r}"
    texts = [text for text in (message, exception, record.stack_info) if text]
    record.msg, record.args = redact("\n".join(texts)), ()
    record.exc_text = record.stack_info = None


def install_log_scrubbing() -> None:
    """Make every log record of the process pass through ``scrub_log_record`` as it is made; idempotent.

    It wraps the log record factory rather than adding a filter, because only the factory sees every
    record: a logger's filters see only what is logged on that very logger, not what its children
    propagate to it, and handler filters miss handlers configured later (uvicorn applies langgraph-api's
    logging config at start-up) and those of loggers that do not propagate. structlog, as langgraph-api
    configures it, logs through stdlib loggers, so its records are made there too. Attributes passed as
    ``extra`` are set after the factory runs and are not scrubbed; the product passes none.
    """
    make_record = logging.getLogRecordFactory()
    if getattr(make_record, "scrubs_secrets", False):
        return

    def make_scrubbed_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        scrub_log_record(record)
        return record

    make_scrubbed_record.scrubs_secrets = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(make_scrubbed_record)


install_log_scrubbing()
