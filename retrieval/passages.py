"""Within-paper passages: the unit that ``search_within_paper`` ranks when no SproutRAG tree exists.

A passage is a paragraph of one page (PyMuPDF blocks, short ones merged, long ones cut at
sentence ends), with its page, its character span in the page text, the deepest verified section
whose pages hold it, and a MiniLM vector.  They are built once per paper at ingest time
(``passages/<doc_id>.parquet``) so that a query only embeds the query.

Ranking is hybrid: BM25 (Tantivy, in memory, per paper) and cosine similarity, fused by
reciprocal rank, because questions name exact terms (a metric, a dataset) as often as they
paraphrase.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import tantivy

from .store import Store, StoreError, atomic_write_parquet, validate_doc_id

MIN_WORDS = 25
MAX_WORDS = 160
RRF_K = 20

PASSAGES_SCHEMA = pa.schema(
    [
        ("passage_id", pa.int32()),
        ("page_no", pa.int32()),
        ("char_start", pa.int32()),
        ("char_end", pa.int32()),
        ("node_id", pa.string()),
        ("text", pa.string()),
        ("vector", pa.list_(pa.float32())),
    ]
)

_HYPHEN = re.compile(r"(\w)-\n(\w)")
_SENT_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
_WORD = re.compile(r"\w+")


def passages_path(store: Store, doc_id: str):
    return store.root / "passages" / f"{validate_doc_id(doc_id)}.parquet"


def clean_block(text: str) -> str:
    """A block's lines as one paragraph: line-end hyphenation undone, whitespace collapsed."""
    return re.sub(r"\s+", " ", _HYPHEN.sub(r"\1\2", text)).strip()


