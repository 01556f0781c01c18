"""What ``/proc`` says of a process: its ``stat`` fields, and the CPU seconds of its process tree (Linux only)."""

from __future__ import annotations

import os
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def stat_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` from its state field on (the command name may hold spaces), or None once gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU seconds of ``root`` and all its living descendants, including what their exited
    children used (``cutime``/``cstime``, counted once they are reaped)."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or (fields := stat_fields(int(entry.name))) is None:
            continue
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        # Fields 14-17 of stat(5), counted from the state field (3): utime, stime, cutime, cstime.
        times[pid] = sum(int(tick) for tick in fields[11:15]) / CLOCK_TICKS
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo.extend(children.get(pid, ()))
    return total
