"""Search index snapshots on disk: where they live, their metadata, the writer lock, and the
atomic publish (pointer switch + garbage collection).  Building is :mod:`.build`, reading
:mod:`.query`.

Layout under an index root (``<store>/index`` for a store; the paths come from the store)::

    CURRENT                      id of the last published snapshot (replaced atomically)
    .lock                        writers hold an exclusive flock on it (one build at a time)
    snapshots/<id>/meta.json     embedder name + dim, counts, sizes, build mode and time
    snapshots/<id>/entries/*.parquet every entry without its vector (titles, diffing, checks), in
                                 immutable fragments of at most FRAGMENT_ROWS rows: an update
                                 writes its papers' rows as a new fragment and rewrites only the
                                 fragments that held changed or removed papers (older snapshots
                                 have one ``entries.parquet`` file; both are read)
    snapshots/<id>/bm25/         Tantivy index
    snapshots/<id>/vectors/      LanceDB directory with the ``entries`` table
    snapshots/.tmp-<id>/         a snapshot being built (never read)

A snapshot never changes once published.  A writer builds the next one in a private ``.tmp-``
directory (an incremental update starts from a copy of the live one: immutable data files are
hard-linked, metadata files copied, so the old snapshot is never touched), renames it into
place, then replaces ``CURRENT``.  A failed or killed build leaves ``CURRENT`` alone.  After a
publish, snapshots other than the new one, the one it replaced and those a published *store*
snapshot names (:meth:`vectree.retrieval.store.Store.referenced_index_snapshots`) are deleted:
a store snapshot pins its index snapshot for as long as it is kept.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq

from vectree.retrieval.embed import EmbedderInfo
from vectree.retrieval.store import atomic_write_bytes, atomic_write_parquet, new_snapshot_id

from .entries import ENTRY_SCHEMA, PAPER, SECTION, Entry, entries_from_table, entries_table
from .vectors import VectorTable

INDEX_FORMAT = 1
ENTRIES_DIR = "entries"
LEGACY_ENTRIES = "entries.parquet"
# rows per entries fragment: rewriting one (a changed paper) stays cheap at any corpus size
FRAGMENT_ROWS = 4096
# past this many fragment files the small ones are merged (amortised: it takes that many updates)
MAX_FRAGMENTS = 64


class IndexNotBuiltError(FileNotFoundError):
    """There is no published search index at the given place."""


@dataclass(frozen=True)
class IndexPaths:
    """Where one index lives: from a store (its own paths) or from a bare directory."""

    root: Path
    pointer: Path
    snapshots: Path
    store: Any = None  # the Store, when the index belongs to one

    @classmethod
    def of(cls, target) -> "IndexPaths":
        if isinstance(target, IndexPaths):
            return target
        if hasattr(target, "index_dir"):  # a Store, a StoreView or a StoreReader
            store = getattr(target, "working", None) or getattr(target, "store", None) or target
            return cls(Path(target.index_dir).resolve(), Path(store.index_pointer_path).resolve(),
                       Path(store.index_snapshots_dir).resolve(), store)
        root = Path(target).resolve()
        return cls(root, root / "CURRENT", root / "snapshots")

    def snapshot(self, snap_id: str) -> Path:
        return self.snapshots / snap_id

    def current(self) -> str | None:
        try:
            text = self.pointer.read_text().strip()
        except FileNotFoundError:
            return None
        return text or None

    def protected(self) -> set[str]:
        """Snapshots that must survive garbage collection besides the newest two."""
        if self.store is None or not hasattr(self.store, "referenced_index_snapshots"):
            return set()
        return self.store.referenced_index_snapshots()


def index_root(target) -> Path:
    """The index root of a store (``<store>/index``) or an explicit index directory."""
    return IndexPaths.of(target).root


def current_snapshot_id(target) -> str | None:
    """Id of the last published index snapshot under ``target`` (a store or an index root)."""
    return IndexPaths.of(target).current()


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


_dir_bytes = dir_bytes  # the benchmark's name for it


def read_meta(snapshot_dir: Path) -> dict[str, Any]:
    return json.loads((snapshot_dir / "meta.json").read_text())


def _fragments(snapshot_dir: Path) -> list[Path]:
    return sorted((Path(snapshot_dir) / ENTRIES_DIR).glob("*.parquet"))


def read_entries_table(snapshot_dir: Path, columns: list[str] | None = None,
                       doc_ids: set[str] | None = None) -> pa.Table:
    """The entries of one snapshot directory as an Arrow table (optionally some ``columns``, and
    only the rows of ``doc_ids``: a filter on the ``doc_id`` column, not a full read)."""
    snapshot_dir = Path(snapshot_dir)
    legacy = snapshot_dir / LEGACY_ENTRIES
    files = [legacy] if legacy.exists() else _fragments(snapshot_dir)
    schema = ENTRY_SCHEMA if columns is None else pa.schema([ENTRY_SCHEMA.field(c) for c in columns])
    if doc_ids is not None and not doc_ids:
        return schema.empty_table()
    filters = None if doc_ids is None else [("doc_id", "in", sorted(doc_ids))]
    parts = [pq.read_table(f, columns=columns, filters=filters, schema=ENTRY_SCHEMA) for f in files]
    return pa.concat_tables(parts) if parts else schema.empty_table()


def read_entries(target, snapshot_id: str | None = None) -> list[Entry]:
    """Every entry of a snapshot (default: the one a reader of ``target`` uses), without vectors."""
    paths = IndexPaths.of(target)
    snap = snapshot_id or getattr(target, "index_snapshot_id", None) or paths.current()
    if snap is None:
        raise IndexNotBuiltError("no search index published yet; run `vectree ingest` first")
    return entries_from_table(read_entries_table(paths.snapshot(snap)))


def _write_fragments(folder: Path, table: pa.Table, prefix: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, start in enumerate(range(0, table.num_rows, FRAGMENT_ROWS)):
        atomic_write_parquet(folder / f"{prefix}-{i:05d}.parquet", table.slice(start, FRAGMENT_ROWS))


def write_entries(snapshot_dir: Path, entries: Sequence[Entry], prefix: str) -> None:
    """A fresh snapshot's entries, as fragments (one empty fragment for an empty index)."""
    table = entries_table(entries)
    folder = Path(snapshot_dir) / ENTRIES_DIR
    if table.num_rows == 0:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_parquet(folder / f"{prefix}-00000.parquet", table)
        return
    _write_fragments(folder, table, prefix)


