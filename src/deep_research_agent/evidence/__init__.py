"""What a run read, kept to check the report against: the evidence store, its text index and the figures in it.

- ``store``: the run's evidence records (pages, snippets, script output, MCP results, corpus passages,
  knowledge snippets), its sources and hand-overs, and the report's verdicts once delivered;
- ``text``: each record's text normalised and indexed for quote and figure look-ups;
- ``figures``: the figures a text states (numbers with units, years, dates) and when one supports another.
"""

from .figures import Figure, figures_in
from .store import CorpusLocation, EvidenceRecord, EvidenceStore, HandOver, SourceRecord
from .text import EvidenceLibrary, EvidenceText

__all__ = [
    "CorpusLocation",
    "EvidenceLibrary",
    "EvidenceRecord",
    "EvidenceStore",
    "EvidenceText",
    "Figure",
    "HandOver",
    "SourceRecord",
    "figures_in",
]
