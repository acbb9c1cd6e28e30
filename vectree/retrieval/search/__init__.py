"""Layer 0 corpus search: hybrid Tantivy BM25 + LanceDB dense retrieval over compact entries.

One entry per paper (title, abstract, section titles) and one per verified section (title and
summary) are indexed; full page text never is.  A query returns ranked *papers*, each with the
sections that matched and their page ranges::

    from vectree.retrieval.search import build_index, search
    build_index(store)                       # or update_index(store): only changed papers
    search(store, "cathode cracking", k=5)   # [{doc_id, title, score, matched_sections}, ...]

See :mod:`vectree.retrieval.search.index` for snapshots and atomic publishing, :mod:`.fusion` for how
BM25 and dense rankings are combined.
"""

from vectree.retrieval.embed import EmbedderMismatchError

from .entries import Entry, entries_for_paper, paper_entry, section_entry, store_entries
from .fusion import FUSIONS, fuse
from .index import (
    DEFAULT_DENSE_WEIGHT,
    DEFAULT_FUSION,
    MODES,
    BuildReport,
    IndexNotBuiltError,
    SearchIndex,
    build_index,
    read_entries,
    search,
    update_index,
)

__all__ = [
    "DEFAULT_DENSE_WEIGHT", "DEFAULT_FUSION", "FUSIONS", "MODES", "BuildReport", "EmbedderMismatchError", "Entry",
    "IndexNotBuiltError", "SearchIndex", "build_index", "entries_for_paper", "fuse", "paper_entry", "read_entries",
    "search", "section_entry", "store_entries", "update_index",
]
