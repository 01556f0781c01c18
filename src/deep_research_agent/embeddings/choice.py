"""The embedder a deployment's settings name, built once per process and loaded on first use.

``embedder_for(settings)`` returns the bundled model (``DRA_EMBEDDINGS=bundled``, the default), the
endpoint's model (``endpoint``), or None (``off``, or an endpoint setting that is incomplete: keyword
search only, and ``embedding_problem`` says why); ``one_shot=True`` asks for a bundled model that loads fast
for a process that embeds a question or two and exits (``BundledEmbedder(optimize=False)``). Building one
loads nothing: the model file is read, or
the endpoint called, on the first text to embed, so importing this or starting a command costs nothing.
"""

from __future__ import annotations

import threading

from ..settings.features import EmbeddingSettings
from .bundled import BundledEmbedder
from .embedder import Embedder
from .endpoint import EndpointEmbedder

_built: dict[tuple[str, str, str, str, bool], Embedder] = {}
_lock = threading.Lock()


def embedding_problem(settings: EmbeddingSettings) -> str | None:
    """Why the settings give no embedder although one was asked for, or None."""
    if settings.embeddings != "endpoint":
        return None
    missing = [
        name
        for name, value in (
            ("DRA_EMBEDDING_BASE_URL", settings.embedding_base_url),
            ("DRA_EMBEDDING_MODEL", settings.embedding_model),
        )
        if not value.strip()
    ]
    if missing:
        return f"DRA_EMBEDDINGS=endpoint needs {' and '.join(missing)}; searching by keywords only."
    return None


def embedder_for(settings: EmbeddingSettings, *, one_shot: bool = False) -> Embedder | None:
    if settings.embeddings == "off" or embedding_problem(settings):
        return None
    key_text = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else ""
    key = (settings.embeddings, settings.embedding_base_url, settings.embedding_model, key_text, one_shot)
    with _lock:
        found = _built.get(key)
        if found is None:
            if settings.embeddings == "endpoint":
                found = EndpointEmbedder(
                    base_url=settings.embedding_base_url, model=settings.embedding_model, api_key=key_text or None
                )
            else:
                found = BundledEmbedder(optimize=not one_shot)
            _built[key] = found
        return found
