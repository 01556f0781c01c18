"""One run's shared stores (usage, evidence, control, recording), found by the run id by every agent of the run.

Split by concern so each store states its own contract; ``registry`` opens and closes them per run, and
``archive`` keeps a finished run's evidence texts in the LangGraph store.
"""

from .archive import EVIDENCE_NAMESPACE, archive_evidence, evidence_namespace, evidence_summaries, stored_evidence
from .control import Halt, RunControl
from .evidence import EvidenceRecord, EvidenceStore, HandOver, SourceRecord
from .recording import FailedWrite, RecordingLedger
from .registry import NoRunError, Run, bound_run, close_run, current_run, is_open, run_key
from .usage import CACHED_TOKEN_WEIGHT, RoleUsage, UsageMeter

__all__ = [
    "CACHED_TOKEN_WEIGHT",
    "EVIDENCE_NAMESPACE",
    "EvidenceRecord",
    "EvidenceStore",
    "FailedWrite",
    "Halt",
    "HandOver",
    "NoRunError",
    "Run",
    "RecordingLedger",
    "RoleUsage",
    "RunControl",
    "SourceRecord",
    "UsageMeter",
    "archive_evidence",
    "bound_run",
    "close_run",
    "current_run",
    "evidence_namespace",
    "evidence_summaries",
    "is_open",
    "run_key",
    "stored_evidence",
]
