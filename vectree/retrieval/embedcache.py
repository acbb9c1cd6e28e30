"""The project's one on-disk embedding cache, so each text is embedded once per model.

:class:`CachedEmbedder` wraps an embedder (:func:`vectree.retrieval.embed.get_embedder`) and has the
same interface (``info``, ``encode_documents``, ``encode_queries``, ``encode_query``, ``model``),
so it can be handed to anything that takes an embedder (the Layer-0 index builder included).
Vectors are stored in one SQLite file per model under the cache directory
(``<directory>/<model>-<dim>.sqlite``), keyed by the sha256 of ``role + NUL + text``.  Only the
misses are encoded, in one call, in input order, so results do not depend on what was cached.

Queries are not cached by ``encode_queries``: encoding the query is part of each system's
measured latency.  Batch jobs that embed many fixed queries (SproutRAG training) cache them
explicitly with :meth:`CachedEmbedder.encode_cached` (``queries=True``).

Users: ``vectree eval`` (:mod:`vectree.evaluation.embedcache`, cache under the ``eval_cache``
setting) and SproutRAG training (:func:`vectree.retrieval.sprout.encoder.embed_texts`, cache under
``<store>/sprout/cache/``).  SQLite was kept over ``.npy`` pairs rewritten whole on every
addition: inserts are incremental and several processes can share one file.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from pathlib import Path
from typing import Callable, Sequence

import numpy as np


def _key(role: str, text: str) -> bytes:
    return hashlib.sha256(f"{role}\0{text}".encode("utf-8", "surrogatepass")).digest()


class CachedEmbedder:
    """``embedder`` with a SQLite vector cache at ``<directory>/<model>-<dim>.sqlite``."""

    def __init__(self, embedder, directory: str | Path):
        self.inner = embedder
        self.directory = Path(directory)
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

    def encode_cached(self, texts: Sequence[str], *, queries: bool = False,
                      encode: Callable[[list[str]], np.ndarray] | None = None) -> np.ndarray:
        """``texts`` through the cache, queries included when ``queries``; ``encode`` embeds the
        misses (default: the wrapped embedder's; a caller may batch them to report progress)."""
        role = "query" if queries else "doc"
        default = self.inner.encode_queries if queries else self.inner.encode_documents
        return self._encode(list(texts), role, encode or default)

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
