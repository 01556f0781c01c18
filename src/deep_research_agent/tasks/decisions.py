"""The task's decisions log: ``record_decision(text, why)`` and ``search_decisions(query)`` for the orchestrator.

Contract:
- a decision belongs to the run's task (``configurable.task``) and user; without a task both tools answer
  a permanent tool error that says so;
- ``record_decision`` counts only when the store confirms the write: it then answers "Decision recorded"
  with the decision's id; a write that fails answers a tool error saying it was NOT recorded, and is a
  recording failure of the run (``run/recording.py``), so the run's outcome is ``recording_failed``;
- ``search_decisions`` ranks the task's decisions by how many of the query's words they share (text and
  why), newest first among equals, at most ``SEARCH_LIMIT``; an empty log says it is empty.
  Lexical, not the store's ``query=``: the in-memory store without an index ignores the query.
"""

from __future__ import annotations

import re
import uuid

from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from langgraph.store.base import PutOp

from ..domain.clock import utc_now_iso
from ..domain.errors import tool_error_text
from ..domain.names import ToolErrorClass
from ..run import Run, run_tool
from ..run.owner import run_user
from ..run.recording import record_ops
from .store import TaskNameError, decision_namespace, task_of

RECORD_DECISION = "record_decision"
SEARCH_DECISIONS = "search_decisions"
SEARCH_LIMIT = 10
MAX_DECISION_CHARS = 2000
_WORD = re.compile(r"\w+")


def _task(runtime: ToolRuntime, tool_name: str) -> tuple[str, str] | str:
    try:
        name = task_of(runtime.config)
    except TaskNameError as exc:
        return tool_error_text(tool_name, ToolErrorClass.PERMANENT, str(exc))
    if name is None:
        return tool_error_text(
            tool_name, ToolErrorClass.PERMANENT, "this run has no task (configurable.task), so it keeps no decisions."
        )
    return run_user(runtime.config), name


@tool(RECORD_DECISION)
@run_tool
async def record_decision(run: Run, text: str, why: str, runtime: ToolRuntime) -> str:
    """Record a decision about this task (scope, method, which source to trust) and why, for later runs.

    Args:
        text: the decision, one self-contained sentence.
        why: the reason for it.
    """
    found = _task(runtime, RECORD_DECISION)
    if isinstance(found, str):
        return found
    user, name = found
    text, why = " ".join(text.split()), " ".join(why.split())
    if not text or len(text) + len(why) > MAX_DECISION_CHARS:
        return tool_error_text(
            RECORD_DECISION,
            ToolErrorClass.PERMANENT,
            f"give the decision in 1-{MAX_DECISION_CHARS} characters, text and why together.",
        )
    decision_id = f"dec-{uuid.uuid4().hex[:12]}"
    run_id = (runtime.config.get("configurable") or {}).get("run_id")
    value = {"id": decision_id, "text": text, "why": why, "recorded_at": utc_now_iso(), "run_id": run_id}
    if not await record_ops(
        runtime.store,
        [PutOp(decision_namespace(user, name), decision_id, value, index=False)],
        what="decision",
        failures=run.failures,
    ):
        return tool_error_text(
            RECORD_DECISION,
            ToolErrorClass.TRANSIENT,
            "the decision was NOT recorded: the store refused the write. Do not rely on it in later runs.",
        )
    return f"Decision recorded ({decision_id}): {text}"


@tool(SEARCH_DECISIONS)
async def search_decisions(query: str, runtime: ToolRuntime) -> str:
    """Find this task's earlier decisions that bear on ``query``.

    Args:
        query: words to look for in the decisions and their reasons.
    """
    found = _task(runtime, SEARCH_DECISIONS)
    if isinstance(found, str):
        return found
    decisions = await task_decisions(runtime.store, *found)
    if not decisions:
        return "No decisions recorded for this task yet."
    words = {w.lower() for w in _WORD.findall(query)}
    scored = [(len(words & {w.lower() for w in _WORD.findall(f"{d['text']} {d['why']}")}), d) for d in decisions]
    ranked = sorted((s for s in scored if s[0] or not words), key=lambda s: (s[0], s[1]["recorded_at"]), reverse=True)
    if not ranked:
        return f"No decision of this task mentions {query!r} ({len(decisions)} recorded)."
    return "\n".join(f"- [{d['recorded_at']}] {d['text']} (why: {d['why']})" for _, d in ranked[:SEARCH_LIMIT])


async def task_decisions(store, user: str, name: str) -> list[dict]:
    """Every decision of a task, oldest first; empty when there is no store."""
    if store is None:
        return []
    items = await store.asearch(decision_namespace(user, name), limit=1000)
    return sorted((item.value for item in items), key=lambda d: d["recorded_at"])
