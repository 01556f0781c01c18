"""The product's vocabulary: agent roles, tool names, evidence kinds, status states, end reasons, halt causes and claim verdicts.

Every module that names one of these facts imports it from here, and the event models type their fields
with these enums, so the published events schema lists every value the code can emit. They are
``StrEnum``s: a member compares and serialises as its plain string.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """Who acts: an agent of the run, or a side call metered under a role of its own."""

    ORCHESTRATOR = "orchestrator"
    RESEARCH_SUBAGENT = "research-subagent"
    EXTRACT_SUBAGENT = "extract-subagent"
    CODING_SUBAGENT = "coding-subagent"
    # Side calls outside an agent's loop, so per-role usage and heartbeat steps describe each agent's own steps.
    TRIAGE = "triage"
    COMPACTION = "compaction"
    # The report gate's judge of the claims no deterministic check can settle (``report/judge.py``).
    CLAIM_JUDGE = "claim-judge"
    # The reply to a SIMPLE turn, the router's second call: metered under TRIAGE with the verdict, and named
    # apart only on its model request (``models.AGENT_HEADER``).
    DIRECT_ANSWER = "direct-answer"
    # The digest's fixed wording put into the report's language, once per language per process
    # (``tasks/wording.py``).
    TRANSLATION = "translation"


SUBAGENT_ROLES = frozenset({Role.RESEARCH_SUBAGENT, Role.EXTRACT_SUBAGENT, Role.CODING_SUBAGENT})


class ToolName(StrEnum):
    """Tools an agent can call: this product's, and the deepagents file and shell tools."""

    WEB_SEARCH = "web_search"
    WEB_FETCH = "web_fetch"
    CORPUS_SEARCH = "corpus_search"
    CORPUS_READ = "corpus_read"
    REMEMBER = "remember"
    QUERY = "query"
    SUBMIT_REPORT = "submit_report"
    REQUEST_CLARIFICATION = "request_clarification"
    WRITE_TODOS = "write_todos"
    PROPOSE_PLAN = "propose_plan"
    TASK = "task"
    READ_FILE = "read_file"
    WRITE_FILE = "write_file"
    EDIT_FILE = "edit_file"
    EXECUTE = "execute"
    LS = "ls"
    GLOB = "glob"
    GREP = "grep"


class EvidenceKind(StrEnum):
    """What an evidence record is: the ``kind`` of a record in the run's evidence store and in state."""

    PAGE = "page"
    SEARCH_RESULT = "search_result"
    SCRIPT = "script"
    # What an MCP tool call returned; its URL is the server's label.
    MCP_RESULT = "mcp_result"
    # A passage of a local corpus; its URL is corpus://<corpus>/<path>#<anchor>.
    CORPUS = "corpus"
    # A snippet the knowledge base returned; its URL is the snippet's original source.
    KNOWLEDGE = "knowledge"
    # A paper's abstract and metadata from a scholarly search (arXiv, PubMed, OpenAlex); its URL is the paper's.
    PAPER = "paper"


class RecordKind(StrEnum):
    """What a durable write records, for the run's ledger of failed writes (``run/recording.py``)."""

    KNOWLEDGE = "knowledge"


class StatusState(StrEnum):
    """The ``state`` of a ``status`` event; ``done`` and ``error`` end a run."""

    DONE = "done"
    ERROR = "error"
    SUBAGENT_START = "subagent_start"
    SUBAGENT_DONE = "subagent_done"
    SUBAGENT_FAILED = "subagent_failed"
    REVISING = "revising"
    WARNING = "warning"
    KEYLESS_SEARCH = "keyless_search"
    MODEL_CALL = "model_call"
    RATE_LIMITED = "rate_limited"
    MODEL_UNAVAILABLE = "model_unavailable"
    BUDGET_SOFT = "budget_soft"
    BUDGET_HALT = "budget_halt"
    RECURSION_LIMIT = "recursion_limit"
    LOOP_DETECTED = "loop_detected"
    LOOP_HALT = "loop_halt"
    RUNAWAY_OUTPUT = "runaway_output"
    RUNAWAY_HALT = "runaway_halt"
    TRIAGE = "triage"
    COMPACTING = "compacting"
    COMPACTED = "compacted"
    STOP_REQUESTED = "stop_requested"
    STEER_RECEIVED = "steer_received"
    MCP_READY = "mcp_ready"
    MCP_ERROR = "mcp_error"
    SANDBOX_RESET = "sandbox_reset"


