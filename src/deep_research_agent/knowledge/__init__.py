"""The user's knowledge base across runs: entries in the LangGraph store, per user and dataset.

``namespace`` says whose entries a run reaches, ``base`` stores and retrieves them, ``tools`` gives the
research sub-agents ``remember`` and ``query``, and ``findings`` stores a delivered report's findings when
``remember_findings`` is on; ``cli/kb.py`` lists, exports and deletes a dataset for ``./run.sh kb``.
"""

from typing import TYPE_CHECKING

from ..domain.exports import lazy_exports

if TYPE_CHECKING:
    from .base import MAX_ENTRY_CHARS, KnowledgeBase, KnowledgeEntry, Retrieval, rank_lexically
    from .findings import remember_findings
    from .namespace import DEFAULT_DATASET, KNOWLEDGE_NAMESPACE, knowledge_namespace
    from .tools import build_knowledge_tools

__all__ = [
    "DEFAULT_DATASET",
    "KNOWLEDGE_NAMESPACE",
    "KnowledgeBase",
    "KnowledgeEntry",
    "MAX_ENTRY_CHARS",
    "Retrieval",
    "build_knowledge_tools",
    "knowledge_namespace",
    "rank_lexically",
    "remember_findings",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
