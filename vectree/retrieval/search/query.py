"""Reading search index snapshots: :class:`SearchIndex` keeps snapshots open between queries and
runs each query against exactly one of them.

Which snapshot a query uses comes from a *pointer*: for a store (or a store view/reader) it is
the index snapshot that the store's published snapshot names, so a request pinned to one store
snapshot searches that snapshot's index; for a bare index directory it is ``CURRENT``.  Opened
snapshots (Tantivy searcher, LanceDB table, paper titles) are kept, a few at a time, and a
query never mixes two.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from vectree.retrieval.embed import EmbedderInfo, EmbedderMismatchError

from .bm25 import BM25Index
from .entries import PAPER
from .fusion import FUSIONS, fuse
from .publish import INDEX_FORMAT, IndexNotBuiltError, IndexPaths, read_entries_table, read_meta
from .vectors import VectorTable

log = logging.getLogger(__name__)

MODES = ("hybrid", "bm25", "dense")
# Chosen on the PubMedQA benchmark (benchmarks/bench_pubmedqa_search.py; weight picked on its
# first 200 questions): weighted fusion at dense weight 0.8 was the only setting above both
# single retrievers on Recall@1 and MRR (plain RRF fell just below dense alone on Recall@1).
# Re-examined on PubMedQA *train* questions (benchmarks/exp_layer0_channels.py): 0.5 ranked 2 of
# 277 more first there but 3 of 237 fewer on the held-back test split, i.e. within noise, so 0.8
# stays (docs/eval/report.md, "Layer 0 fusion weight").
# Override with VECTREE_SEARCH_FUSION / VECTREE_SEARCH_DENSE_WEIGHT.
DEFAULT_FUSION = "weighted"
DEFAULT_DENSE_WEIGHT = 0.8
# Entries fetched from each backend before rolling up to papers: enough that k papers with a
# dozen sections each still surface.
MIN_CANDIDATES = 100
# A query is one short sequence: torch's intra-op threads buy nothing there and, on a small
# machine whose cores are busy (an ingest next to the service), their spin-waiting dominates.
# Measured with MiniLM on 2 cores at load ~4: 2 threads p50 83-117 ms, p95 300+ ms; 1 thread
# p50 25-38 ms, p95 31-41 ms.  Batch document encoding keeps every thread.
QUERY_THREADS = 1
_THREADS_LOCK = threading.Lock()
# open snapshots a reader keeps: the live one and those pinned requests may still ask for
KEEP_OPEN = 3


def default_fusion() -> tuple[str, float]:
    """Fusion method and dense weight from the settings (``VECTREE_SEARCH_FUSION``,
    ``VECTREE_SEARCH_DENSE_WEIGHT``; validated there), else the benchmarked defaults."""
    from vectree.retrieval.config import load_settings

    s = load_settings()
    return s.search_fusion, s.search_dense_weight


def _default_embedder():
    from vectree.retrieval.embed import get_embedder

    return get_embedder()


@contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads, then restore the previous setting."""
    try:
        import torch
    except ImportError:  # an embedder without torch
        yield
        return
    with _THREADS_LOCK:
        previous = torch.get_num_threads()
        if previous == n:
            yield
            return
        torch.set_num_threads(n)
        try:
            yield
        finally:
            torch.set_num_threads(previous)


def encode_query(embedder, text: str):
    """The query vector, encoded single-threaded (see :data:`QUERY_THREADS`)."""
    with _torch_threads(QUERY_THREADS):
        return embedder.encode_query(text)


@dataclass
class _Snapshot:
    """Everything one query needs from one snapshot, opened together and swapped together."""

    id: str
    path: Path
    meta: dict[str, Any]
    bm25: BM25Index
    vectors: VectorTable
    titles: dict[str, str]

    @property
    def embedder_info(self) -> EmbedderInfo:
        return EmbedderInfo(self.meta["embedder"]["name"], int(self.meta["embedder"]["dim"]))

    @classmethod
    def open(cls, root, snap_id: str) -> "_Snapshot":
        path = IndexPaths.of(root).snapshot(snap_id)
        if not path.exists():
            raise IndexNotBuiltError(f"search index snapshot {snap_id} is not on disk")
        meta = read_meta(path)
        if meta.get("format") != INDEX_FORMAT:
            raise IndexNotBuiltError(f"search index snapshot {snap_id} has format {meta.get('format')}, this code "
                                     f"reads {INDEX_FORMAT}; rebuild it (vectree ingest --force)")
        papers = read_entries_table(path, columns=["doc_id", "kind", "title"]).to_pylist()
        titles = {r["doc_id"]: r["title"] or "" for r in papers if r["kind"] == PAPER}
        return cls(snap_id, path, meta, BM25Index.open(path / "bm25"), VectorTable.open(path / "vectors"), titles)


