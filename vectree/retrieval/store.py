"""The artefact store: the contract between the pipeline (writer) and the query service (reader).

Layout under one root directory (default ``./.vectree``)::

    manifest.parquet         corpus scan, one row per source file (see MANIFEST_SCHEMA)
    docs.parquet             the catalog, one row per paper (see CATALOG_SCHEMA)
    papers/<doc_id>.json     per-paper parse record: status, error, metadata, outline
    pages/<doc_id>.parquet   one row per page (see PAGES_SCHEMA)
    pdfs/<doc_id>.pdf        byte-identical copy of the source PDF (page images render from it)
    trees/<doc_id>.parquet   verified section tree, one row per node
    passages/<doc_id>.parquet  paragraph passages with section and vector (within-paper search)
    index/                   search index snapshots (``index/CURRENT`` names the live one)
    sprout/                  SproutRAG model versions and per-paper trees
    dagster/                 the Dagster instance used by in-process runs (``vectree ingest``)

Rules every writer keeps:

* every file is written under a temporary name in the same directory and renamed into
  place (:func:`atomic_write_bytes`), so a reader sees the old file or the new one, never
  half of one;
* a per-paper artefact is written only by that paper's partition, so no partition
  overwrites another's;
* ``docs.parquet`` is derived from the per-paper records and rewritten whole.

A root that is a URI (``s3://bucket/prefix``) makes an :class:`ObjectStore`: the same layout in a
local copy, with published snapshots uploaded to and pulled from object storage (see the class).

Paper ids look like ``<slug>-<sha256[:10]>``: stable for the same bytes, readable, and
restricted to ``[a-z0-9-]`` so they are safe in paths and URLs (:func:`validate_doc_id`).
"""

from __future__ import annotations

import contextvars
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from .config import STORE_URI_RE, load_settings
from .objstore import ObjectStoreError, Remote, file_sha256, parallel

# 2: published store snapshots (``snapshots/``), ``layout.json``, per-artefact status in the catalog
STORE_LAYOUT_VERSION = 2
LAYOUT_FILE = "layout.json"
# store snapshots kept after a publish: the new one and the ones requests may still be pinned to
KEEP_SNAPSHOTS = 3
# the writer lock: how often a step waiting for its own run's other step looks again, and how long
# a lock whose holder is not written yet (taken a moment ago) is looked at again before it counts
_LOCK_POLL_S = 0.2
_LOCK_UNKNOWN_S = 2.0
SNAPSHOT_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{12}Z-[0-9a-f]{6}$")

DOC_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,95}$")

LINE_TYPE = pa.struct(
    [
        ("block", pa.int32()),
        ("x0", pa.float32()),
        ("y0", pa.float32()),
        ("x1", pa.float32()),
        ("y1", pa.float32()),
        ("text", pa.string()),
        ("size", pa.float32()),
        ("bold", pa.bool_()),
        ("font", pa.string()),
    ]
)

PAGES_SCHEMA = pa.schema(
    [
        ("page_no", pa.int32()),  # 1-based
        ("width", pa.float32()),
        ("height", pa.float32()),
        ("text", pa.string()),  # reading order, lines joined by "\n", blocks by "\n\n"
        ("lines", pa.list_(LINE_TYPE)),  # every text line with bbox, dominant font size, bold flag
    ]
)

ARTEFACT_TYPE = pa.struct([("artefact", pa.string()), ("ok", pa.bool_()), ("detail", pa.string())])

CATALOG_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("slug", pa.string()),
        ("title", pa.string()),
        ("authors", pa.list_(pa.string())),
        ("abstract", pa.string()),
        ("n_pages", pa.int32()),
        ("n_chars", pa.int64()),
        ("sha256", pa.string()),
        ("source_path", pa.string()),
        ("source_paths", pa.list_(pa.string())),  # every file name this content was found under
        ("status", pa.string()),  # ok | degraded | no_text | failed | skipped | pending
        ("error", pa.string()),
        ("parsed_at", pa.string()),
        # filled when a snapshot is published: one entry per artefact (pages, tree, passages,
        # index, sprout_tree) saying whether it is there and how it was made or why it is not
        ("artefacts", pa.list_(ARTEFACT_TYPE)),
        # 1-based pages whose text is instruction-like (``vectree.retrieval.injection``), flagged at
        # ingest; a catalog written before this column existed reads as ``[]`` (see read_catalog)
        ("instruction_pages", pa.list_(pa.int32())),
    ]
)

MANIFEST_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("mtime", pa.float64()),
        ("sha256", pa.string()),
        ("doc_id", pa.string()),
        ("duplicate_of", pa.string()),  # path of the copy that names the paper, else null
    ]
)


class StoreError(RuntimeError):
    """Raised for a missing or malformed artefact (the message names the artefact, not a path)."""


class StoreLayoutError(StoreError):
    """The store was written by a vectree with another layout version."""


def _busy_message(pid: str | None) -> str:
    """Why the writer lock is taken.  The pid is the process that took it; when that process has
    exited, the lock is still held by one it started (a run or step process of a stopped refresh
    still shutting down), which lets it go when it exits."""
    if pid is None:
        return "another refresh is running, pid unknown"
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return (f"another refresh is running, pid {pid}: that process has exited and one it started "
                "still holds the store; it lets go when it exits (try again in a moment)")
    except (ValueError, PermissionError):
        pass
    return f"another refresh is running, pid {pid}"


def _held(fh) -> bool:
    """Whether another open file holds the writer lock of ``fh``'s file: a shared probe that fails
    while the writer's exclusive lock is taken (two probes at once never see each other)."""
    try:
        fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            raise
        return True
    fcntl.flock(fh, fcntl.LOCK_UN)
    return False


class StoreBusyError(StoreError):
    """Another process holds the store's writer lock (a refresh is running)."""


class SnapshotNotFoundError(StoreError):
    """A requested snapshot id is not (or no longer) published."""


def validate_doc_id(doc_id: str) -> str:
    """Return ``doc_id`` unchanged, or raise ``ValueError`` for anything that is not a safe id."""
    if not isinstance(doc_id, str) or not DOC_ID_RE.match(doc_id):
        raise ValueError(f"invalid doc_id {doc_id!r}: expected lowercase letters, digits and '-'")
    return doc_id


