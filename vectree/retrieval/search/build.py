"""Building search index snapshots: a full build, or an incremental update that re-embeds only
the papers whose entries changed.  Either way the result is a new snapshot published with
:func:`.publish.publish`; on any error (or a kill) the previous one keeps serving."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from vectree.retrieval.embed import EmbedderInfo

from .bm25 import BM25Index
from .entries import Entry, entries_from_table, paper_fingerprints, store_entries
from .publish import (
    INDEX_FORMAT,
    IndexNotBuiltError,
    IndexPaths,
    clone_snapshot,
    entry_counts,
    finish_snapshot,
    new_index_snapshot_id,
    publish,
    read_entries_table,
    read_meta,
    update_entries,
    validate_entries,
    write_entries,
    writer_lock,
)
from .vectors import VectorTable

EMBED_BATCH = 256


def _default_embedder():
    # lazy: an update that finds nothing changed must not spend seconds loading the model
    from vectree.retrieval.embed import LazyEmbedder

    return LazyEmbedder()


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


def _is_store(target) -> bool:
    return hasattr(target, "index_dir") and hasattr(target, "read_catalog")


def _embed(embedder, entries: Sequence[Entry]):
    import numpy as np

    parts = [embedder.encode_documents([e.text for e in entries[i:i + EMBED_BATCH]])
             for i in range(0, len(entries), EMBED_BATCH)]
    return np.concatenate(parts) if parts else np.zeros((0, embedder.info.dim), dtype=np.float32)


def _resolve_entries(target, entries) -> list[Entry]:
    if entries is not None:
        return list(entries)
    if _is_store(target):
        return list(store_entries(target))
    raise TypeError("entries are required when the target is an index directory, not a Store")


def build_index(target, entries: Iterable[Entry] | None = None, *, embedder=None,
                reason: str = "requested", settings=None) -> BuildReport:
    """Build a complete new snapshot from ``entries`` (default: every ``ok`` paper of the store)
    and publish it.  On any error the previous snapshot keeps serving."""
    paths = IndexPaths.of(target)
    entries = _resolve_entries(target, entries)
    embedder = embedder or _default_embedder()
    with writer_lock(paths):
        return _build_locked(paths, entries, embedder, reason, settings)


def _build_locked(paths: IndexPaths, entries: list[Entry], embedder, reason: str, settings=None) -> BuildReport:
    validate_entries(entries)
    started = time.perf_counter()
    previous = paths.current()
    snap_id = new_index_snapshot_id()
    tmp = paths.snapshots / f".tmp-{snap_id}"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        vecs = _embed(embedder, entries)
        BM25Index.create(tmp / "bm25", entries)
        vectors = VectorTable.create(tmp / "vectors", embedder.info.dim, entries, vecs, settings=settings)
        write_entries(tmp, entries, snap_id)
        build = {"mode": "full", "reason": reason, "embedded": len(entries),
                 "added": sorted({e.doc_id for e in entries}), "changed": [], "removed": [],
                 "seconds": round(time.perf_counter() - started, 3)}
        meta = finish_snapshot(tmp, snap_id, entry_counts(entries), embedder.info, vectors, build, previous)
        publish(paths, tmp, snap_id, previous)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return BuildReport.from_meta(meta)


def update_index(target, entries: Iterable[Entry] | None = None, *, embedder=None,
                 doc_ids: Iterable[str] | None = None, settings=None) -> BuildReport:
    """Bring the index in line with ``entries`` (default: the store's ``ok`` papers), touching only
    the papers that changed: their old entries are deleted from both backends by ``doc_id`` and
    their new ones embedded and added.  Papers absent from ``entries`` are removed.

    With ``doc_ids``, only those papers are compared (``entries`` then needs to hold just them;
    one of them without entries is removed).  Falls back to a full build when there is no
    snapshot yet, or the live one was built with another embedder or index format; returns mode
    ``unchanged`` (and publishes nothing) when no paper differs.

    With ``doc_ids`` the work is proportional to those papers, not to the index: only their old
    rows are read (a filter on ``doc_id``), the BM25 and vector tables take deletes and appends,
    and the entries gain a fragment (see :mod:`.publish`).
    """
    paths = IndexPaths.of(target)
    scope = None if doc_ids is None else set(doc_ids)
    if entries is None and _is_store(target):
        entries = list(store_entries(target, doc_ids=scope))
    new_entries = _resolve_entries(target, entries)
    if scope is not None:
        new_entries = [e for e in new_entries if e.doc_id in scope]
    embedder = embedder or _default_embedder()
    with writer_lock(paths):
        previous = paths.current()
        if previous is None:
            if scope is not None:
                raise IndexNotBuiltError("no search index to update yet; build it first")
            return _build_locked(paths, new_entries, embedder, "no snapshot yet", settings)
        prev_dir = paths.snapshot(previous)
        meta = read_meta(prev_dir)
        built_with = EmbedderInfo(meta["embedder"]["name"], meta["embedder"]["dim"])
        if meta.get("format") != INDEX_FORMAT or built_with != embedder.info:
            why = "index format changed" if meta.get("format") != INDEX_FORMAT else (
                f"embedder changed from {built_with.name} ({built_with.dim}) to {embedder.info.name} ({embedder.info.dim})")
            if scope is not None:  # a partial update cannot rebuild the rest: take the whole store
                if not _is_store(target):
                    embedder.info.check_compatible(built_with, where="search index")
                    raise IndexNotBuiltError(f"search index under {paths.root}: {why}; rebuild it with build_index")
                new_entries = list(store_entries(target))
            return _build_locked(paths, new_entries, embedder, why, settings)

        old_entries = entries_from_table(read_entries_table(prev_dir, doc_ids=scope))
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
        # entry ids carry their paper's doc_id, so the touched papers' own entries are all there is
        # to check; the untouched ones were checked when they came in
        validate_entries(fresh)
        gone = entry_counts([e for e in old_entries if e.doc_id in touched])
        came = entry_counts(fresh)
        counts = {k: meta.get(k, 0) - gone[k] + came[k] for k in came}

        started = time.perf_counter()
        snap_id = new_index_snapshot_id()
        tmp: Path = paths.snapshots / f".tmp-{snap_id}"
        try:
            clone_snapshot(prev_dir, tmp)
            (tmp / "meta.json").unlink(missing_ok=True)
            vecs = _embed(embedder, fresh)
            doomed = sorted(set(changed) | set(removed))
            BM25Index.open(tmp / "bm25").replace(fresh, delete_doc_ids=doomed)
            vectors = VectorTable.open(tmp / "vectors", settings=settings)
            vectors.replace(fresh, vecs, delete_doc_ids=doomed)
            update_entries(tmp, fresh, set(doomed), snap_id)
            build = {"mode": "incremental", "reason": "papers changed", "embedded": len(fresh), "added": added,
                     "changed": changed, "removed": removed, "folded": vectors.folded,
                     "seconds": round(time.perf_counter() - started, 3)}
            meta = finish_snapshot(tmp, snap_id, counts, embedder.info, vectors, build, previous)
            publish(paths, tmp, snap_id, previous)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return BuildReport.from_meta(meta)
