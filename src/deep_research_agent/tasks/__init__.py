"""Named, resumable tasks: a task's memory in the LangGraph store, its view, its decisions and its re-run diff."""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "TaskMiddleware": "middleware",
        "TaskRecord": "store",
        "finish_task": "middleware",
        "list_tasks": "store",
        "task_diff": "diff",
        "task_of": "store",
    },
)
