"""BM25 over search entries with Tantivy.

Schema: ``entry_id``, ``doc_id``, ``node_id``, ``kind`` (raw, stored; ``doc_id`` is the delete
key), ``title`` and ``body`` (English analyser: simple tokenizer, lower case, ASCII folding,
English stop words, Porter stemming; stored) and ``page_start``/``page_end`` (stored integers).
Titles are boosted at query time.

User text is never parsed as Tantivy query syntax: :func:`query_terms` keeps only word
characters and lower-cases them (Tantivy's operators ``AND``/``OR``/``NOT``/``TO``/``IN`` are
upper-case only), and the result goes through ``parse_query_lenient``, so quotes, colons,
brackets, ``-``, ``*`` or unbalanced parentheses in a question can never raise or turn into a
field filter, a range or a match-everything wildcard.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

import tantivy

from vectree.retrieval.words import english_analyzer

from .entries import Entry, EntryHit

ANALYZER = "vectree_en"
TITLE_BOOST = 2.0
WRITER_HEAP = 64_000_000
_WORD = re.compile(r"\w+", re.UNICODE)


def _analyzer() -> "tantivy.TextAnalyzer":
    # one definition shared with SproutRAG's lexical features (vectree.retrieval.words)
    return english_analyzer()


def _schema() -> "tantivy.Schema":
    sb = tantivy.SchemaBuilder()
    for name in ("entry_id", "doc_id", "node_id", "kind"):
        sb.add_text_field(name, stored=True, tokenizer_name="raw")
    sb.add_text_field("title", stored=True, tokenizer_name=ANALYZER)
    sb.add_text_field("body", stored=True, tokenizer_name=ANALYZER)
    sb.add_integer_field("page_start", stored=True)
    sb.add_integer_field("page_end", stored=True)
    return sb.build()


def query_terms(text: str) -> str:
    """User text reduced to lower-case words separated by spaces (no query syntax survives)."""
    return " ".join(_WORD.findall((text or "").lower()))


BM25Hit = EntryHit  # score: BM25 with the title boost


def _document(e: Entry) -> "tantivy.Document":
    fields = dict(entry_id=e.entry_id, doc_id=e.doc_id, kind=e.kind, title=e.title or "", body=e.body or "")
    if e.node_id is not None:
        fields["node_id"] = e.node_id
    if e.page_start is not None:
        fields["page_start"] = int(e.page_start)
    if e.page_end is not None:
        fields["page_end"] = int(e.page_end)
    return tantivy.Document(**fields)


class BM25Index:
    """One Tantivy index directory.  Readers keep one searcher open; writers commit once per call."""

    def __init__(self, index: "tantivy.Index", path: Path):
        self.path = path
        self.index = index
        self.index.register_tokenizer(ANALYZER, _analyzer())
        self._searcher = None

    # ---- lifecycle -------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path, entries: Iterable[Entry] = ()) -> "BM25Index":
        path = Path(path)
        path.mkdir(parents=True, exist_ok=False)
        ix = cls(tantivy.Index(_schema(), path=str(path)), path)
        ix.replace(entries, delete_doc_ids=())
        return ix

    @classmethod
    def open(cls, path: Path) -> "BM25Index":
        path = Path(path)
        if not tantivy.Index.exists(str(path)):
            raise FileNotFoundError(f"no Tantivy index at {path}")
        return cls(tantivy.Index.open(str(path)), path)

    def replace(self, entries: Iterable[Entry], delete_doc_ids: Iterable[str]) -> int:
        """Delete every entry of ``delete_doc_ids``, add ``entries``, commit once; returns added."""
        writer = self.index.writer(heap_size=WRITER_HEAP, num_threads=1)
        n = 0
        try:
            for doc_id in delete_doc_ids:
                writer.delete_documents_by_term("doc_id", doc_id)
            for e in entries:
                writer.add_document(_document(e))
                n += 1
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        writer.wait_merging_threads()
        self.index.reload()
        self._searcher = None
        return n

    # ---- reads -----------------------------------------------------------------------
    @property
    def searcher(self) -> "tantivy.Searcher":
        if self._searcher is None:
            self._searcher = self.index.searcher()
        return self._searcher

    @property
    def num_entries(self) -> int:
        return self.searcher.num_docs

    def count_doc(self, doc_id: str) -> int:
        """Entries of one paper (a term query on the raw ``doc_id`` field)."""
        q = tantivy.Query.term_query(self.index.schema, "doc_id", doc_id)
        return self.searcher.search(q, limit=1, count=True).count

    def search(self, text: str, limit: int = 100, *, title_boost: float = TITLE_BOOST) -> list[BM25Hit]:
        """Best ``limit`` entries for free text, by BM25 score (title matches count ``title_boost``x)."""
        terms = query_terms(text)
        if not terms:
            return []
        query, _errors = self.index.parse_query_lenient(terms, ["title", "body"], field_boosts={"title": title_boost})
        searcher = self.searcher
        hits = []
        for score, address in searcher.search(query, limit=limit, count=False).hits:
            doc = searcher.doc(address)
            hits.append(BM25Hit(
                entry_id=doc.get_first("entry_id"), doc_id=doc.get_first("doc_id"),
                node_id=doc.get_first("node_id"), kind=doc.get_first("kind"), title=doc.get_first("title") or "",
                page_start=doc.get_first("page_start"), page_end=doc.get_first("page_end"), score=float(score),
            ))
        return hits
