"""Search index snapshots: build, incremental update, atomic publish, and the reader.

Layout under an index root (``<store>/index`` for a store)::

    CURRENT                      id of the live snapshot (replaced atomically)
    .lock                        writers hold an exclusive flock on it (one build at a time)
    snapshots/<id>/meta.json     embedder name + dim, counts, sizes, build mode and time
    snapshots/<id>/entries.parquet   every entry without its vector (titles, diffing, checks)
    snapshots/<id>/bm25/         Tantivy index
    snapshots/<id>/vectors/      LanceDB directory with the ``entries`` table
    snapshots/.tmp-<id>/         a snapshot being built (never read)

A snapshot never changes once published.  A writer builds the next one in a private ``.tmp-``
directory (an incremental update starts from a copy of the live one: immutable data files are
hard-linked, metadata files copied, so the old snapshot is never touched), renames it into
place, then replaces ``CURRENT``.  A failed build removes its ``.tmp-`` directory and leaves
``CURRENT`` alone, so the old snapshot keeps serving.  After a publish, snapshots other than the
new one and the one it replaced are deleted; a reader still on an older one re-opens the current
snapshot when a query fails.

:class:`SearchIndex` holds one open snapshot (Tantivy searcher, LanceDB table, paper titles) as a
single object and swaps it whole on :meth:`SearchIndex.refresh`, so a query always runs against
one snapshot: the old or the new, never a mix.  With ``auto_refresh`` (the default) every query
first checks ``CURRENT`` (one small file read) and picks up a new snapshot.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import pyarrow.parquet as pq

from vectree.retrieval.embed import EmbedderInfo, EmbedderMismatchError
from vectree.retrieval.store import Store, atomic_write_bytes, atomic_write_parquet

from .bm25 import BM25Index
from .entries import PAPER, SECTION, Entry, entries_from_table, entries_table, paper_fingerprints, store_entries
from .fusion import FUSIONS, fuse
from .vectors import VectorTable

log = logging.getLogger(__name__)

INDEX_FORMAT = 1
MODES = ("hybrid", "bm25", "dense")
# Chosen on the PubMedQA benchmark (benchmarks/bench_pubmedqa_search.py; weight picked on its
# first 200 questions): weighted fusion at dense weight 0.8 was the only setting above both
# single retrievers on Recall@1 and MRR (plain RRF fell just below dense alone on Recall@1).
# Override with VECTREE_SEARCH_FUSION / VECTREE_SEARCH_DENSE_WEIGHT.
DEFAULT_FUSION = "weighted"
DEFAULT_DENSE_WEIGHT = 0.8
# Entries fetched from each backend before rolling up to papers: enough that k papers with a
# dozen sections each still surface.
MIN_CANDIDATES = 100
EMBED_BATCH = 256
# A query is one short sequence: torch's intra-op threads buy nothing there and, on a small
# machine whose cores are busy (an ingest next to the service), their spin-waiting dominates.
# Measured with MiniLM on 2 cores at load ~4: 2 threads p50 83-117 ms, p95 300+ ms; 1 thread
# p50 25-38 ms, p95 31-41 ms.  Batch document encoding keeps every thread.
QUERY_THREADS = 1
_THREADS_LOCK = threading.Lock()

__all__ = [
    "BuildReport", "EmbedderMismatchError", "IndexNotBuiltError", "SearchIndex", "build_index",
    "read_entries", "search", "update_index",
]


class IndexNotBuiltError(FileNotFoundError):
    """There is no published search index at the given place."""


# ---- configuration -------------------------------------------------------------------------
def default_fusion() -> tuple[str, float]:
    """Fusion method and dense weight from the settings (``VECTREE_SEARCH_FUSION``,
    ``VECTREE_SEARCH_DENSE_WEIGHT``; validated there), else the benchmarked defaults."""
    from vectree.retrieval.config import load_settings

    s = load_settings()
    return s.search_fusion, s.search_dense_weight


def index_root(target: Store | str | os.PathLike) -> Path:
    """The index root of a store (``<store>/index``) or an explicit index directory."""
    return Path(target.index_dir if isinstance(target, Store) else target).resolve()


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


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def current_snapshot_id(root: Path) -> str | None:
    try:
        text = (Path(root) / "CURRENT").read_text().strip()
    except FileNotFoundError:
        return None
    return text or None


def _read_meta(snapshot_dir: Path) -> dict[str, Any]:
    return json.loads((snapshot_dir / "meta.json").read_text())


def read_entries(target: Store | str | os.PathLike) -> list[Entry]:
    """Every entry of the live snapshot (no vectors)."""
    root = index_root(target)
    snap = current_snapshot_id(root)
    if snap is None:
        raise IndexNotBuiltError(f"no search index published under {root}")
    return entries_from_table(pq.read_table(root / "snapshots" / snap / "entries.parquet"))


# ---- building ------------------------------------------------------------------------------
@dataclass
class BuildReport:
    """What a build or update did; ``mode`` is ``full``, ``incremental`` or ``unchanged``."""

    snapshot_id: str
    mode: str
    entries: int
    papers: int
    embedded: int = 0
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    bytes: dict[str, int] = field(default_factory=dict)
    vector_index: str = "flat"
    embedder: dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    @classmethod
    def from_meta(cls, meta: dict[str, Any], mode: str | None = None, **overrides) -> "BuildReport":
        build = meta.get("build", {})
        report = cls(
            snapshot_id=meta["snapshot_id"], mode=mode or build.get("mode", "full"), entries=meta["entries"],
            papers=meta["papers"], embedded=build.get("embedded", 0), added=build.get("added", []),
            changed=build.get("changed", []), removed=build.get("removed", []), seconds=build.get("seconds", 0.0),
            bytes=meta.get("bytes", {}), vector_index=meta.get("vector_index", "flat"),
            embedder=meta.get("embedder", {}), reason=build.get("reason", ""),
        )
        for k, v in overrides.items():
            setattr(report, k, v)
        return report


@contextmanager
def _writer_lock(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _new_snapshot_id() -> str:
    # sortable by creation time; the random tail keeps two builds in one microsecond apart
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ") + "-" + uuid.uuid4().hex[:6]


def _validate(entries: Sequence[Entry]) -> None:
    seen: set[str] = set()
    papers: dict[str, int] = {}
    for e in entries:
        if e.kind not in (PAPER, SECTION):
            raise ValueError(f"entry {e.entry_id!r}: kind must be {PAPER!r} or {SECTION!r}, got {e.kind!r}")
        if not e.doc_id:
            raise ValueError(f"entry {e.entry_id!r} has no doc_id")
        if e.entry_id in seen:
            raise ValueError(f"duplicate entry id {e.entry_id!r} (two tree nodes with one node_id?)")
        seen.add(e.entry_id)
        if e.kind == PAPER:
            papers[e.doc_id] = papers.get(e.doc_id, 0) + 1
    docs = {e.doc_id for e in entries}
    bad = sorted(d for d in docs if papers.get(d, 0) != 1)
    if bad:
        raise ValueError(f"every paper needs exactly one paper entry; these do not: {bad[:10]}")


def _embed(embedder, entries: Sequence[Entry]):
    import numpy as np

    parts = [embedder.encode_documents([e.text for e in entries[i:i + EMBED_BATCH]])
             for i in range(0, len(entries), EMBED_BATCH)]
    return np.concatenate(parts) if parts else np.zeros((0, embedder.info.dim), dtype=np.float32)


def _is_immutable_data(rel: Path) -> bool:
    """Files that their library writes once and never rewrites in place: safe to hard-link."""
    parts = rel.parts
    if "vectors" == parts[0]:  # Lance: data files, deletion vectors and index files
        return any(p in ("data", "_indices", "_deletions") for p in parts)
    if "bm25" == parts[0]:  # Tantivy segment files are <32 hex uuid>.<ext>
        stem = rel.name.split(".")[0]
        return len(stem) == 32 and all(c in "0123456789abcdef" for c in stem)
    return False


def _clone_snapshot(src: Path, dst: Path) -> None:
    for path in src.rglob("*"):
        rel = path.relative_to(src)
        target = dst / rel
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        if path.name.endswith(".lock"):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if _is_immutable_data(rel):
            try:
                os.link(path, target)
                continue
            except OSError:  # another file system, or links not supported: copy instead
                pass
        shutil.copy2(path, target)


def _finish_snapshot(tmp: Path, snap_id: str, entries: Sequence[Entry], info: EmbedderInfo, vectors: VectorTable,
                     build: dict[str, Any], parent: str | None) -> dict[str, Any]:
    atomic_write_parquet(tmp / "entries.parquet", entries_table(entries))
    sizes = {"bm25": _dir_bytes(tmp / "bm25"), "vectors": _dir_bytes(tmp / "vectors"),
             "entries": (tmp / "entries.parquet").stat().st_size}
    sizes["total"] = sum(sizes.values())
    meta = {
        "format": INDEX_FORMAT,
        "snapshot_id": snap_id,
        "parent": parent,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "embedder": {"name": info.name, "dim": info.dim},
        "entries": len(entries),
        "papers": len({e.doc_id for e in entries}),
        "paper_entries": sum(e.kind == PAPER for e in entries),
        "section_entries": sum(e.kind == SECTION for e in entries),
        "vector_index": vectors.vector_index_type or "flat",
        "bytes": sizes,
        "build": build,
    }
    atomic_write_bytes(tmp / "meta.json", json.dumps(meta, indent=1).encode())
    return meta


def _publish(root: Path, tmp: Path, snap_id: str, previous: str | None) -> None:
    snapshots = root / "snapshots"
    os.replace(tmp, snapshots / snap_id)
    atomic_write_bytes(root / "CURRENT", snap_id.encode())
    # keep the new snapshot and the one readers may still be on; the rest (and leftovers of
    # crashed builds: no other writer can be running while we hold the lock) go
    keep = {snap_id, previous}
    for path in snapshots.iterdir():
        if path.name not in keep:
            shutil.rmtree(path, ignore_errors=True)


def _resolve_entries(target, entries) -> list[Entry]:
    if entries is not None:
        return list(entries)
    if isinstance(target, Store):
        return list(store_entries(target))
    raise TypeError("entries are required when the target is an index directory, not a Store")


def build_index(target: Store | str | os.PathLike, entries: Iterable[Entry] | None = None, *, embedder=None,
                reason: str = "requested") -> BuildReport:
    """Build a complete new snapshot from ``entries`` (default: every ``ok`` paper of the store)
    and publish it.  On any error the previous snapshot keeps serving."""
    root = index_root(target)
    entries = _resolve_entries(target, entries)
    embedder = embedder or _default_embedder()
    with _writer_lock(root):
        return _build_locked(root, entries, embedder, reason)


def _build_locked(root: Path, entries: list[Entry], embedder, reason: str) -> BuildReport:
    _validate(entries)
    started = time.perf_counter()
    previous = current_snapshot_id(root)
    snap_id = _new_snapshot_id()
    tmp = root / "snapshots" / f".tmp-{snap_id}"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        vecs = _embed(embedder, entries)
        BM25Index.create(tmp / "bm25", entries)
        vectors = VectorTable.create(tmp / "vectors", embedder.info.dim, entries, vecs)
        build = {"mode": "full", "reason": reason, "embedded": len(entries),
                 "added": sorted({e.doc_id for e in entries}), "changed": [], "removed": [],
                 "seconds": round(time.perf_counter() - started, 3)}
        meta = _finish_snapshot(tmp, snap_id, entries, embedder.info, vectors, build, previous)
        _publish(root, tmp, snap_id, previous)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return BuildReport.from_meta(meta)


def update_index(target: Store | str | os.PathLike, entries: Iterable[Entry] | None = None, *, embedder=None,
                 doc_ids: Iterable[str] | None = None) -> BuildReport:
    """Bring the index in line with ``entries`` (default: the store's ``ok`` papers), touching only
    the papers that changed: their old entries are deleted from both backends by ``doc_id`` and
    their new ones embedded and added.  Papers absent from ``entries`` are removed.

    With ``doc_ids``, only those papers are compared (``entries`` then needs to hold just them;
    one of them without entries is removed).  Falls back to a full build when there is no
    snapshot yet, or the live one was built with another embedder or index format; returns mode
    ``unchanged`` (and publishes nothing) when no paper differs.
    """
    root = index_root(target)
    scope = None if doc_ids is None else set(doc_ids)
    if entries is None and isinstance(target, Store):
        entries = list(store_entries(target, doc_ids=scope))
    new_entries = _resolve_entries(target, entries)
    if scope is not None:
        new_entries = [e for e in new_entries if e.doc_id in scope]
    embedder = embedder or _default_embedder()
    with _writer_lock(root):
        previous = current_snapshot_id(root)
        if previous is None:
            if scope is not None:
                raise IndexNotBuiltError(f"no search index under {root} to update; build it first")
            return _build_locked(root, new_entries, embedder, "no snapshot yet")
        prev_dir = root / "snapshots" / previous
        meta = _read_meta(prev_dir)
        built_with = EmbedderInfo(meta["embedder"]["name"], meta["embedder"]["dim"])
        if meta.get("format") != INDEX_FORMAT or built_with != embedder.info:
            why = "index format changed" if meta.get("format") != INDEX_FORMAT else (
                f"embedder changed from {built_with.name} ({built_with.dim}) to {embedder.info.name} ({embedder.info.dim})")
            if scope is not None:  # a partial update cannot rebuild the rest: take the whole store
                if not isinstance(target, Store):
                    embedder.info.check_compatible(built_with, where="search index")
                    raise IndexNotBuiltError(f"search index under {root}: {why}; rebuild it with build_index")
                new_entries = list(store_entries(target))
            return _build_locked(root, new_entries, embedder, why)

        old_entries = entries_from_table(pq.read_table(prev_dir / "entries.parquet"))
        old_fp = paper_fingerprints(old_entries)
        new_fp = paper_fingerprints(new_entries)
        considered = set(old_fp) | set(new_fp) if scope is None else scope
        added = sorted(d for d in considered if d in new_fp and d not in old_fp)
        changed = sorted(d for d in considered if d in new_fp and d in old_fp and new_fp[d] != old_fp[d])
        removed = sorted(d for d in considered if d in old_fp and d not in new_fp)
        if not (added or changed or removed):
            return BuildReport.from_meta(meta, mode="unchanged", embedded=0, added=[], changed=[], removed=[],
                                         seconds=0.0, reason="no paper changed")
        touched = set(added) | set(changed) | set(removed)
        fresh = [e for e in new_entries if e.doc_id in touched]
        merged = [e for e in old_entries if e.doc_id not in touched] + fresh
        _validate(merged)

        started = time.perf_counter()
        snap_id = _new_snapshot_id()
        tmp = root / "snapshots" / f".tmp-{snap_id}"
        try:
            _clone_snapshot(prev_dir, tmp)
            for stale in ("meta.json", "entries.parquet"):
                (tmp / stale).unlink(missing_ok=True)
            vecs = _embed(embedder, fresh)
            doomed = sorted(set(changed) | set(removed))
            BM25Index.open(tmp / "bm25").replace(fresh, delete_doc_ids=doomed)
            vectors = VectorTable.open(tmp / "vectors")
            vectors.replace(fresh, vecs, delete_doc_ids=doomed)
            build = {"mode": "incremental", "reason": "papers changed", "embedded": len(fresh), "added": added,
                     "changed": changed, "removed": removed, "seconds": round(time.perf_counter() - started, 3)}
            meta = _finish_snapshot(tmp, snap_id, merged, embedder.info, vectors, build, previous)
            _publish(root, tmp, snap_id, previous)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return BuildReport.from_meta(meta)


# ---- reading -------------------------------------------------------------------------------
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
    def open(cls, root: Path, snap_id: str) -> "_Snapshot":
        path = root / "snapshots" / snap_id
        meta = _read_meta(path)
        if meta.get("format") != INDEX_FORMAT:
            raise IndexNotBuiltError(f"search index {path} has format {meta.get('format')}, this code reads "
                                     f"{INDEX_FORMAT}; rebuild it (vectree ingest --force)")
        papers = pq.read_table(path / "entries.parquet", columns=["doc_id", "kind", "title"]).to_pylist()
        titles = {r["doc_id"]: r["title"] or "" for r in papers if r["kind"] == PAPER}
        return cls(snap_id, path, meta, BM25Index.open(path / "bm25"), VectorTable.open(path / "vectors"), titles)


class SearchIndex:
    """A reader of one index root, kept open between queries (open it once per process).

    ``embedder`` defaults to the configured one (:func:`vectree.retrieval.embed.get_embedder`), loaded on
    the first dense query; it must match the model the snapshot was built with, else
    :class:`EmbedderMismatchError`.
    """

    def __init__(self, root: Path, *, embedder=None, auto_refresh: bool = True):
        self.root = Path(root)
        self.auto_refresh = auto_refresh
        self._embedder = embedder
        self._lock = threading.Lock()
        snap_id = current_snapshot_id(self.root)
        if snap_id is None:
            raise IndexNotBuiltError(f"no search index published under {self.root}; run `vectree ingest` first")
        self._snap = _Snapshot.open(self.root, snap_id)
        if embedder is not None:
            embedder.info.check_compatible(self._snap.embedder_info, where="search index")

    @classmethod
    def open(cls, target: Store | str | os.PathLike, *, embedder=None, auto_refresh: bool = True) -> "SearchIndex":
        return cls(index_root(target), embedder=embedder, auto_refresh=auto_refresh)

    # ---- state -----------------------------------------------------------------------
    @property
    def snapshot_id(self) -> str:
        return self._snap.id

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self._snap.meta)

    def refresh(self) -> bool:
        """Switch to the snapshot ``CURRENT`` names, if it is another one; returns whether it did.
        The new snapshot is opened completely before the switch; if that fails the old one stays."""
        snap_id = current_snapshot_id(self.root)
        if snap_id is None or snap_id == self._snap.id:
            return False
        with self._lock:
            if snap_id == self._snap.id:
                return False
            fresh = _Snapshot.open(self.root, snap_id)
            if self._embedder is not None:
                self._embedder.info.check_compatible(fresh.embedder_info, where="search index")
            self._snap = fresh
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
                   _snap: _Snapshot | None = None) -> dict[str, list]:
        """Raw per-backend entry hits (``{"bm25": [...], "dense": [...]}``, best first)."""
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r}: expected one of {', '.join(MODES)}")
        snap = _snap or self._snap
        hits: dict[str, list] = {}
        if mode in ("hybrid", "bm25"):
            hits["bm25"] = snap.bm25.search(query, limit)
        if mode in ("hybrid", "dense"):
            embedder = self.embedder
            embedder.info.check_compatible(snap.embedder_info, where="search index")
            hits["dense"] = snap.vectors.search(encode_query(embedder, query), limit) if query.strip() else []
        return hits

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
        if self.auto_refresh:
            try:
                self.refresh()
            except EmbedderMismatchError:
                raise
            except Exception as exc:  # the old snapshot still serves; try again on the next query
                log.warning("search index refresh failed, still serving %s: %s", self._snap.id, exc)
        snap = self._snap
        limit = max(MIN_CANDIDATES, 10 * k)
        try:
            hits = self.entry_hits(query, mode=mode, limit=limit, _snap=snap)
        except (OSError, RuntimeError, ValueError) as exc:
            # a snapshot deleted under a reader that fell two publishes behind: re-open, retry once
            if isinstance(exc, EmbedderMismatchError) or not self.refresh():
                raise
            snap = self._snap
            hits = self.entry_hits(query, mode=mode, limit=limit, _snap=snap)
        return fuse(hits, fusion=fusion, dense_weight=dense_weight, k=k, paper_titles=snap.titles,
                    max_sections=max_sections)


_OPEN: dict[Path, SearchIndex] = {}
_OPEN_LOCK = threading.Lock()


def search(target: Store | SearchIndex | str | os.PathLike, query: str, k: int = 10, mode: str = "hybrid",
           fusion: str | None = None, *, dense_weight: float | None = None, max_sections: int = 3) -> list[dict]:
    """Rank papers for ``query``.  ``target`` is an open :class:`SearchIndex`, a :class:`Store` or an
    index directory; the latter two are opened once per process and kept open (warm)."""
    if isinstance(target, SearchIndex):
        index = target
    else:
        root = index_root(target)
        with _OPEN_LOCK:
            index = _OPEN.get(root)
            if index is None:
                index = _OPEN[root] = SearchIndex(root)
    return index.search(query, k, mode=mode, fusion=fusion, dense_weight=dense_weight, max_sections=max_sections)