def update_entries(snapshot_dir: Path, fresh: Sequence[Entry], doomed: set[str], prefix: str) -> None:
    """In a private snapshot copy: drop the rows of ``doomed`` papers and add ``fresh`` ones.
    Only the fragments holding a doomed paper are read whole and rewritten; the new rows become
    new fragments.  A copy in the old one-file layout is converted (once)."""
    snapshot_dir = Path(snapshot_dir)
    folder = snapshot_dir / ENTRIES_DIR
    legacy = snapshot_dir / LEGACY_ENTRIES
    if legacy.exists():
        old = pq.read_table(legacy)
        legacy.unlink()
        _write_fragments(folder, old, f"{prefix}-l")
    folder.mkdir(parents=True, exist_ok=True)
    if doomed:
        wanted = pa.array(sorted(doomed), type=pa.string())
        for j, f in enumerate(_fragments(snapshot_dir)):
            ids = pq.read_table(f, columns=["doc_id"]).column("doc_id")
            if not pa.compute.any(pa.compute.is_in(ids, value_set=wanted)).as_py():
                continue
            table = pq.read_table(f, schema=ENTRY_SCHEMA)
            keep = table.filter(pa.compute.invert(pa.compute.is_in(table.column("doc_id"), value_set=wanted)))
            f.unlink()  # a hard link to the published snapshot's file: that one stays
            if keep.num_rows:
                atomic_write_parquet(folder / f"{prefix}-r{j:05d}.parquet", keep)
    if fresh:
        _write_fragments(folder, entries_table(fresh), f"{prefix}-a")
    files = _fragments(snapshot_dir)
    if len(files) > MAX_FRAGMENTS:  # merge the small fragments; the full ones stay as they are
        small = [f for f in files if pq.ParquetFile(f).metadata.num_rows < FRAGMENT_ROWS // 2]
        if len(small) > 1:
            merged = pa.concat_tables([pq.read_table(f, schema=ENTRY_SCHEMA) for f in small])
            for f in small:
                f.unlink()
            _write_fragments(folder, merged, f"{prefix}-m")
    if not _fragments(snapshot_dir):
        write_entries(snapshot_dir, [], prefix)


def entry_counts(entries: Sequence[Entry]) -> dict[str, int]:
    return {"entries": len(entries), "papers": len({e.doc_id for e in entries}),
            "paper_entries": sum(e.kind == PAPER for e in entries),
            "section_entries": sum(e.kind == SECTION for e in entries)}


@contextmanager
def writer_lock(paths: IndexPaths) -> Iterator[None]:
    paths.root.mkdir(parents=True, exist_ok=True)
    with open(paths.root / ".lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


new_index_snapshot_id = new_snapshot_id


def validate_entries(entries: Sequence[Entry]) -> None:
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


def _is_immutable_data(rel: Path) -> bool:
    """Files that their library writes once and never rewrites in place: safe to hard-link."""
    parts = rel.parts
    if "vectors" == parts[0]:  # Lance: data files, deletion vectors and index files
        return any(p in ("data", "_indices", "_deletions") for p in parts)
    if ENTRIES_DIR == parts[0]:  # entries fragments are written once under a fresh name
        return rel.suffix == ".parquet"
    if "bm25" == parts[0]:  # Tantivy segment files are <32 hex uuid>.<ext>
        stem = rel.name.split(".")[0]
        return len(stem) == 32 and all(c in "0123456789abcdef" for c in stem)
    return False


def clone_snapshot(src: Path, dst: Path) -> None:
    """A private copy of a published snapshot to update: data files linked, the rest copied."""
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


def finish_snapshot(tmp: Path, snap_id: str, counts: dict[str, int], info: EmbedderInfo, vectors: VectorTable,
                    build: dict[str, Any], parent: str | None) -> dict[str, Any]:
    """Write a built snapshot's ``meta.json`` (its entries are written already); returns the meta."""
    sizes = {"bm25": dir_bytes(tmp / "bm25"), "vectors": dir_bytes(tmp / "vectors"),
             "entries": dir_bytes(tmp / ENTRIES_DIR)}
    sizes["total"] = sum(sizes.values())
    meta = {
        "format": INDEX_FORMAT,
        "snapshot_id": snap_id,
        "parent": parent,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "embedder": {"name": info.name, "dim": info.dim},
        **{k: int(counts[k]) for k in ("entries", "papers", "paper_entries", "section_entries")},
        "vector_index": vectors.vector_index_type or "flat",
        "bytes": sizes,
        "build": build,
    }
    atomic_write_bytes(tmp / "meta.json", json.dumps(meta, indent=1).encode())
    return meta


def publish(paths: IndexPaths, tmp: Path, snap_id: str, previous: str | None) -> None:
    """Move a finished snapshot into place, switch ``CURRENT`` to it, collect garbage."""
    os.replace(tmp, paths.snapshot(snap_id))
    atomic_write_bytes(paths.pointer, snap_id.encode())
    # keep the new snapshot, the one readers may still be on and those a store snapshot pins;
    # the rest (and leftovers of crashed builds: no other writer runs while we hold the lock) go
    keep = {snap_id, previous} | paths.protected()
    for path in paths.snapshots.iterdir():
        if path.name not in keep:
            shutil.rmtree(path, ignore_errors=True)
