"""The search index's public face, split by job: :mod:`.build` (full and incremental builds),
:mod:`.publish` (snapshot layout, metadata, atomic publish, garbage collection) and :mod:`.query`
(:class:`SearchIndex`, the reader that runs each query against one snapshot).  Import from here
or from :mod:`vectree.retrieval.search`."""

from vectree.retrieval.embed import EmbedderMismatchError

from .build import EMBED_BATCH, BuildReport, build_index, update_index
from .publish import (
    INDEX_FORMAT,
    IndexNotBuiltError,
    IndexPaths,
    current_snapshot_id,
    dir_bytes,
    index_root,
    read_entries,
)
from .query import (
    DEFAULT_DENSE_WEIGHT,
    DEFAULT_FUSION,
    MIN_CANDIDATES,
    MODES,
    QUERY_THREADS,
    SearchIndex,
    _Snapshot,
    default_fusion,
    encode_query,
    search,
)

_dir_bytes = dir_bytes

__all__ = [
    "DEFAULT_DENSE_WEIGHT", "DEFAULT_FUSION", "EMBED_BATCH", "INDEX_FORMAT", "MIN_CANDIDATES", "MODES",
    "QUERY_THREADS", "BuildReport", "EmbedderMismatchError", "IndexNotBuiltError", "IndexPaths", "SearchIndex",
    "_Snapshot", "build_index", "current_snapshot_id", "default_fusion", "encode_query", "index_root",
    "read_entries", "search", "update_index",
]
