"""The user's knowledge base across runs: entries in the LangGraph store, per user and dataset.

``namespace`` says whose entries a run reaches, ``base`` stores and retrieves them, ``tools`` gives the
research sub-agents ``remember`` and ``query``, and ``findings`` stores a delivered report's findings when
``remember_findings`` is on; ``cli/kb.py`` lists, exports and deletes a dataset for ``./run.sh kb``. Exports
load lazily, so the client reads ``namespace`` without loading the agent stack.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "DEFAULT_DATASET": "namespace",
        "KNOWLEDGE_NAMESPACE": "namespace",
        "MAX_ENTRY_CHARS": "base",
        "KnowledgeBase": "base",
        "KnowledgeEntry": "base",
        "Retrieval": "base",
        "build_knowledge_tools": "tools",
        "knowledge_namespace": "namespace",
        "rank_lexically": "base",
        "remember_findings": "findings",
    },
)