class EndReason(StrEnum):
    """Why a run ended: the ``reason`` of its final ``status`` (``done`` or ``error``). Which of them are
    halts, and what else each halt is called, is ``stops.StopCause``'s table."""

    REPORT_DELIVERED = "report_delivered"
    AWAITING_CLARIFICATION = "awaiting_clarification"
    DIRECT_ANSWER = "direct_answer"
    REPORT_SALVAGED = "report_salvaged"
    ENDED_WITHOUT_REPORT = "ended_without_report"
    # A halt (``stops.HALT_REASONS``): the run stopped early and a report was assembled from its findings.
    STOPPED_BY_USER = "stopped_by_user"
    BUDGET_EXHAUSTED = "budget_exhausted"
    RECURSION_LIMIT = "recursion_limit"
    LOOP_HALT = "loop_halt"
    RUNAWAY_HALT = "runaway_halt"
    STALLED_AFTER_NUDGES = "stalled_after_nudges"
    # A run error: it comes before every other reason.
    CONFIG_ERROR = "config_error"
    # The user already had the most runs in progress the server allows (DRA_MAX_RUNS_PER_USER).
    TOO_MANY_RUNS = "too_many_runs"
    # The turn's question was empty, blank or longer than DRA_MAX_QUESTION_CHARS: nothing ran.
    INVALID_QUESTION = "invalid_question"
    MODEL_ERROR = "model_error"
    INTERNAL_ERROR = "internal_error"
    # A research turn in which the model called no tool, even after a nudge (it may not support tool calling).
    NO_TOOL_CALLS = "no_tool_calls"
    # A plan left waiting for review past ``plan_review_timeout``: its units were not started.
    PLAN_REVIEW_EXPIRED = "plan_review_expired"


class HaltedBy(StrEnum):
    """What stopped one sub-agent before it finished: the ``halted`` of its ``subagent_findings`` (each is a
    ``stops.StopCause``'s)."""

    BUDGET = "budget"
    LOOP_GUARD = "loop_guard"
    RUNAWAY_GUARD = "runaway_guard"
    STEP_LIMIT = "step_limit"
    USER = "user"


class Ceiling(StrEnum):
    """A run ceiling: the ``reason`` of ``budget_soft`` and ``budget_halt`` (``steps``: soft stage only)."""

    TOOL_CALLS = "tool_calls"
    TOKENS = "tokens"
    TIME = "time"
    COST = "cost"
    # The orchestrator's graph steps (LangGraph's recursion limit, which a client may set per run).
    STEPS = "steps"


class StopMode(StrEnum):
    """How a user's stop request ends a run: wrap up (deliver what is written) or stop now."""

    WRAP_UP = "wrap_up"
    NOW = "now"


class SkillState(StrEnum):
    """The ``state`` of a ``skill`` event."""

    APPLIED = "applied"


class ToolErrorClass(StrEnum):
    """How a failed tool call is classified: the ``error_class`` of a ``tool_result``."""

    PERMANENT = "permanent"
    TRANSIENT = "transient"
    UNKNOWN = "unknown"


class WarningReason(StrEnum):
    """What a ``status: warning`` is about; the run goes on."""

    # A setting that could not be read, a broken skill or custom tool, an unknown corpus, an unusable task name.
    CONFIG = "config"
    COMPACTION_FAILED = "compaction_failed"
    KNOWLEDGE_WRITE_FAILED = "knowledge_write_failed"
    # The claim judge failed, timed out or answered unparseably; those claims keep their deterministic verdicts.
    CLAIM_JUDGE_FAILED = "claim_judge_failed"
    # The claim judge called the planted control claim (a false sentence added to its batch, never to the
    # report) supported: it is unreliable for the run, and none of its verdicts is used.
    CLAIM_JUDGE_UNRELIABLE = "claim_judge_unreliable"
    # The judge called claims supported without naming a passage that shares their content, or with an empty
    # or boilerplate reason: those claims are delivered unchecked.
    CLAIM_VERDICT_UNFOUNDED = "claim_verdict_unfounded"
    # The model wrote tool calls as text (a local server without native tool calls); they ran as tool calls.
    TEXT_TOOL_CALLS = "text_tool_calls"
    # The model's reply had no tool call and no text (it stopped, or was cut off at the output cap); it is
    # asked once more.
    EMPTY_REPLY = "empty_reply"
    # The answer to a plan review was not one valid decision: it was not used, and the plan still waits.
    PLAN_REVIEW_ANSWER = "plan_review_answer"
    # The report is still far outside the length its style asks for after its one revision (``report/length.py``).
    REPORT_LENGTH = "report_length"
    # The digest's wording could not be put into the report's language (the call failed, or its answer was not
    # a usable translation): the digest is in English.
    DIGEST_IN_ENGLISH = "digest_in_english"


