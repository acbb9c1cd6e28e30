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

Paper ids look like ``<slug>-<sha256[:10]>``: stable for the same bytes, readable, and
restricted to ``[a-z0-9-]`` so they are safe in paths and URLs (:func:`validate_doc_id`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

STORE_LAYOUT_VERSION = 1

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
        ("status", pa.string()),  # ok | no_text | failed | skipped
        ("error", pa.string()),
        ("parsed_at", pa.string()),
    ]
)

MANIFEST_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("mtime", pa.float64()),
        ("sha256", pa.string()),
        ("doc_id", pa.string()),
        ("duplicate_of", pa.string()),  # path of the first file with the same bytes, else null
    ]
)


class StoreError(RuntimeError):
    """Raised for a missing or malformed artefact, with the path in the message."""


def validate_doc_id(doc_id: str) -> str:
    """Return ``doc_id`` unchanged, or raise ``ValueError`` for anything that is not a safe id."""
    if not isinstance(doc_id, str) or not DOC_ID_RE.match(doc_id):
        raise ValueError(f"invalid doc_id {doc_id!r}: expected lowercase letters, digits and '-'")
    return doc_id


def read_parquet(path: Path, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file as a table.  ``ParquetFile`` rather than ``pq.read_table``: the latter goes
    through ``pyarrow.dataset``, whose import alone costs a quarter of a second of every CLI start."""
    with pq.ParquetFile(path) as f:
        return f.read(columns=columns)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_parquet(path: Path, table: pa.Table) -> None:
    """Write a Parquet file atomically (temporary name, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_copy(src: Path, dst: Path) -> None:
    """Copy a file atomically into place."""
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Store:
    """Paths and typed reads/writes for one store root.  Cheap to construct; holds no handles."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).resolve()

    # ---- paths -------------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.parquet"

    @property
    def catalog_path(self) -> Path:
        return self.root / "docs.parquet"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def sprout_dir(self) -> Path:
        return self.root / "sprout"

    def record_path(self, doc_id: str) -> Path:
        return self.root / "papers" / f"{validate_doc_id(doc_id)}.json"

    def pages_path(self, doc_id: str) -> Path:
        return self.root / "pages" / f"{validate_doc_id(doc_id)}.parquet"

    def pdf_path(self, doc_id: str) -> Path:
        return self.root / "pdfs" / f"{validate_doc_id(doc_id)}.pdf"

    def tree_path(self, doc_id: str) -> Path:
        return self.root / "trees" / f"{validate_doc_id(doc_id)}.parquet"

    def per_paper_paths(self, doc_id: str) -> list[Path]:
        """Every per-paper artefact of the core layout (used when a paper leaves the corpus)."""
        return [self.record_path(doc_id), self.pages_path(doc_id), self.pdf_path(doc_id), self.tree_path(doc_id),
                self.root / "passages" / f"{doc_id}.parquet"]

    # ---- per-paper records -------------------------------------------------------------
    def write_record(self, doc_id: str, record: dict[str, Any]) -> None:
        atomic_write_bytes(self.record_path(doc_id), json.dumps(record, indent=1, sort_keys=True).encode())

    def read_record(self, doc_id: str) -> dict[str, Any]:
        path = self.record_path(doc_id)
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            raise StoreError(f"no record for paper {doc_id!r} at {path}") from None
        except json.JSONDecodeError as exc:
            raise StoreError(f"malformed paper record {path}: {exc}") from exc

    def record_ids(self) -> list[str]:
        d = self.root / "papers"
        return sorted(p.stem for p in d.glob("*.json")) if d.exists() else []

    # ---- pages -------------------------------------------------------------------------
    def write_pages(self, doc_id: str, pages: list[dict[str, Any]]) -> None:
        atomic_write_parquet(self.pages_path(doc_id), pa.Table.from_pylist(pages, schema=PAGES_SCHEMA))

    def read_pages(self, doc_id: str, columns: list[str] | None = None) -> list[dict[str, Any]]:
        """Pages of one paper as dicts, ordered by page number."""
        path = self.pages_path(doc_id)
        if not path.exists():
            raise StoreError(f"no pages for paper {doc_id!r} at {path}")
        rows = read_parquet(path, columns).to_pylist()
        if columns is None or "page_no" in columns:
            rows.sort(key=lambda r: r["page_no"])
        return rows

    def read_page_texts(self, doc_id: str) -> list[str]:
        """Text of every page; index ``i`` holds page ``i + 1``."""
        return [r["text"] for r in self.read_pages(doc_id, columns=["page_no", "text"])]

    # ---- catalog -----------------------------------------------------------------------
    def write_catalog(self, rows: Iterable[dict[str, Any]]) -> None:
        rows = sorted(rows, key=lambda r: r["doc_id"])
        atomic_write_parquet(self.catalog_path, pa.Table.from_pylist(rows, schema=CATALOG_SCHEMA))

    def read_catalog(self) -> list[dict[str, Any]]:
        """All catalog rows (empty when nothing has been ingested yet)."""
        if not self.catalog_path.exists():
            return []
        return read_parquet(self.catalog_path).to_pylist()

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
        atomic_write_parquet(self.manifest_path, pa.Table.from_pylist(rows, schema=MANIFEST_SCHEMA))

    def read_manifest(self) -> list[dict[str, Any]]:
        if not self.manifest_path.exists():
            return []
        return read_parquet(self.manifest_path).to_pylist()

    # ---- removal -----------------------------------------------------------------------
    def remove_paper(self, doc_id: str) -> list[Path]:
        """Delete every per-paper artefact of ``doc_id``; returns what was deleted."""
        removed = []
        for path in self.per_paper_paths(doc_id):
            if path.exists():
                path.unlink()
                removed.append(path)
        for extra in (self.sprout_dir / "trees").glob(f"{doc_id}.*") if (self.sprout_dir / "trees").exists() else []:
            shutil.rmtree(extra) if extra.is_dir() else extra.unlink()
            removed.append(extra)
        return removed
