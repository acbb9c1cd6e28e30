"""Publishing the store: one snapshot of catalog, per-paper artefacts and index, switched at once.

The pipeline writes the *working* store (``docs.parquet``, ``pages/``, ``trees/``, ...), paper by
paper and stage by stage; nothing reads it directly.  When a refresh has built everything,
:func:`publish` freezes it: every per-paper artefact is hard-linked into ``snapshots/<id>/``
(so later writes, which always replace files by rename, never change it), the catalog is written
there with each paper's *truthful* status, and ``snapshot.json`` names the search index snapshot
and the SproutRAG model of that moment.  ``snapshots/CURRENT`` is then replaced in one rename.
A reader (:meth:`vectree.retrieval.store.Store.view`) resolves everything through one such
snapshot, so a search and the tree it leads to always come from the same refresh; a refresh that
dies half-way publishes nothing and the previous snapshot keeps serving.

Status per paper: the parse status (``no_text``, ``failed``, ``skipped``, ``pending``) when the
paper did not parse; else ``ok`` only when every artefact is present (pages, section tree,
passages, its row in the search index, and its SproutRAG tree when a model is live), otherwise
``degraded`` with the failing artefacts and why.  ``artefacts`` lists each one either way.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .store import Store, StoreError

ARTEFACTS = ("pages", "tree", "passages", "index", "sprout_tree")


def _indexed_papers(store: Store, index_snapshot: str | None) -> set[str] | None:
    if index_snapshot is None:
        return None
    from .search.publish import read_entries

    try:
        return {e.doc_id for e in read_entries(store, index_snapshot) if e.kind == "paper"}
    except (OSError, StoreError, ValueError):
        return None


def _tree_detail(store: Store, doc_id: str) -> str:
    info = store.read_tree_info(doc_id) or {}
    source = info.get("source") or "unknown"
    if info.get("fallback"):
        return f"{source} (offline fallback: {info['fallback']})"
    return source


def paper_artefacts(store: Store, row: dict[str, Any], *, indexed: set[str] | None, sprout_model: str | None,
                    failures: dict[str, str]) -> list[dict[str, Any]]:
    """One entry per artefact of a parsed paper: ``{artefact, ok, detail}``."""
    doc_id = row["doc_id"]
    why = f" (last run failed: {failures[doc_id]})" if doc_id in failures else ""
    out = []

    def add(name: str, ok: bool, detail: str) -> None:
        out.append({"artefact": name, "ok": ok, "detail": detail if ok else detail + why})

    pages = store.pages_path(doc_id).exists()
    add("pages", pages, f"{row.get('n_pages') or 0} pages" if pages else "missing")
    tree = store.tree_path(doc_id).exists()
    add("tree", tree, _tree_detail(store, doc_id) if tree else "missing")
    passages = store.passages_path(doc_id).exists()
    add("passages", passages, "present" if passages else "missing")
    if indexed is None:
        add("index", False, "no search index published")
    else:
        add("index", doc_id in indexed, "indexed" if doc_id in indexed else "not in the search index")
    if sprout_model:
        sprout = store.sprout_tree_path(doc_id).exists()
        add("sprout_tree", sprout, f"model {sprout_model}" if sprout else f"missing (model {sprout_model})")
    return out


def published_rows(store: Store, index_snapshot: str | None, sprout_model: str | None) -> list[dict[str, Any]]:
    """The working catalog with statuses made truthful (see the module docstring)."""
    indexed = _indexed_papers(store, index_snapshot)
    failures = store.read_run_failures()
    rows = []
    for row in store.read_catalog():
        row = dict(row)
        if row["status"] == "ok":
            arts = paper_artefacts(store, row, indexed=indexed, sprout_model=sprout_model, failures=failures)
            bad = [a for a in arts if not a["ok"]]
            row["artefacts"] = arts
            if bad:
                row["status"] = "degraded"
                row["error"] = "; ".join(f"{a['artefact']}: {a['detail']}" for a in bad)
        rows.append(row)
    return rows


def _fingerprint(store: Store, rows: list[dict[str, Any]], index_snapshot, sprout_model) -> str:
    """Equal when nothing a reader could see has changed (catalog rows, pointers, artefact files)."""
    h = hashlib.sha256()
    h.update(json.dumps([rows, index_snapshot, sprout_model], sort_keys=True, default=str).encode())
    for row in rows:
        for name, path in sorted(store.per_paper_paths(row["doc_id"]).items()):
            try:
                st = path.stat()
                h.update(f"{name}:{st.st_ino}:{st.st_mtime_ns}:{st.st_size};".encode())
            except FileNotFoundError:
                h.update(f"{name}:-;".encode())
    return h.hexdigest()[:24]


def publish(store: Store, *, force: bool = False) -> dict[str, Any]:
    """Publish the working store as a new snapshot (unless nothing changed since the live one).

    Returns ``{snapshot_id, published, index, sprout_model, by_status, degraded}``."""
    index_snapshot = store.read_index_pointer()
    sprout_model = store.read_sprout_model_pointer()
    # "none" (switched off) is a choice to publish; a package model has no folder in the store
    if sprout_model and sprout_model != "none" and not store.sprout_model_dir(sprout_model).exists():
        sprout_model = None
    rows = published_rows(store, index_snapshot, sprout_model)
    fingerprint = _fingerprint(store, rows, index_snapshot, sprout_model)
    live = store.current_snapshot_id()
    published = True
    if not force and live:
        try:
            published = store.snapshot_manifest(live).get("fingerprint") != fingerprint
        except StoreError:
            published = True
    snap_id = (store.publish_snapshot(rows, index_snapshot=index_snapshot, sprout_model=sprout_model,
                                      extra={"fingerprint": fingerprint}) if published else live)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return {"snapshot_id": snap_id, "published": published, "index": index_snapshot, "sprout_model": sprout_model,
            "by_status": counts, "degraded": {r["doc_id"]: r["error"] for r in rows if r["status"] == "degraded"}}
