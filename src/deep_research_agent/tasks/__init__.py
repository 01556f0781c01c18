"""Named, resumable tasks: a task's memory in the LangGraph store, its view, its decisions and its re-run diff."""

from typing import TYPE_CHECKING

from ..domain.exports import lazy_exports

if TYPE_CHECKING:
    from .diff import task_diff
    from .middleware import TaskMiddleware, finish_task
    from .store import TaskRecord, list_tasks, task_of

__all__ = [
    "TaskMiddleware",
    "TaskRecord",
    "finish_task",
    "list_tasks",
    "task_diff",
    "task_of",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