class SearchIndex:
    """A reader of one index, kept open between queries (open it once per process).

    ``pointer`` says which snapshot a query uses (default: ``CURRENT`` of the index root; for a
    store, the index snapshot of the store snapshot being read).  ``embedder`` defaults to the
    configured one (:func:`vectree.retrieval.embed.get_embedder`), loaded on the first dense
    query; it must match the model the snapshot was built with, else :class:`EmbedderMismatchError`.
    """

    def __init__(self, root, *, embedder=None, auto_refresh: bool = True,
                 pointer: Callable[[], str | None] | None = None):
        self.paths = IndexPaths.of(root)
        self.root = self.paths.root
        self.auto_refresh = auto_refresh
        self._pointer = pointer or self.paths.current
        self._embedder = embedder
        self._lock = threading.Lock()
        self._open: OrderedDict[str, _Snapshot] = OrderedDict()
        snap_id = self._pointer()
        if snap_id is None:
            raise IndexNotBuiltError("no search index published yet; run `vectree ingest` first")
        self._snap = self._get(snap_id)
        if embedder is not None:
            embedder.info.check_compatible(self._snap.embedder_info, where="search index")

    @classmethod
    def open(cls, target, *, embedder=None, auto_refresh: bool = True) -> "SearchIndex":
        pointer = None
        if hasattr(target, "index_snapshot_id"):  # a store: follow the snapshot it reads
            pointer = lambda: target.index_snapshot_id  # noqa: E731
        return cls(target, embedder=embedder, auto_refresh=auto_refresh, pointer=pointer)

    def _get(self, snap_id: str) -> _Snapshot:
        with self._lock:
            snap = self._open.get(snap_id)
            if snap is not None:
                self._open.move_to_end(snap_id)
                return snap
        fresh = _Snapshot.open(self.paths, snap_id)
        if self._embedder is not None:
            self._embedder.info.check_compatible(fresh.embedder_info, where="search index")
        with self._lock:
            self._open[snap_id] = fresh
            while len(self._open) > KEEP_OPEN:
                self._open.popitem(last=False)
        return fresh

    # ---- state -----------------------------------------------------------------------
    @property
    def snapshot_id(self) -> str:
        return self._snap.id

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self._snap.meta)

    def refresh(self) -> bool:
        """Switch to the snapshot the pointer names, if it is another one; returns whether it did.
        The new snapshot is opened completely before the switch; if that fails the old one stays."""
        snap_id = self._pointer()
        if snap_id is None or snap_id == self._snap.id:
            return False
        self._snap = self._get(snap_id)
        return True

    @property
    def embedder(self):
        if self._embedder is None:
            embedder = _default_embedder()
            embedder.info.check_compatible(self._snap.embedder_info, where="search index")
            self._embedder = embedder
        return self._embedder

    # ---- queries ---------------------------------------------------------------------
    def entry_hits(self, query: str, *, mode: str = "hybrid", limit: int = MIN_CANDIDATES,
                   vector_map: Callable[[Any], Any] | None = None,
                   _snap: _Snapshot | None = None) -> dict[str, list]:
        """Raw per-backend entry hits (``{"bm25": [...], "dense": [...]}``, best first);
        ``vector_map`` transforms the encoded query vector first (a reader's query adapter)."""
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r}: expected one of {', '.join(MODES)}")
        snap = _snap or self._snap
        hits: dict[str, list] = {}
        if mode in ("hybrid", "bm25"):
            hits["bm25"] = snap.bm25.search(query, limit)
        if mode in ("hybrid", "dense"):
            embedder = self.embedder
            embedder.info.check_compatible(snap.embedder_info, where="search index")
            if query.strip():
                vector = encode_query(embedder, query)
                hits["dense"] = snap.vectors.search(vector_map(vector) if vector_map else vector, limit)
            else:
                hits["dense"] = []
        return hits

    def _snapshot_for_query(self) -> _Snapshot:
        if not self.auto_refresh:
            return self._snap
        try:
            snap_id = self._pointer()
            if snap_id is not None and snap_id != self._snap.id:
                self._snap = self._get(snap_id)
        except EmbedderMismatchError:
            raise
        except Exception as exc:  # the old snapshot still serves; try again on the next query
            log.warning("search index refresh failed, still serving %s: %s", self._snap.id, exc)
        return self._snap

    def search(self, query: str, k: int = 10, *, mode: str = "hybrid", fusion: str | None = None,
               dense_weight: float | None = None, max_sections: int = 3) -> list[dict]:
        """Top ``k`` papers for ``query``: ``[{doc_id, title, score, matched_sections: [{node_id,
        title, pages: [start, end]}]}]``.  ``mode`` is ``hybrid``, ``bm25`` or ``dense``;
        ``fusion`` (``rrf`` or ``weighted``) and ``dense_weight`` default to the configuration."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        cfg_fusion, cfg_weight = default_fusion()
        fusion = fusion or cfg_fusion
        dense_weight = cfg_weight if dense_weight is None else dense_weight
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}: expected one of {', '.join(FUSIONS)}")
        snap = self._snapshot_for_query()
        limit = max(MIN_CANDIDATES, 10 * k)
        try:
            hits = self.entry_hits(query, mode=mode, limit=limit, _snap=snap)
        except (OSError, RuntimeError, ValueError) as exc:
            # a snapshot deleted under a reader that fell behind: re-open the current one, retry once
            if isinstance(exc, EmbedderMismatchError):
                raise
            with self._lock:
                self._open.pop(snap.id, None)
            if snap.id == self._snap.id and not self.refresh():
                raise
            snap = self._snap
            hits = self.entry_hits(query, mode=mode, limit=limit, _snap=snap)
        return fuse(hits, fusion=fusion, dense_weight=dense_weight, k=k, paper_titles=snap.titles,
                    max_sections=max_sections)


_OPEN: dict[Path, SearchIndex] = {}
_OPEN_LOCK = threading.Lock()


def search(target, query: str, k: int = 10, mode: str = "hybrid", fusion: str | None = None, *,
           dense_weight: float | None = None, max_sections: int = 3) -> list[dict]:
    """Rank papers for ``query``.  ``target`` is an open :class:`SearchIndex`, a store or an
    index directory; the latter two are opened once per process and kept open (warm)."""
    if isinstance(target, SearchIndex):
        index = target
    else:
        paths = IndexPaths.of(target)
        key = (paths.root, hasattr(target, "index_snapshot_id"))
        with _OPEN_LOCK:
            index = _OPEN.get(key)
            if index is None:
                index = _OPEN[key] = SearchIndex.open(target.reader() if hasattr(target, "reader") else target)
    return index.search(query, k, mode=mode, fusion=fusion, dense_weight=dense_weight, max_sections=max_sections)