def split_page(text: str) -> list[tuple[int, int, str]]:
    """Passages of one page as ``(char_start, char_end, clean_text)``, in reading order."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for block in text.split("\n\n"):
        start = text.find(block, pos)
        spans.append((start, start + len(block)))
        pos = start + len(block)
    out: list[tuple[int, int, str]] = []
    cur: list[tuple[int, int]] = []

    def words(span_list):
        return sum(len(text[a:b].split()) for a, b in span_list)

    def emit(span_list):
        a, b = span_list[0][0], span_list[-1][1]
        body = clean_block(text[a:b])
        if len(body.split()) <= MAX_WORDS:
            out.append((a, b, body))
            return
        # a long paragraph: cut at sentence ends into pieces of about MAX_WORDS / 2
        piece_start = a
        for m in _SENT_END.finditer(text, a, b):
            piece_text = text[piece_start:m.start()]
            if len(piece_text.split()) >= MAX_WORDS // 2:
                out.append((piece_start, m.start(), clean_block(piece_text)))
                piece_start = m.end()
        out.append((piece_start, b, clean_block(text[piece_start:b])))

    for span in spans:
        cur.append(span)
        if words(cur) >= MIN_WORDS:
            emit(cur)
            cur = []
    if cur:
        if out and words(cur) < MIN_WORDS // 2 and len(out[-1][2].split()) < MAX_WORDS:
            a, _, _ = out.pop()
            b = cur[-1][1]
            out.append((a, b, clean_block(text[a:b])))
        else:
            emit(cur)
    return [p for p in out if p[2]]


def section_for_page(nodes: Sequence[dict[str, Any]], page: int) -> str | None:
    """The deepest verified section whose page range holds ``page`` (the latest-starting one on ties)."""
    best = None
    for n in nodes:
        if n["parent_id"] is None or not n["verified"]:
            continue
        if n["page_start"] <= page <= n["page_end"]:
            key = (n["level"], n["page_start"])
            if best is None or key >= best[0]:
                best = (key, n["node_id"])
    return best[1] if best else None


def build_passages(pages: Sequence[dict[str, Any]], nodes: Sequence[dict[str, Any]], embedder) -> pa.Table:
    """Passages of one paper with their sections and vectors, as a ``PASSAGES_SCHEMA`` table."""
    rows = []
    for page in pages:
        for a, b, body in split_page(page["text"]):
            rows.append({"passage_id": len(rows), "page_no": page["page_no"], "char_start": a, "char_end": b,
                         "node_id": section_for_page(nodes, page["page_no"]), "text": body})
    vectors = embedder.encode_documents([r["text"] for r in rows]) if rows else np.zeros((0, 0), np.float32)
    for r, v in zip(rows, vectors):
        r["vector"] = v.tolist()
    return pa.Table.from_pylist(rows, schema=PASSAGES_SCHEMA)


def write_passages(store: Store, doc_id: str, table: pa.Table) -> None:
    atomic_write_parquet(passages_path(store, doc_id), table)


@dataclass
class PassageHit:
    passage_id: int
    page_no: int
    node_id: str | None
    text: str
    score: float


class PaperPassages:
    """One paper's passages, loaded for querying (vectors as a matrix, a BM25 index in memory)."""

    def __init__(self, table: pa.Table):
        cols = table.to_pydict()
        self.ids = cols["passage_id"]
        self.pages = cols["page_no"]
        self.nodes = cols["node_id"]
        self.texts = cols["text"]
        self.vectors = np.asarray(cols["vector"], dtype=np.float32) if self.texts else np.zeros((0, 1), np.float32)
        sb = tantivy.SchemaBuilder()
        sb.add_integer_field("i", stored=True, indexed=True)
        sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
        self._schema = sb.build()
        self._index = tantivy.Index(self._schema)
        writer = self._index.writer(15_000_000, 1)
        for i, text in enumerate(self.texts):
            writer.add_document(tantivy.Document(i=i, body=text))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()

    def __len__(self) -> int:
        return len(self.texts)

    def bm25(self, query: str, limit: int) -> list[int]:
        terms = " ".join(_WORD.findall(query.lower()))
        if not terms or not self.texts:
            return []
        q = self._index.parse_query_lenient(terms, ["body"])[0]
        hits = self._index.searcher().search(q, limit).hits
        return [self._index.searcher().doc(addr)["i"][0] for _, addr in hits]

    def rank(self, query: str, query_vector: np.ndarray | None, k: int = 5, *,
             pages: Sequence[int] | None = None) -> list[PassageHit]:
        """Top ``k`` passages by reciprocal-rank fusion of BM25 and cosine (either may be absent);
        ``pages`` restricts the candidates to those pages."""
        if not self.texts:
            return []
        allowed = None if pages is None else set(pages)
        fused: dict[int, float] = {}
        rankings = [self.bm25(query, 50)]
        if query_vector is not None:
            sims = self.vectors @ query_vector
            rankings.append([int(i) for i in np.argsort(-sims)[:50]])
        for ranking in rankings:
            ranking = [i for i in ranking if allowed is None or self.pages[i] in allowed]
            for r, i in enumerate(ranking):
                fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + r + 1)
        best = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return [PassageHit(self.ids[i], self.pages[i], self.nodes[i], self.texts[i], round(s, 5)) for i, s in best]


class PassageCache:
    """Loaded :class:`PaperPassages` per paper, reloaded when the file changes (LRU, thread-safe)."""

    def __init__(self, store: Store, size: int = 32):
        self.store = store
        self.size = size
        self._items: OrderedDict[str, tuple[float, PaperPassages]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, doc_id: str) -> PaperPassages:
        path = passages_path(self.store, doc_id)
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            raise StoreError(f"no passages for paper {doc_id!r} at {path}") from None
        with self._lock:
            hit = self._items.get(doc_id)
            if hit and hit[0] == mtime:
                self._items.move_to_end(doc_id)
                return hit[1]
        loaded = PaperPassages(pq.read_table(path))
        with self._lock:
            self._items[doc_id] = (mtime, loaded)
            self._items.move_to_end(doc_id)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return loaded
