"""One run's shared stores (usage, evidence, control, recording), found by the run id by every agent of the run.

Split by concern so each store states its own contract; ``registry`` opens and closes them per run,
``boundary`` is how a middleware hook or a tool receives its run (looked up once, passed down),
``archive`` keeps a finished run's evidence texts in the LangGraph store, ``owner`` names the run's user
and where a client's store items for it land, ``admission`` holds each user to a number of runs in
progress through the LangGraph store, across every server instance that shares it, and ``ledger`` keeps
a live run's stores there too, for the process that resumes the run after its own died.
"""

from typing import TYPE_CHECKING

from ..domain.exports import lazy_exports

if TYPE_CHECKING:
    from .admission import (
        ACTIVE_RUNS_NAMESPACE,
        Admission,
        RunSlot,
        admit,
        keep_slot,
        owner_key,
        release_slot,
        start_keeping,
    )
    from .archive import EVIDENCE_NAMESPACE, archive_evidence, evidence_namespace, evidence_summaries, stored_evidence
    from .boundary import run_hook, run_tool
    from .control import Halt, RunControl
    from .ledger import (
        LEDGER_NAMESPACE,
        adopt_paused_usage,
        forget_ledger,
        keep_paused_usage,
        kept_in_ledger,
        restore_ledger,
        save_ledger,
        unsaved_records,
    )
    from .owner import ANONYMOUS_USER, client_namespaces, run_owner, run_user
    from .recording import RecordingLedger, note_recording_failure, record_ops
    from .registry import NoRunError, Run, bound_run, close_run, current_run, is_open, run_key
    from .usage import UsageMeter

__all__ = [
    "ACTIVE_RUNS_NAMESPACE",
    "ANONYMOUS_USER",
    "Admission",
    "EVIDENCE_NAMESPACE",
    "note_recording_failure",
    "record_ops",
    "Halt",
    "LEDGER_NAMESPACE",
    "NoRunError",
    "RecordingLedger",
    "Run",
    "RunControl",
    "RunSlot",
    "UsageMeter",
    "admit",
    "archive_evidence",
    "bound_run",
    "client_namespaces",
    "close_run",
    "current_run",
    "evidence_namespace",
    "evidence_summaries",
    "adopt_paused_usage",
    "forget_ledger",
    "is_open",
    "keep_slot",
    "keep_paused_usage",
    "kept_in_ledger",
    "owner_key",
    "release_slot",
    "restore_ledger",
    "run_hook",
    "run_key",
    "run_owner",
    "run_tool",
    "run_user",
    "save_ledger",
    "start_keeping",
    "stored_evidence",
    "unsaved_records",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
