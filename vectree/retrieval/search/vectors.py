"""Dense retrieval over search entries with a LanceDB table.

One table, ``entries``, per snapshot: ``entry_id``, ``doc_id``, ``node_id``, ``kind``, ``title``,
``page_start``, ``page_end`` and ``vector`` (unit-length float32, cosine distance).  ``doc_id``
carries a BTREE scalar index, so deleting one paper's rows does not scan the table.

Vector index policy (settings ``vector_index_min_rows``, ``vector_nprobes``,
``vector_refine_factor``): below ``vector_index_min_rows`` rows the search is an exact flat scan;
IVF-PQ needs several thousand rows to train its codebooks and is approximate, so it only pays once
the scan would eat the latency budget.  From that size on an IVF-PQ index (cosine, ~sqrt(n)
partitions, dim/8 sub-vectors) is built and queries visit ``vector_nprobes`` partitions and
re-rank ``vector_refine_factor`` x more candidates with the exact vectors, which keeps the ranking
close to the flat scan's (recall@10 against exact search: README, "Cost growth with the corpus").

Incremental writes cost what was written, not the table: an update deletes and appends rows
(a new data fragment; deletion files for the touched fragments) and does **not** compact or
re-index.  LanceDB searches rows that no index covers yet by brute force, so new rows are found
at once.  The whole table is folded (``optimize``: compaction, new rows into both indexes, old
versions dropped) only once the rows added since the last fold reach :data:`FOLD_FRACTION` of
the table (at least :data:`FOLD_MIN_ROWS`) or the fragments pile up past :data:`FOLD_MAX_FRAGMENTS`:
a geometric schedule, so the amortised cost per added row stays constant as the corpus grows.
"""

from __future__ import annotations

import math
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa

from .entries import Entry, EntryHit

TABLE = "entries"
# defaults of the settings of the same names (vectree/retrieval/config.py), used without settings
VECTOR_INDEX_MIN_ROWS = 5_000
NPROBES = 24
REFINE_FACTOR = 10
# when an incremental write folds the table (see the module docstring)
FOLD_FRACTION = 0.05
FOLD_MIN_ROWS = 2_048
FOLD_MAX_FRAGMENTS = 256
_COLUMNS = ["entry_id", "doc_id", "node_id", "kind", "title", "page_start", "page_end"]


def _schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("entry_id", pa.string()),
            ("doc_id", pa.string()),
            ("node_id", pa.string()),
            ("kind", pa.string()),
            ("title", pa.string()),
            ("page_start", pa.int32()),
            ("page_end", pa.int32()),
            ("vector", pa.list_(pa.float32(), dim)),
        ]
    )


