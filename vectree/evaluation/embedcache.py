"""An on-disk cache of embeddings, so benchmark runs embed each text once per model.

:class:`CachedEmbedder` wraps an embedder (:func:`vectree.retrieval.embed.get_embedder`) and has the
same interface (``info``, ``encode_documents``, ``encode_queries``, ``encode_query``, ``model``),
so it can be handed to anything that takes an embedder (the Layer-0 index builder included).
Document vectors are stored in one SQLite file per model under the cache directory, keyed by
the sha256 of ``role + NUL + text``.  Queries are never cached: encoding the query is part of
each system's measured latency.  Only the misses are encoded, in one batch, in input order, so results do not
depend on what was cached.

Cache directory: the ``eval_cache`` setting (``$VECTREE_EVAL_CACHE``, default ``~/.cache/vectree-eval``).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from vectree.retrieval.embed import get_embedder


def cache_dir() -> Path:
    from vectree.retrieval.config import load_settings

    return load_settings().eval_cache


def _key(role: str, text: str) -> bytes:
    return hashlib.sha256(f"{role}\0{text}".encode("utf-8", "surrogatepass")).digest()


class CachedEmbedder:
    """``embedder`` with a SQLite vector cache at ``<directory>/<model>-<dim>.sqlite``."""

    def __init__(self, embedder, directory: str | Path | None = None):
        self.inner = embedder
        self.directory = Path(directory) if directory else cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", embedder.info.name)[-80:]
        self.path = self.directory / f"{safe}-{embedder.info.dim}.sqlite"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (k BLOB PRIMARY KEY, v BLOB NOT NULL)")
        self._db.commit()
        self.hits = self.misses = 0

    # the embedder interface ----------------------------------------------------------------
    @property
    def info(self):
        return self.inner.info

    @property
    def model(self):
        return self.inner.model

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts), "doc", self.inner.encode_documents)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        # queries are encoded live, never cached: the encoder call is part of every query's latency
        return self.inner.encode_queries(list(texts))

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode_queries([text])[0]

    # ---------------------------------------------------------------------------------------
    def _encode(self, texts: list[str], role: str, encode) -> np.ndarray:
        dim = self.info.dim
        out = np.zeros((len(texts), dim), dtype=np.float32)
        if not texts:
            return out
        keys = [_key(role, t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            unique = list(dict.fromkeys(keys))
            for i in range(0, len(unique), 500):
                chunk = unique[i:i + 500]
                rows = self._db.execute(f"SELECT k, v FROM vec WHERE k IN ({','.join('?' * len(chunk))})", chunk)
                for k, v in rows:
                    found[k] = np.frombuffer(v, dtype=np.float32)
        missing = [i for i, k in enumerate(keys) if k not in found]
        todo = list(dict.fromkeys(keys[i] for i in missing))
        if todo:
            first = {}
            for i in missing:
                first.setdefault(keys[i], i)
            vecs = encode([texts[first[k]] for k in todo])
            with self._lock:
                self._db.executemany("INSERT OR REPLACE INTO vec (k, v) VALUES (?, ?)",
                                     [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in zip(todo, vecs)])
                self._db.commit()
            for k, v in zip(todo, vecs):
                found[k] = np.asarray(v, dtype=np.float32)
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def close(self) -> None:
        with self._lock:
            self._db.close()


_SHARED: dict[tuple[str, str], CachedEmbedder] = {}


def cached_embedder(model: str | None = None, directory: str | Path | None = None) -> CachedEmbedder:
    """The process-wide cached version of :func:`vectree.retrieval.embed.get_embedder` (one per model
    and cache directory; ``directory`` defaults to :func:`cache_dir`)."""
    from vectree.retrieval.embed import get_embedder

    inner = get_embedder(model)
    directory = Path(directory) if directory else cache_dir()
    key = (inner.info.name, str(directory))
    if key not in _SHARED:
        _SHARED[key] = CachedEmbedder(inner, directory)
    return _SHARED[key]
