"""Local corpora: named directories of documents, split into passages and searched like the web.

- ``catalog``: which corpora exist (``DRA_CORPORA``, the indexes in the data directory) and what a run sees;
- ``formats``, ``html``, ``markup``: reading HTML, Markdown, reStructuredText, text and PDF into sections;
- ``passages``: sections into passages with stable ids; ``locator``: their ``corpus://`` URLs and citations;
- ``backend``: the search-backend interface; ``fts5``: its SQLite FTS5 implementation; ``query``: user
  text into a safe FTS5 query; ``snippets``: the snippet of a hit; ``readers``: pooled read connections;
- ``indexer``: incremental indexing of a corpus directory.

The tools (``tools/corpus.py``) and the CLI (``cli/corpus.py``) are built on these.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "Catalog": "catalog",
        "CorpusEntry": "catalog",
        "CorpusIndex": "backend",
        "CorpusSpec": "catalog",
        "Fts5Index": "fts5",
        "catalog_for": "catalog",
        "index_corpus": "indexer",
        "index_path": "catalog",
        "passage_url": "locator",
    },
)
