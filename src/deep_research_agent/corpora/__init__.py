"""Local corpora: named directories of documents, split into passages and searched like the web.

- ``catalog``: which corpora exist (``DRA_CORPORA``, the indexes in the data directory) and what a run sees;
- ``formats``, ``html``, ``markup``: reading HTML, Markdown, reStructuredText, text and PDF into sections;
- ``passages``: sections into passages with stable ids; ``locator``: their ``corpus://`` URLs and citations;
- ``backend``: the search-backend interface; ``fts5``: its SQLite FTS5 implementation; ``query``: user
  text into a safe FTS5 query; ``snippets``: the snippet of a hit; ``readers``: pooled read connections;
- ``indexer``: incremental indexing of a corpus directory.

The tools (``tools/corpus.py``) and the CLI (``cli/corpus.py``) are built on these.
"""

from typing import TYPE_CHECKING

from ..domain.exports import lazy_exports

if TYPE_CHECKING:
    from .backend import CorpusIndex
    from .catalog import Catalog, CorpusEntry, catalog_for, index_path
    from .fts5 import Fts5Index
    from .indexer import index_corpus
    from .locator import passage_url

__all__ = [
    "Catalog",
    "CorpusEntry",
    "CorpusIndex",
    "Fts5Index",
    "catalog_for",
    "index_corpus",
    "index_path",
    "passage_url",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
