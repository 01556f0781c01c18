"""The interface every embedder implements.

Contract of an ``Embedder``:
- ``identity`` names the model and its dimension (``minilm-l6-v2-int8/384``); vectors of two identities
  are never compared, so an index records the identity it was embedded with and is embedded again when
  the deployment's embedder changes;
- ``embed_documents(texts)`` and ``embed_query(text)`` return unit-length float32 rows (``(len(texts), dims)``
  and ``(dims,)``), so a dot product is the cosine; an empty list gives a ``(0, dims)`` array;
- a failure (the model file missing, the endpoint down or answering nonsense) raises ``EmbeddingFailed``
  with a one-line reason a person can act on; callers fall back to keyword search and say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class EmbeddingFailed(Exception):
    """The embedder could not embed; the message says why in one line."""


class Embedder(Protocol):
    @property
    def identity(self) -> str: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` (float32) with every row scaled to length 1 (an all-zero row stays zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)
