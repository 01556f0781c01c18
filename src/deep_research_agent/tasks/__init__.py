"""Named, resumable tasks: a task's memory in the LangGraph store, its view, its decisions and its re-run diff."""

from .diff import task_diff
from .middleware import finish_task, TaskMiddleware
from .store import list_tasks, task_of, TaskRecord

__all__ = [
    "TaskMiddleware",
    "TaskRecord",
    "finish_task",
    "list_tasks",
    "task_diff",
    "task_of",
]
