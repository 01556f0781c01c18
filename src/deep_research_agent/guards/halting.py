"""How a guard stops an agent: the orchestrator halts the run, a sub-agent hands back what it found.

Contract: ``stop_agent`` is the last message of any agent a guard (or the user's stop request) stops.
- The orchestrator: the run is halted with the given ``Halt``, so the lifecycle ends it with a report
  assembled from the findings; the message is a short notice.
- A sub-agent: its run control remembers what stopped that ``task`` call (the ``halted`` of its
  ``subagent_findings``: the halt cause's ``halted_by``), and its hand-back (``handover.contract.hand_back``)
  is staged for the hand-over and is its final message.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage

from ..domain.conversation import harness_note
from ..domain.names import Role
from ..handover.contract import hand_back
from ..protocol.sender import current_sender
from ..run import Halt, Run


def stop_agent(run: Run, role: str, messages: Sequence[AnyMessage], *, halt: Halt, why: str | None = None) -> AIMessage:
    """The last message of an agent of ``run`` a guard stopped; halts the run when that agent is the orchestrator.
    ``why`` says what stopped a sub-agent in its hand-back, when more than the cause's wording."""
    if role == Role.ORCHESTRATOR:
        run.control.halt_run(halt)
        return harness_note(f"(Stopped by {halt.cause.wording}: {halt.detail.rstrip('.')}.)")
    findings = hand_back(messages, cause=halt.cause, why=why)
    task_id = current_sender.get().task_id
    if task_id:
        # Only the orchestrator stalls, so every cause that reaches a sub-agent names its ``halted``.
        if (halted_by := halt.cause.halted_by) is not None:
            run.control.mark_task_halted(task_id, halted_by)
        run.evidence.stage_findings(task_id, findings)
    return harness_note(findings.to_json())
