"""Names and paths that belong to the run's machinery, never to the reader's world.

Two gates share them: a sub-agent finding's ``source`` must be a URL or a source label, not one of
these, and the delivered report must not mention them. Keeping one list means a new tool or sandbox
root is taught to both gates at once.
"""

from __future__ import annotations

import re

from .names import SUBAGENT_ROLES, ToolName

# Tools the agents can call. Names with an underscore never occur in ordinary prose; the bare words
# (``task``, ``execute``, ``ls``, ``glob``, ``grep``) do, so they only count when they stand alone or
# are called.
TOOL_NAMES = frozenset(ToolName)
UNDERSCORE_TOOL_NAMES = frozenset(name for name in TOOL_NAMES if "_" in name)
BARE_TOOL_NAMES = TOOL_NAMES - UNDERSCORE_TOOL_NAMES

# deepagents' general-purpose sub-agent is not on the roster, but a model may still name it.
AGENT_ROLE_NAMES = frozenset({*SUBAGENT_ROLES, "general-purpose"})

_alternation = "|".join(sorted(UNDERSCORE_TOOL_NAMES, key=len, reverse=True))
UNDERSCORE_TOOL_RE = re.compile(rf"\b(?:{_alternation})\b")
ROLE_RE = re.compile(r"\b(?:research|extract|coding)[- ]?sub-?agents?\b", re.IGNORECASE)
SNAKE_CALL_RE = re.compile(r"\b[a-z][a-z0-9]*(?:_+[a-z0-9]+)+\s*\(")
BARE_TOOL_CALL_RE = re.compile(rf"\b(?:{'|'.join(sorted(BARE_TOOL_NAMES))})\s*\(")
SNAKE_IDENTIFIER_RE = re.compile(r"[a-z][a-z0-9]*(?:_+[a-z0-9]+)+")

# Directories of the sandbox and the agent's virtual filesystem.
SANDBOX_ROOTS = ("workspace", "large_tool_results", "conversation_history", "memories", "skills")
_GENERIC_ROOTS = ("tmp", "mnt", "home", "Users", "var", "opt", "etc", "root", "data")
_PATH_TAIL = r"""[^\s)\]\[`'"<>,;]*"""
# The lookbehind keeps paths inside URLs ("https://host/workspace/x") and fractions ("km/h") out.
_NOT_AFTER = r"(?<![\w/.:~-])"
SANDBOX_PATH_RE = re.compile(rf"{_NOT_AFTER}/(?:{'|'.join(SANDBOX_ROOTS)})(?:/{_PATH_TAIL})?")
LOCAL_PATH_RE = re.compile(
    rf"{_NOT_AFTER}/(?:{'|'.join(_GENERIC_ROOTS)})/{_PATH_TAIL}"
    rf"|{_NOT_AFTER}\.{{1,2}}/[\w.-]+(?:/[\w.-]+)*"
    rf"|(?<![\w])~/[\w.-]+(?:/[\w.-]+)*"
    r"|\b[A-Za-z]:\\[^\s)\]`'\"<>,;]*"
    r"|\bfile:/{1,3}\S+"
)

_FILE_START_RE = re.compile(r"^(?:/(?!/)|\.{1,2}[\\/]|~[\\/]|[A-Za-z]:[\\/]|\\\\|file:)")
_DATA_FILE_RE = re.compile(
    r"^[\w.-]+\.(?:csv|tsv|json|jsonl|txt|md|xlsx?|parquet|py|xml|log|db|sqlite)$", re.IGNORECASE
)


def is_file_path(text: str) -> bool:
    """True when ``text`` as a whole is a local file path or a bare data-file name."""
    stripped = text.strip().strip("`")
    return bool(_FILE_START_RE.match(stripped) or _DATA_FILE_RE.match(stripped))


def names_internal_tool(text: str) -> bool:
    """True when ``text`` names a tool or sub-agent, or shows a function call (``snake_case(...)``)."""
    stripped = text.strip().strip("`").strip()
    lowered = stripped.lower()
    return bool(
        lowered in TOOL_NAMES
        or lowered in AGENT_ROLE_NAMES
        or SNAKE_IDENTIFIER_RE.fullmatch(stripped)
        or UNDERSCORE_TOOL_RE.search(lowered)
        or ROLE_RE.search(stripped)
        or SNAKE_CALL_RE.search(stripped)
        or BARE_TOOL_CALL_RE.search(lowered)
    )
