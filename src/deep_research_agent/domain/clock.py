"""The run's clock as people read it: UTC timestamps and run times."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def format_elapsed(seconds: float) -> str:
    """Human run time such as ``4m 12s``."""
    total = max(int(round(seconds)), 0)
    minutes, secs = divmod(total, 60)
    return f"{minutes}m {secs}s"