class TriageReason(StrEnum):
    """Why the pre-triage reached its verdict: the ``reason`` of ``status: triage``."""

    # The router classified the message (``simple`` or ``research``).
    CLASSIFIED = "classified"
    # The rest fall back to research without asking the router, or after it failed.
    LONG_MESSAGE = "long_message"
    CLARIFICATION_ANSWER = "clarification_answer"
    ROUTER_FAILED = "router_failed"
    ANSWER_FAILED = "answer_failed"
    # The message asks for sources or research (with the assist, also a table or a comparison): research
    # whatever the router would say.
    RESEARCH_REQUEST = "research_request"


class ModelFailure(StrEnum):
    """A retryable model-call failure: the ``reason`` of ``rate_limited`` and ``model_unavailable``, besides a
    server error's ``HTTP 5xx`` (its status code)."""

    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connection error"
    REQUEST_TIMEOUT = "HTTP 408"
    CONFLICT = "HTTP 409"
    TOO_MANY_REQUESTS = "HTTP 429"


class RunawayKind(StrEnum):
    """How a reply ran away: the ``reason`` of ``runaway_output`` and ``runaway_halt``."""

    REPETITION = "repetition"
    LENGTH = "length"


class RevisionReason(StrEnum):
    """What a ``status: revising`` sent back for one revision."""

    SUBAGENT_FINDINGS = "subagent_findings"
    REPORT_QUALITY = "report_quality"
    SCRIPT_ANSWER = "script_answer"


class ScriptStatus(StrEnum):
    """How the coding sub-agent says its script went: the ``status`` of a ``script`` event."""

    OK = "ok"
    FAILED = "failed"


class SandboxProvider(StrEnum):
    """Where code runs: the HTTP sandbox service (``sidecar``) or one of deepagents' hosted sandbox integrations."""

    SIDECAR = "sidecar"
    DAYTONA = "daytona"
    MODAL = "modal"
    E2B = "e2b"
    RUNLOOP = "runloop"


class ClaimVerdict(StrEnum):
    """What the claim check found for one sentence of a delivered report (``report/claims.py``, and the
    judge's ``report/judge.py``)."""

    SUPPORTED = "supported"
    UNSUPPORTED_NUMBER = "unsupported_number"
    UNSUPPORTED_QUOTE = "unsupported_quote"
    # A name of the claim (a person, place, organisation, work or title) is in none of its cited texts.
    UNSUPPORTED_NAME = "unsupported_name"
    # The cited text says the opposite: another direction around the same figure, or the judge's verdict.
    CONTRADICTED = "contradicted"
    # The judge found nothing in the cited passages that states the claim.
    NOT_SUPPORTED = "not_supported"
    SOURCE_NOT_READ = "source_not_read"
    CONFLICTING = "conflicting"
    UNCITED_NUMBER = "uncited_number"
    # Nothing checked it: no figure, quote or name to look up in a cited text that was read, and no judge
    # verdict that holds. Neither supported nor flagged; it counts against the report's coverage.
    UNCHECKED = "unchecked"

    @property
    def flags(self) -> bool:
        """Whether the claim is delivered marked ``[unverified]``: a check found it wrong or unbacked."""
        return self not in (ClaimVerdict.SUPPORTED, ClaimVerdict.UNCHECKED)