def _sql_list(values: Iterable[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


DenseHit = EntryHit  # score: cosine similarity, in [-1, 1]


class VectorTable:
    """The ``entries`` table of one LanceDB directory, opened once and kept open."""

    def __init__(self, table, path: Path, dim: int, settings=None):
        self.table = table
        self.path = path
        self.dim = dim
        self._vector_index: str | None | bool = False  # False: not looked up yet
        if settings is None:
            from vectree.retrieval.config import load_settings

            settings = load_settings()
        self.index_min_rows = int(settings.vector_index_min_rows)
        self.nprobes = int(settings.vector_nprobes)
        self.refine_factor = int(settings.vector_refine_factor)
        self.folded = False  # whether the last write folded the table (optimize)

    @classmethod
    def create(cls, path: Path, dim: int, entries: Sequence[Entry] = (), vectors: np.ndarray | None = None,
               *, settings=None) -> "VectorTable":
        path = Path(path)
        path.mkdir(parents=True, exist_ok=False)
        import lancedb  # imported when a table is opened: about a third of a no-change refresh was this import

        db = lancedb.connect(str(path))
        table = db.create_table(TABLE, schema=_schema(dim))
        vt = cls(table, path, dim, settings)
        if entries:
            vt.table.add(vt._arrow(entries, vectors))
        from lancedb.index import BTree

        vt.table.create_index("doc_id", config=BTree())
        vt.ensure_vector_index()
        return vt

    @classmethod
    def open(cls, path: Path, *, settings=None) -> "VectorTable":
        path = Path(path)
        if not (path / f"{TABLE}.lance").exists():
            raise FileNotFoundError(f"no LanceDB table {TABLE!r} under {path}")
        import lancedb

        table = lancedb.connect(str(path)).open_table(TABLE)
        dim = table.schema.field("vector").type.list_size
        return cls(table, path, dim, settings)

    def _arrow(self, entries: Sequence[Entry], vectors: np.ndarray | None) -> pa.Table:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(entries), self.dim):
            raise ValueError(f"expected vectors of shape ({len(entries)}, {self.dim}), got {vectors.shape}")
        cols = {c: [getattr(e, c) for e in entries] for c in _COLUMNS}
        cols["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), type=pa.float32()), self.dim)
        return pa.table(cols, schema=_schema(self.dim))

    # ---- writes ----------------------------------------------------------------------
    def replace(self, entries: Sequence[Entry], vectors: np.ndarray | None, delete_doc_ids: Iterable[str]) -> None:
        """Delete the rows of ``delete_doc_ids``, append ``entries``.  No compaction or re-indexing
        unless the table is due a fold (:meth:`needs_fold`) or just reached the index threshold:
        the cost is that of the rows written (see the module docstring)."""
        doomed = sorted(set(delete_doc_ids))
        for i in range(0, len(doomed), 500):  # keep the SQL filter a sane length
            self.table.delete(f"doc_id IN ({_sql_list(doomed[i:i + 500])})")
        if entries:
            self.table.add(self._arrow(entries, vectors))
        self._vector_index = False
        self.folded = self.ensure_vector_index()
        if not self.folded and self.needs_fold():
            self._optimize()
            self.folded = True

    def unindexed_rows(self) -> int:
        """Rows written since the last fold: those the ``doc_id`` index does not cover yet."""
        for ix in self.table.list_indices():
            if "doc_id" in ix.columns:
                stats = self.table.index_stats(ix.name)
                return int(stats.num_unindexed_rows) if stats is not None else 0
        return self.table.count_rows()

    def needs_fold(self) -> bool:
        n = self.table.count_rows()
        if self.unindexed_rows() >= max(FOLD_MIN_ROWS, FOLD_FRACTION * n):
            return True
        return self.table.stats()["fragment_stats"]["num_fragments"] > FOLD_MAX_FRAGMENTS

    def ensure_vector_index(self) -> bool:
        """Build the IVF-PQ index when the table reached ``vector_index_min_rows`` and has none;
        returns whether one was built now (the table is then folded too)."""
        n = self.table.count_rows()
        if n < self.index_min_rows or self.vector_index_type is not None:
            return False
        sub = next(s for s in (self.dim // 8, self.dim // 4, self.dim // 2, 1) if s >= 1 and self.dim % s == 0)
        from lancedb.index import IvfPq

        self.table.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=max(8, int(math.sqrt(n))),
                                                      num_sub_vectors=sub))
        self._optimize()
        self._vector_index = False
        return True

    def _optimize(self) -> None:
        # Compact fragments, fold new rows into the indexes, and drop every older version: a
        # table is only written while its snapshot is still private to the builder, so no
        # reader can be on an older version (hence the warning about that is moot here).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.table.optimize(cleanup_older_than=timedelta(0))

    # ---- reads -----------------------------------------------------------------------
    @property
    def vector_index_type(self) -> str | None:
        """``"IvfPq"`` once the table has a vector index, else ``None`` (flat scan); cached."""
        if self._vector_index is False:
            self._vector_index = next((str(ix.index_type) for ix in self.table.list_indices()
                                       if "vector" in ix.columns), None)
        return self._vector_index

    @property
    def num_entries(self) -> int:
        return self.table.count_rows()

    def count_doc(self, doc_id: str) -> int:
        return self.table.count_rows(f"doc_id = {_sql_list([doc_id])}")

    def search(self, vector: np.ndarray, limit: int = 100, *, exact: bool = False) -> list[DenseHit]:
        """Nearest ``limit`` entries by cosine similarity (exact below the index threshold, or with
        ``exact``: a flat scan that ignores the index, the reference for its recall)."""
        q = self.table.search(np.asarray(vector, dtype=np.float32), vector_column_name="vector")
        q = q.distance_type("cosine").limit(limit).select(_COLUMNS + ["_distance"])
        if exact:
            q = q.bypass_vector_index()
        elif self.vector_index_type is not None:
            q = q.nprobes(self.nprobes).refine_factor(self.refine_factor)
        rows = q.to_arrow().to_pylist()
        return [DenseHit(entry_id=r["entry_id"], doc_id=r["doc_id"], node_id=r["node_id"], kind=r["kind"],
                         title=r["title"] or "", page_start=r["page_start"], page_end=r["page_end"],
                         score=1.0 - float(r["_distance"])) for r in rows]