def new_snapshot_id() -> str:
    """Sortable by creation time; the random tail keeps two ids made in one microsecond apart."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ") + "-" + uuid.uuid4().hex[:6]


# ---- atomic writes ---------------------------------------------------------------------------
_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where the kernel reports it (Linux)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:  # elsewhere reading it means setting it: put it straight back
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


def _file_mode() -> int:
    """``0o666`` less the process umask: what ``open()`` would give a new file.  ``mkstemp``
    creates files 0600 whatever the umask, so every atomic write sets this mode before the rename."""
    return 0o666 & ~current_umask()


def _temp_beside(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, _file_mode())
    return tmp


def read_parquet(path: Path, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file as a table.  ``ParquetFile`` rather than ``pq.read_table``: the latter goes
    through ``pyarrow.dataset``, whose import alone costs a quarter of a second of every CLI start."""
    with pq.ParquetFile(path) as f:
        return f.read(columns=columns)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename."""
    path = Path(path)
    tmp = _temp_beside(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_parquet(path: Path, table: pa.Table) -> None:
    """Write a Parquet file atomically (temporary name, then rename)."""
    path = Path(path)
    tmp = _temp_beside(path)
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_copy(src: Path, dst: Path) -> None:
    """Copy a file atomically into place."""
    dst = Path(dst)
    tmp = _temp_beside(dst)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def link_or_copy(src: Path, dst: Path, *, link: bool = True) -> None:
    """Hard-link ``src`` at ``dst`` (copy when links are not possible or not wanted).

    Every store writer replaces files by rename, never in place, so a link keeps the bytes the
    file had when it was linked: that is what makes a published snapshot immutable for free."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if link:
        try:
            os.link(src, dst)
            return
        except OSError:  # another file system, or links not supported
            pass
    shutil.copy2(src, dst)


# small files in a Lance/Tantivy folder may be metadata that a library rewrites; data files never are
_LINK_MIN_BYTES = 64 * 1024


def link_tree(src: Path, dst: Path) -> None:
    """Snapshot a file or a folder (a Lance table) at ``dst``: large files linked, small ones copied."""
    if src.is_file():
        link_or_copy(src, dst)
        return
    for path in sorted(src.rglob("*")):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif not path.name.endswith(".lock"):
            link_or_copy(path, target, link=path.stat().st_size >= _LINK_MIN_BYTES)


# ---- the pinned snapshot of this thread / request ---------------------------------------------
_PINNED: contextvars.ContextVar[dict[Path, "StoreView"] | None] = contextvars.ContextVar("vectree_pinned", default=None)


