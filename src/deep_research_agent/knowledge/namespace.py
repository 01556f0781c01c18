"""Whose knowledge base a run reads and writes: one LangGraph store namespace per user and dataset.

Contract:
- ``knowledge_namespace(user, dataset)`` is ``("deep_research_agent", "knowledge", <user>, <dataset>)``,
  each label escaped (``run.owner.namespace_label``) so any user id or dataset name is a valid store label;
- the user is ``run.owner.run_user``: the authenticated identity when there is one, else the run's
  ``user_id`` configurable, else ``anonymous``;
- so one user's entries are never under another user's namespace, and no search prefix of one user
  reaches another's (the user label is a full label, not a prefix of one).
"""

from __future__ import annotations

from ..run.owner import namespace_label

KNOWLEDGE_NAMESPACE = ("deep_research_agent", "knowledge")
DEFAULT_DATASET = "main"


def knowledge_namespace(user: str, dataset: str = DEFAULT_DATASET) -> tuple[str, ...]:
    return (*KNOWLEDGE_NAMESPACE, namespace_label(user), namespace_label(dataset or DEFAULT_DATASET))


def user_prefix(user: str) -> tuple[str, ...]:
    """The prefix of every dataset of one user."""
    return (*KNOWLEDGE_NAMESPACE, namespace_label(user))
