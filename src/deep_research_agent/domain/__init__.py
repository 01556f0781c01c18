"""The shared types and vocabulary every layer speaks; it imports no other package of the product.

- ``names``: the vocabulary (roles, tool names, evidence kinds, status states, end reasons, halt causes,
  claim verdicts, outcomes); ``internal_names``: the machinery's names that never reach a reader;
- ``findings``: a research unit's hand-over; ``claims``: citation and claim verdicts and their counts;
  ``usage``: what a role spent; ``task_diff``: a figure that moved between runs of a task; ``stops``:
  why a run or an agent stops (``StopCause`` and the table of every name of a stop);
- ``errors``: the classified tool failure and its one wording; ``secrets``: scrubbing known secrets;
- ``clock``, ``urls``, ``addresses``, ``retry_after``, ``sandbox_providers``: small rules several layers apply;
- ``conversation``: the harness's messages and the user's turns; ``per_role``: the base of per-agent middleware;
- ``plan`` and ``plan_answer``: a reviewed plan, its rules and the reviewer's answer read strictly; ``questions``:
  why a question cannot be researched, the one check every entrance applies.
"""

from typing import TYPE_CHECKING

from .exports import lazy_exports

if TYPE_CHECKING:
    from .claims import CitationRecord, CitationSummary, ClaimRecord, ClaimSource, ClaimSummary
    from .errors import ToolFailure, tool_error_text
    from .findings import Finding, Findings
    from .names import (
        Ceiling,
        ClaimMethod,
        ClaimVerdict,
        EndReason,
        EvidenceKind,
        HaltedBy,
        Outcome,
        Role,
        StatusState,
        StopMode,
        ToolErrorClass,
        ToolName,
    )
    from .stops import HALT_REASONS, RunError, StopCause
    from .task_diff import MovedFigure
    from .usage import CACHED_TOKEN_WEIGHT, RoleUsage

__all__ = [
    "CACHED_TOKEN_WEIGHT",
    "HALT_REASONS",
    "Ceiling",
    "CitationRecord",
    "CitationSummary",
    "ClaimMethod",
    "ClaimRecord",
    "ClaimSource",
    "ClaimSummary",
    "ClaimVerdict",
    "EndReason",
    "EvidenceKind",
    "Finding",
    "Findings",
    "HaltedBy",
    "MovedFigure",
    "Outcome",
    "Role",
    "RoleUsage",
    "RunError",
    "StatusState",
    "StopCause",
    "StopMode",
    "ToolErrorClass",
    "ToolFailure",
    "ToolName",
    "tool_error_text",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
