"""The wait an HTTP answer asks for, read from its ``Retry-After`` headers the same way for every caller.

Contract of ``retry_after_s(headers, now=...)``: seconds to wait (a finite float, never negative) or None
when the answer asked for nothing usable. In order, the first header that parses wins:
- ``retry-after-ms``: milliseconds (OpenAI-compatible providers send it);
- ``retry-after`` as delta-seconds (fractions accepted, as some providers send them);
- ``retry-after`` as an HTTP-date, relative to ``now`` (the wall clock by default); a past date is 0.
Header names match in any case. Anything else (empty, negative, not a number, not finite, not a date)
counts as absent, so the caller falls back to its own backoff.

``backoff_s(retry, retry_after, jitter)`` is the wait before retry number ``retry`` of every caller that
retries (model calls, MCP calls): the asked wait plus a small spread, else ``BASE_DELAY_S`` doubling up to
``MAX_DELAY_S``, drawn from its upper half so parallel callers do not come back in lockstep.

openai's parser is private to its client and urllib3's reads neither ``retry-after-ms`` nor fractions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from datetime import UTC
from email.utils import parsedate_to_datetime

BASE_DELAY_S = 1.0
MAX_DELAY_S = 30.0


def backoff_s(retry: int, retry_after: float | None, jitter: float) -> float:
    """Wait before retry number ``retry`` (1-based); ``jitter`` is a draw from [0, 1)."""
    if retry_after is not None:
        # Never earlier than asked; a small spread keeps parallel agents from retrying in lockstep.
        return retry_after + min(retry_after * 0.1, 1.0) * jitter
    ceiling = min(BASE_DELAY_S * 2.0 ** (retry - 1), MAX_DELAY_S)
    return ceiling * (0.5 + 0.5 * jitter)


def retry_after_s(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds the answer with these headers asks the caller to wait, or None."""
    if not headers:
        return None
    by_name = {name.lower(): value for name, value in headers.items()}
    millis = _delta(by_name.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = by_name.get("retry-after")
    seconds = _delta(value)
    if seconds is not None:
        return seconds
    return _until(value, time.time() if now is None else now)


def _delta(value: str | None) -> float | None:
    try:
        number = float((value or "").strip())
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _until(value: str | None, now: float) -> float | None:
    try:
        when = parsedate_to_datetime((value or "").strip())
    except ValueError:
        return None
    if when.tzinfo is None:  # "-0000": a UTC time from an unknown zone
        when = when.replace(tzinfo=UTC)
    return max(when.timestamp() - now, 0.0)
