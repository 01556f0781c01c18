"""Named tasks: where a task's memory lives in the LangGraph store, and who it belongs to.

A task is a thread whose metadata carries ``task`` (its name) and ``user_id``; clients find it by that
metadata (``cli/ask.py``). What the task has learnt lives in the store, per user, so the graph honours the
name on whichever thread a run arrives:
- ``task_namespace(user)`` holds one item per task (key: the name): the ``TaskRecord`` below;
- ``decision_namespace(user, name)`` holds the task's decisions, one item each;
- the evidence texts stay where every run archives them (``run/archive.py``, by thread and run), and the
  record lists the runs whose texts belong to the task.

Contract: ``task_of(config)`` is the run's task name (``configurable.task``), or None; a name is 1-100
characters once trimmed. The run's user is ``run.owner.run_user``: the authenticated user when the server
has auth, else ``configurable.user_id``, else ``anonymous``. Reads that fail return nothing (a task that
cannot be read starts fresh, logged); writes go through ``run/recording.py``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..run.owner import namespace_label

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from ..run.failures import RunFailures

logger = logging.getLogger(__name__)

TASKS_NAMESPACE = ("deep_research_agent", "tasks")
DECISIONS_NAMESPACE = ("deep_research_agent", "decisions")
MAX_TASK_NAME = 100


class TaskNameError(ValueError):
    """``configurable.task`` is not a usable name."""


def task_of(config: dict[str, Any] | None) -> str | None:
    raw = ((config or {}).get("configurable") or {}).get("task")
    if raw is None or raw == "":
        return None
    name = " ".join(str(raw).split())
    if not name or len(name) > MAX_TASK_NAME:
        raise TaskNameError(f"configurable.task must be 1-{MAX_TASK_NAME} characters, got {len(name)}")
    return name


def task_namespace(user: str) -> tuple[str, ...]:
    return (*TASKS_NAMESPACE, namespace_label(user))


def decision_namespace(user: str, task: str) -> tuple[str, ...]:
    return (*DECISIONS_NAMESPACE, namespace_label(user), namespace_label(task))


class TaskSource(BaseModel):
    url: str
    title: str = ""
    sha256: str
    retrieved_at: str
    thread_id: str
    run_id: str
    evidence_id: str


class TaskFinding(BaseModel):
    finding: str
    evidence: str = ""
    source: str


MAX_DIGESTS = 50


class DigestEntry(BaseModel):
    """One scheduled run of a task, as its Watching list shows it (newest last; at most ``MAX_DIGESTS``)."""

    run_id: str
    thread_id: str
    finished_at: str
    status: str
    outcome: str | None = None
    material: bool = False
    since: str | None = None
    failed: bool = False
    headline: str = Field(default="", description="One line: what changed, nothing material, or why it failed.")
    cost_usd: float = 0.0


class TaskRecord(BaseModel):
    """What a task keeps between runs; ``sources`` are the latest version of every page it read."""

    name: str
    user_id: str
    thread_id: str
    created_at: str
    last_run_at: str
    last_run_id: str
    runs: int = 0
    status: str = Field(default="", description="The last run's end reason.")
    outcome: str | None = None
    cost_usd: float = 0.0
    questions: list[str] = Field(default_factory=list)
    findings: list[TaskFinding] = Field(default_factory=list)
    gaps: list[str] = Field(default_factory=list)
    sources: list[TaskSource] = Field(default_factory=list)
    last_report: str = ""
    last_delivered_at: str = Field(default="", description="When a run of the task last delivered a report.")
    digests: list[DigestEntry] = Field(default_factory=list, description="Its scheduled runs, newest last.")


async def load_task(store: BaseStore | None, user: str, name: str) -> TaskRecord | None:
    if store is None:
        return None
    try:
        item = await store.aget(task_namespace(user), name)
        return TaskRecord.model_validate(item.value) if item is not None else None
    except Exception:  # noqa: BLE001 - an unreadable task starts fresh rather than failing the run
        logger.exception("could not read task %r; it starts fresh", name)
        return None


async def task_digests(store: BaseStore | None, user: str, name: str) -> list[DigestEntry]:
    """The scheduled runs of ``user``'s task ``name``, newest last; none for a task not (yet) stored."""
    record = await load_task(store, user, name)
    return list(record.digests) if record else []


async def save_task(store: BaseStore | None, record: TaskRecord, *, failures: RunFailures) -> bool:
    """Write the task's record; True only when the store confirmed it (else a recording failure in ``failures``)."""
    # Loaded here: the records and their namespace serve clients that only read them (``./run.sh tasks``),
    # which need not load the store's write path.
    from langgraph.store.base import PutOp

    from ..run.recording import record_ops

    op = PutOp(task_namespace(record.user_id), record.name, record.model_dump(mode="json"), index=False)
    return await record_ops(store, [op], what="task record", failures=failures)


async def list_tasks(store: BaseStore, user: str) -> list[TaskRecord]:
    items = await store.asearch(task_namespace(user), limit=1000)
    return sorted((TaskRecord.model_validate(item.value) for item in items), key=lambda r: r.last_run_at, reverse=True)
