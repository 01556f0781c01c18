"""Whose knowledge base a run reads and writes: one LangGraph store namespace per user and dataset.

Contract:
- ``knowledge_namespace(user, dataset)`` is ``("deep_research_agent", "knowledge", <user>, <dataset>)``,
  each label escaped (``escape_label``) so any user id or dataset name is a valid store label (the store
  refuses periods and empty labels); ``unescape_label`` gives the original back;
- the user is ``run.owner.run_user``: the authenticated identity when there is one, else the run's
  ``user_id`` configurable, else ``anonymous``;
- so one user's entries are never under another user's namespace, and no search prefix of one user
  reaches another's (the user label is a full label, not a prefix of one).
"""

from __future__ import annotations


KNOWLEDGE_NAMESPACE = ("deep_research_agent", "knowledge")
DEFAULT_DATASET = "main"


def escape_label(value: str) -> str:
    """``value`` as a store namespace label: ``%`` and ``.`` percent-encoded, empty as ``%00``."""
    return value.replace("%", "%25").replace(".", "%2E") if value else "%00"


def unescape_label(label: str) -> str:
    return "" if label == "%00" else label.replace("%2E", ".").replace("%25", "%")


def knowledge_namespace(user: str, dataset: str = DEFAULT_DATASET) -> tuple[str, ...]:
    return (*KNOWLEDGE_NAMESPACE, escape_label(user), escape_label(dataset or DEFAULT_DATASET))


def user_prefix(user: str) -> tuple[str, ...]:
    """The prefix of every dataset of one user."""
    return (*KNOWLEDGE_NAMESPACE, escape_label(user))
