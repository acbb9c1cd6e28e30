"""Layer 0 corpus search: hybrid Tantivy BM25 + LanceDB dense retrieval over compact entries.

One entry per paper (title, abstract, section titles) and one per verified section (title and
summary) are indexed; full page text never is.  A query returns ranked *papers*, each with the
sections that matched and their page ranges::

    from vectree.retrieval.search import build_index, search
    build_index(store)                       # or update_index(store): only changed papers
    search(store, "cathode cracking", k=5)   # [{doc_id, title, score, matched_sections}, ...]

Building is :mod:`.build`, snapshots and their atomic publish :mod:`.publish`, the reader
:mod:`.query` (:mod:`.index` re-exports all three); :mod:`.fusion` says how BM25 and dense
rankings are combined.
"""

from vectree.retrieval.embed import EmbedderMismatchError

from .entries import Entry, entries_for_paper, paper_entry, section_entry, store_entries
from .fusion import FUSIONS, fuse
from .build import BuildReport, build_index, update_index
from .publish import IndexNotBuiltError, read_entries
from .query import DEFAULT_DENSE_WEIGHT, DEFAULT_FUSION, MODES, SearchIndex, search

__all__ = [
    "DEFAULT_DENSE_WEIGHT", "DEFAULT_FUSION", "FUSIONS", "MODES", "BuildReport", "EmbedderMismatchError", "Entry",
    "IndexNotBuiltError", "SearchIndex", "build_index", "entries_for_paper", "fuse", "paper_entry", "read_entries",
    "search", "section_entry", "store_entries", "update_index",
]