class ClaimMethod(StrEnum):
    """How a claim's verdict was decided: the ``decided_by`` of a claim record."""

    # Its figures and quoted phrases were looked up in the cited text (names and direction checked too).
    FIGURES_AND_QUOTES = "figures_and_quotes"
    # It has no figure or quote: its names, and the direction of its comparisons, were checked.
    NAMES_AND_DIRECTION = "names_and_direction"
    # The utility model judged it against the nearest passages of its cited sources.
    JUDGED = "judged"
    # Nothing in it could be checked (no figure, quote or name, and no judge verdict that holds), or none of
    # its sources was read: its verdict is ``unchecked`` (or ``source_not_read``).
    NOT_CHECKED = "not_checked"


class Outcome(StrEnum):
    """How good a finished run's answer is, for a caller to act on: the ``outcome`` of the end status, the
    ``usage`` event and the thread state (``lifecycle/outcome.py`` decides it)."""

    ANSWERED = "answered"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"
    PARTIAL = "partial"
    PARTIAL_RETRIEVAL = "partial_retrieval"
    BUDGET_EXHAUSTED = "budget_exhausted"
    RECORDING_FAILED = "recording_failed"


# What a frontend says of a run's end, per end reason: the end line's words. The events schema publishes them
# with each value, so clients show the same words.
END_WORDS: dict[EndReason, str] = {
    EndReason.REPORT_DELIVERED: "Report delivered",
    EndReason.AWAITING_CLARIFICATION: "Waiting for your answers",
    EndReason.DIRECT_ANSWER: "Answered directly, without research",
    EndReason.REPORT_SALVAGED: ("The research stopped before the report was delivered; a partial report was salvaged"),
    EndReason.ENDED_WITHOUT_REPORT: "The run ended without a report",
    EndReason.STOPPED_BY_USER: "Stopped at your request; the report covers what was found so far",
    EndReason.BUDGET_EXHAUSTED: "Stopped: the budget ran out; the report covers what was found so far",
    EndReason.RECURSION_LIMIT: "Stopped near the step limit; the report covers what was found so far",
    EndReason.LOOP_HALT: "Stopped: the agent kept repeating the same call",
    EndReason.RUNAWAY_HALT: "Stopped: the model's output ran away",
    EndReason.STALLED_AFTER_NUDGES: "Stopped: the agent stalled; the report covers what was found so far",
    EndReason.CONFIG_ERROR: "The run could not start: a setting is wrong",
    EndReason.TOO_MANY_RUNS: "The run could not start: you already have the most runs in progress this server allows",
    EndReason.INVALID_QUESTION: "The run could not start: the question is empty or too long",
    EndReason.MODEL_ERROR: "The model could not be used",
    EndReason.INTERNAL_ERROR: "An internal error stopped the run",
    EndReason.NO_TOOL_CALLS: "The model called no tool, so no research was done",
    EndReason.PLAN_REVIEW_EXPIRED: "The plan waited past its review time, so its research was not started",
}

# What a frontend tells a person about the answer, per outcome: the notice under the end line (``answered``
# needs none). The events schema publishes it with each value, so clients show the same words.
OUTCOME_NOTICES: dict[Outcome, str] = {
    Outcome.ANSWERED: "",
    Outcome.PARTIAL: (
        "Some claims did not check out against the text they cite (marked [unverified]), or the report is incomplete."
    ),
    Outcome.PARTIAL_RETRIEVAL: (
        "Some sources could not be reached, so the report was written without them; retrying later may help."
    ),
    Outcome.INSUFFICIENT_EVIDENCE: (
        "The evidence found does not answer the question; try narrowing it or adding sources."
    ),
    Outcome.BUDGET_EXHAUSTED: (
        "A limit ended the run, so the report covers only what was found; re-run with a higher limit for more."
    ),
    Outcome.RECORDING_FAILED: (
        "The run's memory (task, decisions or knowledge base) was not saved, so a follow-up will not see it; "
        "re-run to save it."
    ),
}


# The first line of the one user message that answers a turn's clarifying questions (the CLI and the web UI
# send it): a user turn, but no new question.
CLARIFICATION_HEADER = "Answers to your clarifying questions:"

# The name of a message the harness wrote for the model only (``conversation.py``): clients that render
# ``messages`` hide it by this name, this package's own CLI included.
HARNESS_MESSAGE_NAME = "dra_harness"