class Store:
    """Paths and typed reads/writes for one store root.  Cheap to construct; holds no handles.

    ``Store`` is the *working* store that the pipeline writes; readers (the service, the tools,
    ``vectree status``) use :meth:`view` or :meth:`reader`, which resolve every path through
    one published snapshot.  Opening a store checks its layout version
    (:class:`StoreLayoutError` with what to run when it differs)."""

    def __new__(cls, root: str | os.PathLike | None = None, *args: Any, **kwargs: Any):
        # a URI root (``s3://bucket/prefix``) is a store on object storage: every caller that
        # builds ``Store(settings.store_root)`` gets one without knowing the difference
        if cls is Store and is_store_uri(root):
            cls = ObjectStore
        return super().__new__(cls)

    def __init__(self, root: str | os.PathLike, *, check_layout: bool = True):
        self.root = Path(root).resolve()
        if check_layout:
            self.check_layout()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.root)!r})"

    # whether readers pull published snapshots from elsewhere (object storage) before reading them
    remote_snapshots = False

    @property
    def location(self) -> str:
        """Where the store is, as the user named it (a folder, or the URI of a store on object storage)."""
        return str(self.root)

    # ---- hooks of a store on object storage (no-ops here: see ObjectStore) ---------------
    def sync_working_copy(self) -> None:
        """Bring the working store in line with the published one before changing it."""

    def pulled_papers(self) -> dict[str, str]:
        """Papers whose artefacts :meth:`sync_working_copy` brought in (doc_id -> status) and that
        the pipeline has not yet recorded as built."""
        return {}

    def forget_pulled_papers(self) -> None:
        """The pipeline recorded :meth:`pulled_papers` as built."""

    # ---- layout version ----------------------------------------------------------------
    @property
    def layout_path(self) -> Path:
        return self.root / LAYOUT_FILE

    def layout_version(self) -> int | None:
        """The store's layout version; ``None`` for a new (empty) store; 1 for a store written
        before versions were recorded (it has a catalog or manifest but no ``layout.json``)."""
        try:
            return int(json.loads(self.layout_path.read_text())["layout"])
        except FileNotFoundError:
            legacy = (self.root / "docs.parquet").exists() or (self.root / "manifest.parquet").exists()
            return 1 if legacy else None
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreLayoutError(f"store at {self.location} has an unreadable {LAYOUT_FILE} ({exc}); "
                                   "point VECTREE_STORE (or --store) at a new folder and run `vectree ingest`") from None

    def check_layout(self) -> None:
        found = self.layout_version()
        if found is None or found == STORE_LAYOUT_VERSION:
            return
        newer = found > STORE_LAYOUT_VERSION
        raise StoreLayoutError(
            f"store at {self.location} has layout {found}, this vectree {'reads' if newer else 'writes'} layout "
            f"{STORE_LAYOUT_VERSION}: " + (
                "upgrade vectree, or point VECTREE_STORE (or --store) at a new folder" if newer else
                "delete that folder (or point VECTREE_STORE / --store at a new one) and run `vectree ingest PATH` again"))

    def mark_layout(self) -> None:
        """Record the layout version (every writer of the catalog, manifest or a snapshot calls it)."""
        if not self.layout_path.exists():
            atomic_write_bytes(self.layout_path, json.dumps({"layout": STORE_LAYOUT_VERSION}).encode())

    # ---- working paths -----------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.parquet"

    @property
    def catalog_path(self) -> Path:
        return self.root / "docs.parquet"

    @property
    def sources_path(self) -> Path:
        return self.root / "sources.json"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster"

    @property
    def lock_path(self) -> Path:
        return self.root / ".lock"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def index_pointer_path(self) -> Path:
        return self.index_dir / "CURRENT"

    @property
    def index_snapshots_dir(self) -> Path:
        return self.index_dir / "snapshots"

    def index_snapshot_dir(self, snapshot_id: str) -> Path:
        return self.index_snapshots_dir / snapshot_id

    @property
    def sprout_dir(self) -> Path:
        return self.root / "sprout"

    @property
    def sprout_models_dir(self) -> Path:
        return self.root / "sprout" / "models"

    @property
    def reranker_models_dir(self) -> Path:
        """Reranker + reader models trained into this store (`vectree reranker train`)."""
        return self.root / "reranker" / "models"

    @property
    def sprout_model_pointer_path(self) -> Path:
        return self.sprout_models_dir / "CURRENT"

    def sprout_model_dir(self, model_id: str) -> Path:
        return self.sprout_models_dir / model_id

    @property
    def sprout_trees_dir(self) -> Path:
        return self.sprout_dir / "trees"

    def sprout_tree_path(self, doc_id: str) -> Path:
        return self.sprout_trees_dir / f"{validate_doc_id(doc_id)}.lance"

    @property
    def sprout_training_dir(self) -> Path:
        return self.sprout_dir / "training_set"

    @property
    def sprout_cache_dir(self) -> Path:
        return self.sprout_dir / "cache"

    @property
    def snapshots_dir(self) -> Path:
        return self.root / "snapshots"

    @property
    def snapshot_pointer_path(self) -> Path:
        return self.snapshots_dir / "CURRENT"

    def record_path(self, doc_id: str) -> Path:
        return self.root / "papers" / f"{validate_doc_id(doc_id)}.json"

    def pages_path(self, doc_id: str) -> Path:
        return self.root / "pages" / f"{validate_doc_id(doc_id)}.parquet"

    def pdf_path(self, doc_id: str) -> Path:
        return self.root / "pdfs" / f"{validate_doc_id(doc_id)}.pdf"

    def tree_path(self, doc_id: str) -> Path:
        return self.root / "trees" / f"{validate_doc_id(doc_id)}.parquet"

    def tree_info_path(self, doc_id: str) -> Path:
        return self.root / "trees" / f"{validate_doc_id(doc_id)}.json"

    def passages_path(self, doc_id: str) -> Path:
        return self.root / "passages" / f"{validate_doc_id(doc_id)}.parquet"

    def per_paper_paths(self, doc_id: str) -> dict[str, Path]:
        """Every per-paper artefact, by name (the same names a snapshot manifest uses)."""
        return {"record": self.record_path(doc_id), "pages": self.pages_path(doc_id), "pdf": self.pdf_path(doc_id),
                "tree": self.tree_path(doc_id), "tree_info": self.tree_info_path(doc_id),
                "passages": self.passages_path(doc_id),
                "sprout_tree": self.sprout_tree_path(doc_id)}

    # ---- published pointers of the index and the SproutRAG model ------------------------
    @staticmethod
    def _read_pointer(path: Path) -> str | None:
        try:
            text = path.read_text().strip()
        except FileNotFoundError:
            return None
        return text or None

    def read_index_pointer(self) -> str | None:
        """Id of the search-index snapshot last published under ``index/``."""
        return self._read_pointer(self.index_pointer_path)

    def write_index_pointer(self, snapshot_id: str) -> None:
        atomic_write_bytes(self.index_pointer_path, snapshot_id.encode())

    def read_sprout_model_pointer(self) -> str | None:
        """Id of the live SproutRAG model (``sprout/models/CURRENT``), or ``None``."""
        return self._read_pointer(self.sprout_model_pointer_path)

    def write_sprout_model_pointer(self, model_id: str) -> None:
        atomic_write_bytes(self.sprout_model_pointer_path, model_id.encode())

    @property
    def index_snapshot_id(self) -> str | None:
        """The index snapshot a reader of this (working) store uses: the last published one."""
        return self.read_index_pointer()

    @property
    def sprout_model_id(self) -> str | None:
        return self.read_sprout_model_pointer()

    # ---- per-paper records -------------------------------------------------------------
    def write_record(self, doc_id: str, record: dict[str, Any]) -> None:
        atomic_write_bytes(self.record_path(doc_id), json.dumps(record, indent=1, sort_keys=True).encode())

    def read_record(self, doc_id: str) -> dict[str, Any]:
        path = self.record_path(doc_id)
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            raise StoreError(f"no record for paper {doc_id!r}") from None
        except json.JSONDecodeError as exc:
            raise StoreError(f"malformed record of paper {doc_id!r}: {exc}") from exc

    def write_tree_info(self, doc_id: str, info: dict[str, Any]) -> None:
        atomic_write_bytes(self.tree_info_path(doc_id), json.dumps(info, indent=1, sort_keys=True).encode())

    def read_tree_info(self, doc_id: str) -> dict[str, Any] | None:
        """How the paper's tree was made (source, LLM fallback and why), or ``None``."""
        try:
            return json.loads(self.tree_info_path(doc_id).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    @property
    def run_failures_path(self) -> Path:
        return self.root / "runs" / "failed.json"

    def write_run_failures(self, failures: dict[str, str]) -> None:
        """Why each paper's last pipeline run failed (the published status names the reason)."""
        atomic_write_bytes(self.run_failures_path, json.dumps(failures, indent=1, sort_keys=True).encode())

    def read_run_failures(self) -> dict[str, str]:
        try:
            return dict(json.loads(self.run_failures_path.read_text()))
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def record_ids(self) -> list[str]:
        d = self.root / "papers"
        return sorted(p.stem for p in d.glob("*.json")) if d.exists() else []

    # ---- pages -------------------------------------------------------------------------
    def write_pages(self, doc_id: str, pages: list[dict[str, Any]]) -> None:
        atomic_write_parquet(self.pages_path(doc_id), pa.Table.from_pylist(pages, schema=PAGES_SCHEMA))

    @contextmanager
    def pages_writer(self, doc_id: str, *, batch: int = 16) -> Iterator[Any]:
        """Write a paper's pages one at a time (``write(row)``), ``batch`` rows per row group;
        the file is renamed into place when the block ends, if any page was written (the old
        pages stay until then, and stay for good if the block raises)."""
        path = self.pages_path(doc_id)
        tmp = _temp_beside(path)
        buf: list[dict[str, Any]] = []
        state: dict[str, Any] = {"writer": None, "rows": 0}

        def flush() -> None:
            if not buf:
                return
            if state["writer"] is None:
                state["writer"] = pq.ParquetWriter(tmp, PAGES_SCHEMA, compression="zstd")
            state["writer"].write_table(pa.Table.from_pylist(buf, schema=PAGES_SCHEMA))
            state["rows"] += len(buf)
            buf.clear()

        def write(row: dict[str, Any]) -> None:
            buf.append(row)
            if len(buf) >= batch:
                flush()

        try:
            yield write
            flush()
            if state["writer"] is not None:
                state["writer"].close()
                state["writer"] = None
            if state["rows"]:
                os.chmod(tmp, _file_mode())
                os.replace(tmp, path)
        finally:
            if state["writer"] is not None:
                state["writer"].close()
            Path(tmp).unlink(missing_ok=True)

    def read_pages(self, doc_id: str, columns: list[str] | None = None) -> list[dict[str, Any]]:
        """Pages of one paper as dicts, ordered by page number."""
        path = self.pages_path(doc_id)
        if not path.exists():
            raise StoreError(f"no pages for paper {doc_id!r}")
        rows = read_parquet(path, columns).to_pylist()
        if columns is None or "page_no" in columns:
            rows.sort(key=lambda r: r["page_no"])
        return rows

    def read_page_texts(self, doc_id: str) -> list[str]:
        """Text of every page; index ``i`` holds page ``i + 1``."""
        return [r["text"] for r in self.read_pages(doc_id, columns=["page_no", "text"])]

    # ---- catalog -----------------------------------------------------------------------
    def write_catalog(self, rows: Iterable[dict[str, Any]]) -> None:
        self.mark_layout()
        atomic_write_parquet(self.catalog_path, catalog_table(rows))

    def read_catalog(self) -> list[dict[str, Any]]:
        """All catalog rows (empty when nothing has been ingested yet)."""
        if not self.catalog_path.exists():
            return []
        rows = read_parquet(self.catalog_path).to_pylist()
        for row in rows:  # columns added since an older store was written read as empty
            row["instruction_pages"] = row.get("instruction_pages") or []
        return rows

    def papers(self, status: str | None = "ok") -> list[dict[str, Any]]:
        """Catalog rows with the given status (``None`` for all)."""
        return [r for r in self.read_catalog() if status is None or r["status"] == status]

    def paper(self, doc_id: str) -> dict[str, Any]:
        validate_doc_id(doc_id)
        for row in self.read_catalog():
            if row["doc_id"] == doc_id:
                return row
        raise KeyError(doc_id)

    # ---- manifest ----------------------------------------------------------------------
    def write_manifest(self, rows: list[dict[str, Any]]) -> None:
        self.mark_layout()
        atomic_write_parquet(self.manifest_path, pa.Table.from_pylist(rows, schema=MANIFEST_SCHEMA))

    def read_manifest(self) -> list[dict[str, Any]]:
        if not self.manifest_path.exists():
            return []
        return read_parquet(self.manifest_path).to_pylist()

    def known_ids(self) -> dict[str, str]:
        """sha256 -> doc_id of every paper in the last corpus scan (ids stay while bytes stay)."""
        return {r["sha256"]: r["doc_id"] for r in self.read_manifest() if r.get("sha256") and r.get("doc_id")}

    # ---- removal -----------------------------------------------------------------------
    def remove_paper(self, doc_id: str) -> list[Path]:
        """Delete every per-paper artefact of ``doc_id`` from the working store (published
        snapshots keep their own links); returns what was deleted."""
        removed = []
        for path in self.per_paper_paths(doc_id).values():
            if path.is_dir():
                shutil.rmtree(path)
                removed.append(path)
            elif path.exists():
                path.unlink()
                removed.append(path)
        return removed

    # ---- one writer at a time ------------------------------------------------------------
    @contextmanager
    def writer_lock(self, *, wait: bool = False, holder: str | None = None,
                    turns_with: str | None = None) -> Iterator[None]:
        """Hold the store's writer lock (``.lock``, an ``fcntl`` lock the kernel drops when the
        process dies, so a killed refresh never leaves it stuck).  Without ``wait`` a second
        writer gets :class:`StoreBusyError` naming the holder's pid.

        ``holder`` names who holds it (a refresh id, a Dagster run id), written beside the pid so
        that the runs of one refresh can tell that their refresh holds it (:meth:`writer_holder`).
        ``turns_with``: while the lock is held by that holder (another step process of the same
        Dagster run), wait for it to be released instead of failing; anyone else still fails."""
        self.root.mkdir(parents=True, exist_ok=True)
        fh = open(self.lock_path, "a+")
        try:
            unknown_since = None
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise
                fh.seek(0)
                parts = fh.read().split()
                if turns_with is not None:
                    now = time.monotonic()
                    if parts[1:2] == [turns_with]:  # our own run's other step: its turn first
                        unknown_since = None
                        time.sleep(_LOCK_POLL_S)
                        continue
                    if not parts:  # taken a moment ago, holder not written yet: look again
                        unknown_since = unknown_since or now
                        if now - unknown_since < _LOCK_UNKNOWN_S:
                            time.sleep(_LOCK_POLL_S / 10)
                            continue
                raise StoreBusyError(_busy_message(parts[0] if parts else None)) from None
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()} {holder}" if holder else str(os.getpid()))
            fh.flush()
            try:
                yield
            finally:
                fh.seek(0)
                fh.truncate()
                fh.flush()
                fcntl.flock(fh, fcntl.LOCK_UN)
        finally:
            fh.close()

    def writer_holder(self) -> str | None:
        """The ``holder`` the writer lock is held with right now: ``None`` when it is free or was
        taken without one.  Only the lock's own state counts (a probe that fails because the
        lock is held); the file's text alone could be left by a killed process."""
        try:
            fh = open(self.lock_path)
        except FileNotFoundError:
            return None
        with fh:
            parts = fh.read().split()
            if len(parts) < 2:
                return None
            return parts[1] if _held(fh) else None  # free: the text is a leftover

    def writer_lock_free(self) -> bool:
        """Whether no process holds the writer lock now (unlike :meth:`writer_holder`, a lock
        taken without a holder counts as held)."""
        try:
            fh = open(self.lock_path)  # flock ignores the open mode; a probe creates nothing
        except FileNotFoundError:
            return True  # never locked
        with fh:
            return not _held(fh)

    # ---- published snapshots ---------------------------------------------------------------
    def current_snapshot_id(self) -> str | None:
        """Id of the live published snapshot, or ``None`` when nothing was published yet."""
        return self._read_pointer(self.snapshot_pointer_path)

    def snapshot_ids(self) -> list[str]:
        """Published snapshots on disk, oldest first."""
        d = self.snapshots_dir
        return sorted(p.name for p in d.iterdir() if p.is_dir() and SNAPSHOT_ID_RE.match(p.name)) if d.exists() else []

    def view(self, snapshot_id: str | None = None) -> "Store":
        """A read-only view of one published snapshot: the one pinned in this context (see
        :meth:`pinned`), else ``snapshot_id``, else the live one.  Before anything was published
        the working store is its own view."""
        if snapshot_id is None:
            pinned = (_PINNED.get() or {}).get(self.root)
            if pinned is not None:
                return pinned
            snapshot_id = self.current_snapshot_id()
            if snapshot_id is None:
                return self
        return StoreView.open(self, snapshot_id)

    @contextmanager
    def pinned(self, snapshot_id: str | None = None) -> Iterator["Store"]:
        """Pin one snapshot for the block: every read through :meth:`view` or :meth:`reader` in
        this thread or task (and in threads started from its context) resolves to it."""
        view = self.view(snapshot_id)
        current = dict(_PINNED.get() or {})
        current[self.root] = view
        token = _PINNED.set(current)
        try:
            yield view
        finally:
            _PINNED.reset(token)

    def reader(self) -> "StoreReader":
        """A read-only store whose every call resolves through :meth:`view` at call time: hand
        it to long-lived readers (the tools, the service)."""
        return StoreReader(self)

    @property
    def snapshot_id(self) -> str | None:
        """The snapshot this object reads (``None``: the working store, nothing published)."""
        return None

    def snapshot_manifest(self, snapshot_id: str) -> dict[str, Any]:
        if not SNAPSHOT_ID_RE.match(snapshot_id or ""):
            raise SnapshotNotFoundError(f"malformed snapshot id {snapshot_id!r}")
        try:
            return json.loads((self.snapshots_dir / snapshot_id / "snapshot.json").read_text())
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"snapshot {snapshot_id} is not published (live: "
                                        f"{self.current_snapshot_id()})") from None

    def referenced_index_snapshots(self) -> set[str]:
        """Index snapshots that a published store snapshot names (never garbage-collected)."""
        out = set()
        for sid in self.snapshot_ids():
            try:
                idx = self.snapshot_manifest(sid).get("index")
            except (StoreError, ValueError):
                continue
            if idx:
                out.add(idx)
        return out

    def publish_snapshot(self, catalog_rows: list[dict[str, Any]], *, index_snapshot: str | None,
                         sprout_model: str | None, extra: dict[str, Any] | None = None) -> str:
        """Publish the working store as one immutable snapshot and switch ``snapshots/CURRENT``
        to it in one rename.  ``catalog_rows`` (with their statuses) become the snapshot's
        catalog; every per-paper artefact of those papers that exists is hard-linked in; the
        index snapshot and the model are recorded by id.  Older snapshots beyond
        :data:`KEEP_SNAPSHOTS` are deleted.  Returns the new id."""
        self.mark_layout()
        self.snapshots_dir.mkdir(parents=True, exist_ok=True)
        with open(self.snapshots_dir / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            snap_id = new_snapshot_id()
            tmp = self.snapshots_dir / f".tmp-{snap_id}"
            try:
                view = Store(tmp, check_layout=False)
                papers: dict[str, dict[str, str]] = {}
                for row in catalog_rows:
                    doc_id = row["doc_id"]
                    have = {}
                    for name, src in self.per_paper_paths(doc_id).items():
                        if src.exists():
                            dst = view.per_paper_paths(doc_id)[name]
                            link_tree(src, dst)
                            have[name] = str(dst.relative_to(tmp))
                    papers[doc_id] = have
                atomic_write_parquet(tmp / "docs.parquet", catalog_table(catalog_rows))
                manifest = {"snapshot_id": snap_id, "layout": STORE_LAYOUT_VERSION,
                            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                            "previous": self.current_snapshot_id(), "index": index_snapshot,
                            "sprout_model": sprout_model, "catalog": "docs.parquet", "papers": papers,
                            **(extra or {})}
                atomic_write_bytes(tmp / "snapshot.json", json.dumps(manifest, indent=1, sort_keys=True).encode())
                os.replace(tmp, self.snapshots_dir / snap_id)
                atomic_write_bytes(self.snapshot_pointer_path, snap_id.encode())
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            # leftovers of killed publishes, and snapshots too old for any request to hold
            for path in self.snapshots_dir.iterdir():
                if path.name.startswith(".tmp-"):
                    shutil.rmtree(path, ignore_errors=True)
            for old in self.snapshot_ids()[:-KEEP_SNAPSHOTS]:
                if old != snap_id:
                    shutil.rmtree(self.snapshots_dir / old, ignore_errors=True)
        return snap_id


def catalog_table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    rows = sorted(rows, key=lambda r: r["doc_id"])
    return pa.Table.from_pylist([{k: r.get(k) for k in CATALOG_SCHEMA.names} for r in rows], schema=CATALOG_SCHEMA)


_VIEWS: "OrderedDict[tuple[Path, str], StoreView]" = OrderedDict()
_VIEWS_LOCK = threading.Lock()


class StoreView(Store):
    """One published snapshot, read-only.  Its per-paper paths and catalog are the snapshot's
    own (hard links made at publish time); the index snapshot and the SproutRAG model are the
    ones the snapshot's ``snapshot.json`` names."""

    def __init__(self, store: Store, snapshot_id: str, manifest: dict[str, Any]):
        super().__init__(store.snapshots_dir / snapshot_id, check_layout=False)
        self.store = store
        self.manifest = manifest
        self._snapshot_id = snapshot_id

    @classmethod
    def open(cls, store: Store, snapshot_id: str) -> "StoreView":
        """The view of a published snapshot (views are immutable, so they are cached)."""
        key = (store.root, snapshot_id)
        with _VIEWS_LOCK:
            view = _VIEWS.get(key)
            if view is not None:
                _VIEWS.move_to_end(key)
                return view
        view = cls(store, snapshot_id, store.snapshot_manifest(snapshot_id))
        with _VIEWS_LOCK:
            _VIEWS[key] = view
            while len(_VIEWS) > 32:
                _VIEWS.popitem(last=False)
        return view

    def __repr__(self) -> str:
        return f"StoreView({str(self.store.root)!r}, {self._snapshot_id!r})"

    @property
    def snapshot_id(self) -> str:
        return self._snapshot_id

    # the shared, id-addressed parts live in the store itself
    @property
    def index_dir(self) -> Path:
        return self.store.index_dir

    @property
    def sprout_models_dir(self) -> Path:
        return self.store.sprout_models_dir

    @property
    def index_snapshot_id(self) -> str | None:
        return self.manifest.get("index")

    @property
    def sprout_model_id(self) -> str | None:
        return self.manifest.get("sprout_model")

    def read_index_pointer(self) -> str | None:
        return self.index_snapshot_id

    def read_sprout_model_pointer(self) -> str | None:
        return self.sprout_model_id

    def view(self, snapshot_id: str | None = None) -> Store:
        return self if snapshot_id in (None, self._snapshot_id) else self.store.view(snapshot_id)

    def current_snapshot_id(self) -> str | None:
        return self.store.current_snapshot_id()

    def read_manifest(self) -> list[dict[str, Any]]:
        return self.store.read_manifest()

    def _read_only(self, *_, **__):
        raise StoreError("a published snapshot is read-only; write through the working Store")

    write_record = write_pages = write_catalog = write_manifest = _read_only
    write_index_pointer = write_sprout_model_pointer = publish_snapshot = remove_paper = mark_layout = _read_only


class StoreReader:
    """A store for long-lived readers: each call resolves the snapshot at that moment (the one
    pinned in this context, else the live one), so a request that pins sees one snapshot
    throughout and a reader that does not always sees a whole one."""

    def __init__(self, store: Store):
        self._store = store
        self.root = store.root

    def __repr__(self) -> str:
        return f"StoreReader({str(self.root)!r})"

    @property
    def working(self) -> Store:
        return self._store

    def view(self, snapshot_id: str | None = None) -> Store:
        return self._store.view(snapshot_id)

    def pinned(self, snapshot_id: str | None = None):
        return self._store.pinned(snapshot_id)

    def reader(self) -> "StoreReader":
        return self

    def __getattr__(self, name: str):
        return getattr(self._store.view(), name)


# ---- stores on object storage ------------------------------------------------------------------
# Under the URI's prefix (every object written whole; the pointer last):
#   layout.json               {"layout": STORE_LAYOUT_VERSION, "objstore": OBJSTORE_FORMAT}
#   blobs/<sha256>            file contents, content-addressed: written once, shared by snapshots
#   snapshots/<id>.json       one published snapshot: every file of it (local path -> sha256, size)
#   CURRENT                   id of the live snapshot; its one PUT is what publishes
OBJSTORE_FORMAT = 1
REMOTE_POINTER = "CURRENT"
REMOTE_SNAPSHOTS = "snapshots"
REMOTE_BLOBS = "blobs"
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
_PULL_LOCK = threading.Lock()


def is_store_uri(root: Any) -> bool:
    """Whether a store root names object storage (``s3://bucket/prefix``) rather than a folder."""
    return isinstance(root, str) and bool(STORE_URI_RE.match(root))


def cache_key(uri: str) -> str:
    """The local folder name of a store URI: readable, and unique by its hash."""
    slug = re.sub(r"[^a-z0-9]+", "-", uri.lower()).strip("-")[:60]
    return f"{slug}-{hashlib.sha256(uri.encode()).hexdigest()[:12]}"


def _safe_rel(rel: str) -> str:
    """A relative path from a remote manifest, refused when it could leave the local folder."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in rel:
        raise StoreError(f"malformed path {rel[:80]!r} in a published snapshot")
    return rel


class ObjectStore(Store):
    """A store whose published snapshots live on object storage (``s3://bucket/prefix``).

    ``root`` is a local folder (``<store_cache>/<cache_key(uri)>``) laid out like any store: the
    writer's working copy (the pipeline and its Dagster instance work there, as on a local store)
    and the published snapshots this machine has pulled.  Publishing (:meth:`publish_snapshot`)
    publishes locally, uploads every file of the new snapshot that the bucket does not hold yet
    (content-addressed blobs, so an unchanged paper is never uploaded twice), its file list, then
    the pointer: one PUT, so a reader sees the previous snapshot or the new one, never a torn one.
    Readers resolve :meth:`current_snapshot_id` from the pointer (at most once every
    ``store_poll_seconds``) and pull a snapshot whole into the local folder before they read it
    (:meth:`pull_snapshot`); Tantivy, LanceDB and Parquet then read local files.
    A writer on a machine whose working copy is not the live snapshot's (a fresh machine, or another
    machine published since) first rebuilds it from that snapshot (:meth:`sync_working_copy`).
    """

    def __init__(self, root: str, *, check_layout: bool = True, cache_dir: str | os.PathLike | None = None,
                 poll_seconds: float | None = None):
        settings = load_settings() if cache_dir is None or poll_seconds is None else None
        self.uri = str(root).rstrip("/")
        self.remote = Remote(self.uri)
        cache = Path(cache_dir if cache_dir is not None else settings.store_cache).expanduser()
        self.root = (cache / cache_key(self.uri)).resolve()
        self.poll_seconds = float(settings.store_poll_seconds if poll_seconds is None else poll_seconds)
        self._pointer: tuple[float, str | None] = (0.0, None)
        self._pointer_lock = threading.Lock()
        self.root.mkdir(parents=True, exist_ok=True)
        if check_layout:
            self.check_layout()

    remote_snapshots = True

    def __repr__(self) -> str:
        return f"ObjectStore({self.uri!r})"

    @property
    def location(self) -> str:
        return self.uri

    # ---- local bookkeeping ---------------------------------------------------------------
    @property
    def objstore_dir(self) -> Path:
        """Local state of the copy: ``state.json``, the hash cache, pulled blobs, staging."""
        return self.root / ".objstore"

    @property
    def blobs_dir(self) -> Path:
        return self.objstore_dir / "blobs"

    @property
    def _state_path(self) -> Path:
        return self.objstore_dir / "state.json"

    def _read_state(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self._state_path.read_text()))
        except (FileNotFoundError, ValueError, TypeError):
            return {}

    def _write_state(self, state: dict[str, Any]) -> None:
        atomic_write_bytes(self._state_path, json.dumps({"uri": self.uri, **state}, indent=1, sort_keys=True).encode())

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    # ---- layout ----------------------------------------------------------------------------
    def layout_version(self) -> int | None:
        data = self.remote.get(LAYOUT_FILE)
        if data is None:
            self.remote.check_bucket()  # a new store, or a mistyped bucket?
            return None
        try:
            return int(json.loads(data)["layout"])
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreLayoutError(f"store at {self.uri} has an unreadable {LAYOUT_FILE} ({exc}); "
                                   "point VECTREE_STORE (or --store) at a new prefix and run `vectree ingest`") from None

    # ---- the live snapshot -----------------------------------------------------------------
    def current_snapshot_id(self) -> str | None:
        return self._remote_pointer()

    def _remote_pointer(self, *, fresh: bool = False) -> str | None:
        with self._pointer_lock:
            read_at, value = self._pointer
            if not fresh and read_at and time.monotonic() - read_at < self.poll_seconds:
                return value
        try:
            data = self.remote.get(REMOTE_POINTER)
        except ObjectStoreError:
            if fresh or not read_at:
                raise
            # the bucket did not answer: keep serving the snapshot we have, ask again next interval
            with self._pointer_lock:
                self._pointer = (time.monotonic(), value)
            return value
        value = (data.decode("utf-8", "replace").strip() or None) if data is not None else None
        if value is not None and not SNAPSHOT_ID_RE.match(value):
            raise StoreError(f"{self.uri}/{REMOTE_POINTER} does not name a snapshot ({value[:40]!r})")
        with self._pointer_lock:
            self._pointer = (time.monotonic(), value)
        return value

    def snapshot_manifest(self, snapshot_id: str) -> dict[str, Any]:
        self.pull_snapshot(snapshot_id)
        return super().snapshot_manifest(snapshot_id)

    def referenced_index_snapshots(self) -> set[str]:
        # the snapshots on this machine only: pulling here (maybe under the pull lock) would deadlock
        out = set()
        for sid in self.snapshot_ids():
            try:
                idx = Store.snapshot_manifest(self, sid).get("index")
            except (StoreError, ValueError):
                continue
            if idx:
                out.add(idx)
        return out

    def _remote_manifest(self, snapshot_id: str) -> dict[str, Any]:
        data = self.remote.get(f"{REMOTE_SNAPSHOTS}/{snapshot_id}.json")
        if data is None:
            raise SnapshotNotFoundError(f"snapshot {snapshot_id} is not published at {self.uri}")
        try:
            manifest = json.loads(data)
            if manifest.get("format") != OBJSTORE_FORMAT:
                raise ValueError(f"format {manifest.get('format')!r}, this vectree reads {OBJSTORE_FORMAT}")
            return manifest
        except (ValueError, AttributeError) as exc:
            raise StoreError(f"snapshot {snapshot_id} at {self.uri} has an unreadable file list ({exc})") from None

    # ---- pulling a snapshot ----------------------------------------------------------------
    @contextmanager
    def _file_lock(self, name: str) -> Iterator[None]:
        self.objstore_dir.mkdir(parents=True, exist_ok=True)
        with open(self.objstore_dir / f"{name}.lock", "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _fetch_blobs(self, entries: Iterable[tuple[str, int]]) -> None:
        """Download every blob not in the local blob cache (checked against its hash)."""
        need = sorted({sha for sha, _ in entries if not (self.blobs_dir / sha).exists()})
        for sha in need:
            if not _SHA_RE.match(sha):
                raise StoreError(f"malformed blob name {sha[:80]!r} in a published snapshot")

        def fetch(sha: str) -> None:
            try:
                self.remote.download(f"{REMOTE_BLOBS}/{sha}", self.blobs_dir / sha, sha256=sha, mode=_file_mode())
            except FileNotFoundError:
                raise SnapshotNotFoundError(f"a file of the snapshot is gone from {self.uri} "
                                            "(collected after newer publishes)") from None

        parallel(fetch, need)

    def pull_snapshot(self, snapshot_id: str) -> Path:
        """The local folder of a published snapshot, downloaded first if this machine lacks it.

        The snapshot's folder, its index snapshot and its SproutRAG model are each assembled in a
        staging folder (files hard-linked from the blob cache) and renamed into place, the store
        snapshot last: a snapshot folder with its ``snapshot.json`` is always complete."""
        if not SNAPSHOT_ID_RE.match(snapshot_id or ""):
            raise SnapshotNotFoundError(f"malformed snapshot id {snapshot_id!r}")
        target = self.snapshots_dir / snapshot_id
        if (target / "snapshot.json").exists():
            return target
        with _PULL_LOCK, self._file_lock("pull"):
            if (target / "snapshot.json").exists():  # another thread or process pulled it meanwhile
                return target
            manifest = self._remote_manifest(snapshot_id)
            folders: dict[str, dict[str, list]] = manifest.get("folders") or {}
            missing = {_safe_rel(f): files for f, files in folders.items() if not (self.root / _safe_rel(f)).exists()}
            self._fetch_blobs((sha, size) for files in missing.values() for sha, size in files.values())
            # the store snapshot's own folder last: its presence says the rest is there
            for folder in sorted(missing, key=lambda f: f == self._rel(target)):
                self._assemble(folder, missing[folder])
            if not (target / "snapshot.json").exists():
                raise StoreError(f"snapshot {snapshot_id} at {self.uri} lists no snapshot.json")
            self._collect_local(keep=snapshot_id)
        return target

    def _assemble(self, folder: str, files: dict[str, list]) -> None:
        staging = Path(tempfile.mkdtemp(prefix="pull-", dir=self._staging_dir()))
        try:
            for rel, (sha, _size) in files.items():
                dst = staging / _safe_rel(rel)
                dst.parent.mkdir(parents=True, exist_ok=True)
                link_or_copy(self.blobs_dir / sha, dst)
            final = self.root / folder
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(staging, final)
            except OSError:
                if not final.exists():
                    raise  # else: it appeared meanwhile (a local publish of the same id): keep that
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _staging_dir(self) -> Path:
        d = self.objstore_dir / "staging"
        d.mkdir(parents=True, exist_ok=True)
        return d

    def _collect_local(self, keep: str) -> None:
        """Drop pulled snapshots beyond the last :data:`KEEP_SNAPSHOTS`, index snapshots older
        than every kept one and unreferenced, and blobs nothing links to any more."""
        ids = self.snapshot_ids()
        for old in ids[:-KEEP_SNAPSHOTS]:
            if old != keep:
                shutil.rmtree(self.snapshots_dir / old, ignore_errors=True)
        kept = self.snapshot_ids()
        if kept and self.index_snapshots_dir.exists():
            needed = self.referenced_index_snapshots() | {self.read_index_pointer()}
            for d in self.index_snapshots_dir.iterdir():
                # older than the oldest kept snapshot: a working-copy build in progress is newer
                if SNAPSHOT_ID_RE.match(d.name) and d.name not in needed and d.name < kept[0]:
                    shutil.rmtree(d, ignore_errors=True)
        if self.blobs_dir.exists():
            for blob in self.blobs_dir.iterdir():
                try:
                    if blob.stat().st_nlink == 1:  # no pulled folder links it any more
                        blob.unlink()
                except FileNotFoundError:
                    pass

    # ---- publishing ------------------------------------------------------------------------
    def publish_snapshot(self, catalog_rows: list[dict[str, Any]], *, index_snapshot: str | None,
                         sprout_model: str | None, extra: dict[str, Any] | None = None) -> str:
        """Publish locally (:meth:`Store.publish_snapshot`), then to the bucket: blobs, file list,
        pointer.  Until the pointer is written nothing changes for readers; a failed upload
        raises and the previous snapshot keeps serving."""
        snap_id = super().publish_snapshot(catalog_rows, index_snapshot=index_snapshot, sprout_model=sprout_model,
                                           extra=extra)
        self.push_snapshot(snap_id)
        return snap_id

    def _hash_files(self, paths: list[Path]) -> dict[Path, list]:
        """``path -> [sha256, size]``, reusing hashes of files whose inode, size and mtime are
        unchanged since the last publish (hard links make most of a snapshot such files)."""
        cache_path = self.objstore_dir / "hashes.json"
        try:
            cache = dict(json.loads(cache_path.read_text()))
        except (FileNotFoundError, ValueError, TypeError):
            cache = {}
        out, used = {}, {}
        for path in paths:
            st = path.stat()
            key = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
            sha = cache.get(key) or file_sha256(path)
            used[key] = sha
            out[path] = [sha, st.st_size]
        atomic_write_bytes(cache_path, json.dumps(used).encode())
        return out

    def push_snapshot(self, snap_id: str) -> None:
        """Upload a locally published snapshot and make it the live one (see the class)."""
        snap_dir = self.snapshots_dir / snap_id
        info = json.loads((snap_dir / "snapshot.json").read_text())
        folders: dict[str, Path] = {}
        if info.get("index") and self.index_snapshot_dir(info["index"]).is_dir():
            folders[self._rel(self.index_snapshot_dir(info["index"]))] = self.index_snapshot_dir(info["index"])
        model = info.get("sprout_model")
        if model and model != "none" and self.sprout_model_dir(model).is_dir():
            folders[self._rel(self.sprout_model_dir(model))] = self.sprout_model_dir(model)
        folders[self._rel(snap_dir)] = snap_dir
        listed = {name: sorted(p for p in d.rglob("*") if p.is_file() and not p.name.endswith(".lock"))
                  for name, d in folders.items()}
        # the working store's own state, so a writer on another machine can carry on from here
        writer = [p for p in (self.manifest_path, self.catalog_path, self.sources_path, self.run_failures_path)
                  if p.exists()]
        hashes = self._hash_files([p for ps in listed.values() for p in ps] + writer)
        present = set(self.remote.list(REMOTE_BLOBS))
        todo: dict[str, Path] = {}
        for path, (sha, _) in hashes.items():
            if sha not in present:
                todo.setdefault(sha, path)
        parallel(lambda sha: self.remote.upload(todo[sha], f"{REMOTE_BLOBS}/{sha}"), sorted(todo))
        manifest = {
            "format": OBJSTORE_FORMAT, "snapshot_id": snap_id, "created_at": info.get("created_at"),
            "index": info.get("index"), "sprout_model": model,
            "folders": {name: {p.relative_to(folders[name]).as_posix(): hashes[p] for p in ps}
                        for name, ps in listed.items()},
            "writer": {self._rel(p): hashes[p] for p in writer},
        }
        self.remote.put(f"{REMOTE_SNAPSHOTS}/{snap_id}.json", json.dumps(manifest, sort_keys=True).encode())
        if self.remote.get(LAYOUT_FILE) is None:
            self.remote.put(LAYOUT_FILE, json.dumps({"layout": STORE_LAYOUT_VERSION, "objstore": OBJSTORE_FORMAT}).encode())
        self.remote.put(REMOTE_POINTER, snap_id.encode())  # the publish: one object, written whole
        with self._pointer_lock:
            self._pointer = (time.monotonic(), snap_id)
        self._write_state({**self._read_state(), "base": snap_id})
        self._collect_remote(snap_id, manifest)

    def _collect_remote(self, snap_id: str, manifest: dict[str, Any]) -> None:
        """Delete file lists beyond the last :data:`KEEP_SNAPSHOTS` and blobs no kept list names.
        Only the one writer runs this, after its pointer write, so nothing live loses a file."""
        ids = sorted(n[: -len(".json")] for n in self.remote.list(REMOTE_SNAPSHOTS)
                     if n.endswith(".json") and SNAPSHOT_ID_RE.match(n[: -len(".json")]))
        keep = set(ids[-KEEP_SNAPSHOTS:]) | {snap_id}
        self.remote.delete(f"{REMOTE_SNAPSHOTS}/{i}.json" for i in ids if i not in keep)
        referenced: set[str] = set()
        for sid in keep:
            try:
                m = manifest if sid == snap_id else self._remote_manifest(sid)
            except StoreError:
                continue
            referenced |= {sha for files in m.get("folders", {}).values() for sha, _ in files.values()}
            referenced |= {sha for sha, _ in m.get("writer", {}).values()}
        self.remote.delete(f"{REMOTE_BLOBS}/{b}" for b in self.remote.list(REMOTE_BLOBS)
                           if _SHA_RE.match(b) and b not in referenced)

    # ---- the writer's working copy ------------------------------------------------------------
    @contextmanager
    def writer_lock(self, *, wait: bool = False, holder: str | None = None,
                    turns_with: str | None = None) -> Iterator[None]:
        """The local writer lock, then :meth:`sync_working_copy` under it.  It excludes writers on
        this machine only: one machine at a time should write a store on object storage."""
        with super().writer_lock(wait=wait, holder=holder, turns_with=turns_with):
            self._sync_locked()
            yield

    def sync_working_copy(self) -> None:
        with self.writer_lock():
            pass

    def _sync_locked(self) -> None:
        live = self._remote_pointer(fresh=True)
        state = self._read_state()
        if live == state.get("base"):
            return  # this copy published the live snapshot, or was built from it
        self._reset_working_copy()
        pulled: dict[str, str] = {}
        if live is not None:
            snap_dir = self.pull_snapshot(live)
            info = json.loads((snap_dir / "snapshot.json").read_text())
            for doc_id, have in (info.get("papers") or {}).items():
                paths = self.per_paper_paths(doc_id)
                for name, rel in have.items():
                    if name in paths:
                        link_tree(snap_dir / _safe_rel(rel), paths[name])
            writer = self._remote_manifest(live).get("writer") or {}
            self._fetch_blobs(writer.values())
            for rel, (sha, _) in writer.items():
                atomic_copy(self.blobs_dir / sha, self.root / _safe_rel(rel))
            if info.get("index"):
                self.write_index_pointer(info["index"])
            if info.get("sprout_model"):
                self.write_sprout_model_pointer(info["sprout_model"])
            # built papers: the pipeline records them so an unchanged refresh does not redo them;
            # degraded ones (a failed run) are left to be built again, as they would be here
            for row in read_parquet(snap_dir / "docs.parquet", ["doc_id", "status"]).to_pylist():
                if row["status"] not in ("degraded", "pending"):
                    pulled[row["doc_id"]] = row["status"]
            self._collect_local(keep=live)
        self._write_state({"base": live, "pulled": pulled})

    def _reset_working_copy(self) -> None:
        """Forget the working store (its pipeline state included); pulled snapshots, index
        snapshots, models and blobs stay (id- or content-addressed, so never stale)."""
        for path in (self.manifest_path, self.catalog_path, self.sources_path, self.run_failures_path,
                     self.index_pointer_path, self.sprout_model_pointer_path):
            path.unlink(missing_ok=True)
        for folder in {p.parent for p in self.per_paper_paths("x").values()} | {self.dagster_home}:
            shutil.rmtree(folder, ignore_errors=True)

    def pulled_papers(self) -> dict[str, str]:
        return dict(self._read_state().get("pulled") or {})

    def forget_pulled_papers(self) -> None:
        state = self._read_state()
        if state.get("pulled"):
            self._write_state({**state, "pulled": {}})
