"""An embedding model served by the user's OpenAI-compatible endpoint (``/v1/embeddings``): llama.cpp's
``llama-server --embeddings``, vLLM, Ollama, or a hosted API.

Built on langchain-openai's ``OpenAIEmbeddings`` (the OpenAI wire format, retries, batching), with the
context-length check off: that check tokenizes with tiktoken, whose encodings are downloaded at run time,
and a local model's tokenizer is not OpenAI's anyway. Vectors are scaled to unit length here, since not
every server normalises them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .embedder import EmbeddingFailed, unit_rows

BATCH = 64
TIMEOUT_S = 60.0


class EndpointEmbedder:
    """``model`` on ``base_url``'s ``/embeddings``; ``identity`` names both, so vectors of another model or
    server are never mixed with these."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None = None) -> None:
        if not base_url.strip() or not model.strip():
            raise ValueError("an embedding endpoint needs a base URL and a model name")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.identity = f"{model}@{self.base_url}"
        self._api_key = api_key
        self._client: Any = None

    def _embeddings(self) -> Any:
        if self._client is None:
            from langchain_openai import OpenAIEmbeddings

            self._client = OpenAIEmbeddings(
                model=self.model,
                base_url=self.base_url,
                api_key=self._api_key or "none",  # type: ignore[arg-type]
                check_embedding_ctx_length=False,
                chunk_size=BATCH,
                max_retries=2,
                timeout=TIMEOUT_S,
            )
        return self._client

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        try:
            rows = self._embeddings().embed_documents([text or " " for text in texts])
        except Exception as exc:  # noqa: BLE001 - the openai client raises many types; the reason is what counts
            raise EmbeddingFailed(
                f"the embedding endpoint {self.base_url} failed ({type(exc).__name__}: {_short(exc)})"
            ) from None
        if len(rows) != len(texts) or not rows or len({len(row) for row in rows}) != 1 or not rows[0]:
            raise EmbeddingFailed(
                f"the embedding endpoint {self.base_url} answered {len(rows)} vectors of uneven or no length for {len(texts)} texts"
            )
        return unit_rows(np.asarray(rows, dtype=np.float32))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def _short(exc: Exception) -> str:
    return " ".join(str(exc).split())[:160]
