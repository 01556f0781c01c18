"""Specification of log scrubbing: no log line of the process carries a key, whoever logs it and however.

Scrubbing is in place from the first import of the product, with no set-up: every logger here is one the
scrubbing never heard of, with a handler added after it was installed, on a logger that does not propagate.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import structlog

from deep_research_agent.domain import secrets
from deep_research_agent.domain.secrets import install_log_scrubbing, register_secrets

# Not shaped like a key: only its registration can scrub it.
KEY = "local-server-key-7Hq2Zp9Lx4"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJlMTIz"


@pytest.fixture(autouse=True)
def registered_key(monkeypatch) -> None:
    """Each test starts with only ``KEY`` registered and leaves nothing behind."""
    monkeypatch.setattr(secrets, "_secrets", frozenset())
    register_secrets([KEY])


class Lines(logging.Handler):
    """Keeps what a log handler writes, and the records it was given."""

    def __init__(self, formatter: logging.Formatter) -> None:
        super().__init__()
        self.setFormatter(formatter)
        self.stream = io.StringIO()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.stream.write(self.format(record) + "\n")

    @property
    def text(self) -> str:
        return self.stream.getvalue()


@contextmanager
def logger_writing_to(handler: logging.Handler, name: str) -> Iterator[logging.Logger]:
    """A stdlib logger whose records go to ``handler`` only."""
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield logger
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        logger.propagate = True


@pytest.fixture
def lines() -> Lines:
    return Lines(logging.Formatter("%(levelname)s %(name)s %(message)s"))


@pytest.fixture
def logger(lines: Lines) -> Iterator[logging.Logger]:
    with logger_writing_to(lines, "tests.secrets.stdlib") as stdlib_logger:
        yield stdlib_logger


@pytest.fixture
def structlog_lines() -> Lines:
    """A handler rendering like langgraph-api's: structlog's ProcessorFormatter with its console renderer."""
    return Lines(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback),
            ],
            foreign_pre_chain=[structlog.stdlib.add_log_level, structlog.processors.format_exc_info],
        )
    )


@pytest.fixture
def structlog_logger(structlog_lines: Lines) -> Iterator[structlog.stdlib.BoundLogger]:
    """A structlog logger configured the way langgraph-api configures structlog: through stdlib loggers."""
    with logger_writing_to(structlog_lines, "tests.secrets.structlog") as stdlib_logger:
        yield structlog.wrap_logger(
            stdlib_logger,
            processors=[
                structlog.stdlib.add_log_level,
                structlog.processors.StackInfoRenderer(),
                structlog.processors.format_exc_info,
                structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
            ],
            wrapper_class=structlog.stdlib.BoundLogger,
        )


def rejected_key() -> ValueError:
    """A provider error echoing the key, raised so it carries a traceback, with a cause that echoes it too."""
    try:
        try:
            raise ConnectionError(f"upstream said: unknown key {KEY}")
        except ConnectionError as cause:
            raise ValueError(f"Error code: 401 - Incorrect API key provided: {KEY}") from cause
    except ValueError as exc:
        return exc


def test_a_registered_key_in_the_message_is_redacted(logger, lines):
    logger.warning(f"triage call failed: Incorrect API key provided: {KEY}")

    assert lines.text == "WARNING tests.secrets.stdlib triage call failed: Incorrect API key provided: [redacted]\n"


def test_a_registered_key_in_the_arguments_is_redacted_after_formatting(logger, lines):
    logger.warning("model call failed: %s (%d attempts)", f"Incorrect API key provided: {KEY}", 1)

    assert "model call failed: Incorrect API key provided: [redacted] (1 attempts)" in lines.text
    assert KEY not in lines.text


def test_an_unregistered_bearer_token_is_redacted(logger, lines):
    logger.warning("request sent with Authorization: %s", BEARER)

    assert "Authorization: Bearer [redacted]" in lines.text


def test_a_key_in_an_exception_and_its_cause_is_redacted_and_the_traceback_kept(logger, lines):
    try:
        raise rejected_key()
    except ValueError:
        logger.exception("internal error in a model call")

    assert KEY not in lines.text
    assert "ValueError: Error code: 401 - Incorrect API key provided: [redacted]" in lines.text
    assert "ConnectionError: upstream said: unknown key [redacted]" in lines.text
    assert lines.text.startswith("ERROR tests.secrets.stdlib internal error in a model call\nTraceback")
    [record] = lines.records
    assert record.exc_info is None and record.exc_text is None, "a handler could render the raw exception again"


def test_a_key_in_stack_info_is_redacted(logger, lines):
    stack = f'Stack (most recent call last):\n  File "deploy.py", line 3, in <module>\n    connect(key="{KEY}")'

    logger.handle(logger.makeRecord(logger.name, logging.WARNING, __file__, 1, "connecting", (), None, sinfo=stack))

    assert KEY not in lines.text
    assert 'connect(key="[redacted]")' in lines.text
    assert lines.records[0].stack_info is None


def test_arguments_that_do_not_fit_the_format_are_still_logged_redacted(logger, lines):
    logger.warning("rejected %s by %s", KEY)

    assert "'rejected %s by %s' with arguments ('[redacted]',)" in lines.text


def test_text_without_secrets_is_kept_as_it_was(logger, lines):
    logger.info("Bearer bonds were abolished in %d; see %s", 2015, "https://example.org/sk-hynix-posts-profit")
    logger.warning("search for %r returned %d results", "sodium batteries", 3)

    assert lines.text == (
        "INFO tests.secrets.stdlib Bearer bonds were abolished in 2015; see https://example.org/sk-hynix-posts-profit\n"
        "WARNING tests.secrets.stdlib search for 'sodium batteries' returned 3 results\n"
    )


def test_a_structlog_event_keeps_its_shape_with_its_values_redacted(structlog_logger, structlog_lines):
    structlog_logger.error(f"Background run failed: {KEY}", run_id="run-1", detail=f"key {KEY}", error=rejected_key())

    assert KEY not in structlog_lines.text
    assert "Background run failed: [redacted]" in structlog_lines.text
    assert "run_id=run-1" in structlog_lines.text and "detail='key [redacted]'" in structlog_lines.text
    assert "Incorrect API key provided: [redacted]" in structlog_lines.text


def test_a_structlog_exception_is_redacted(structlog_logger, structlog_lines):
    try:
        raise rejected_key()
    except ValueError:
        structlog_logger.exception("Run encountered an error in graph")

    assert KEY not in structlog_lines.text
    assert "ValueError: Error code: 401 - Incorrect API key provided: [redacted]" in structlog_lines.text


def test_a_stdlib_exception_rendered_by_structlogs_formatter_keeps_its_traceback(structlog_lines):
    with logger_writing_to(structlog_lines, "tests.secrets.foreign") as logger:
        try:
            raise rejected_key()
        except ValueError:
            logger.exception("internal error in a model call")

    assert KEY not in structlog_lines.text
    assert "Traceback" in structlog_lines.text
    assert "ValueError: Error code: 401 - Incorrect API key provided: [redacted]" in structlog_lines.text


def test_installing_again_changes_nothing(logger, lines):
    factory = logging.getLogRecordFactory()

    install_log_scrubbing()
    install_log_scrubbing()

    assert logging.getLogRecordFactory() is factory
    logger.warning("key %s", KEY)
    assert lines.text == "WARNING tests.secrets.stdlib key [redacted]\n"
