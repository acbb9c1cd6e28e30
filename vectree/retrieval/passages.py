"""Within-paper passages: the sentence-level units that ``search_within_paper`` ranks and that the
offline navigator answers from, when no SproutRAG tree exists.

A passage is one sentence of a page (two when the first is shorter than ``MIN_CHARS``: headings,
"Table 2." and list markers carry no meaning alone), segmented with pysbd inside each PyMuPDF
block, with its page, its block, the deepest verified section whose pages hold it, and a MiniLM
vector.  They are built once per paper at ingest time (``passages/<doc_id>.parquet``), so a
query embeds only the query: the navigator ranks the sentences of the pages it opens with
these stored vectors.

Ranking is hybrid: BM25 (Tantivy, in memory, per paper) and cosine similarity, fused by
reciprocal rank, because questions name exact terms (a metric, a dataset) as often as they
paraphrase.  When the paper has a SproutRAG tree, :func:`fuse_with_sprout` adds the SproutRAG
nodes as a third ranking of the same passages (a passage ranks where the first node holding it
ranks), so a node can only lift the passages it holds: the result is still passages, and the
two signals that ranked them without SproutRAG keep two of the three votes.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import tantivy

from .sentences import split_sentences
from .store import Store, StoreError, atomic_write_parquet

MIN_CHARS = 40
RRF_K = 20

PASSAGES_SCHEMA = pa.schema(
    [
        ("passage_id", pa.int32()),
        ("page_no", pa.int32()),
        ("block", pa.int32()),  # paragraph (PyMuPDF block) index on the page
        ("node_id", pa.string()),
        ("text", pa.string()),
        ("vector", pa.list_(pa.float32())),
    ]
)

_HYPHEN = re.compile(r"(\w)-\n(\w)")
_WORD = re.compile(r"\w+")


def passages_path(store: Store, doc_id: str):
    return store.passages_path(doc_id)


def clean_block(text: str) -> str:
    """A block's lines as one paragraph: line-end hyphenation undone, whitespace collapsed."""
    return re.sub(r"\s+", " ", _HYPHEN.sub(r"\1\2", text)).strip()


def sentences(paragraph: str) -> list[str]:
    """Sentences of one paragraph (the project's rule, :mod:`vectree.retrieval.sentences`), short ones
    joined to the next."""
    out: list[str] = []
    for a, b in split_sentences(paragraph):
        piece = paragraph[a:b]
        if out and len(out[-1]) < MIN_CHARS:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def split_page(text: str) -> list[tuple[int, str]]:
    """Passages of one page as ``(block, sentence)``, in reading order."""
    out = []
    for block_no, block in enumerate(text.split("\n\n")):
        para = clean_block(block)
        if para:
            out.extend((block_no, s) for s in sentences(para))
    return out


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


_NOT_ALNUM = re.compile(r"[^a-z0-9]+")
HEADING_LOOKAHEAD = 4  # a missed heading is caught up by one of the next few


def heading_key(text: str) -> str:
    """Lower-case alphanumerics without a leading section number ("2.1 Data" -> "data")."""
    return re.sub(r"^[0-9]+", "", _NOT_ALNUM.sub("", text.lower()))


def is_heading(text: str, title: str) -> bool:
    """Whether passage ``text`` is the heading of the section titled ``title``: its words, numbers
    and punctuation aside, are the title, or start with it and run at most three words longer (a
    verified title can be cut short: "3 The LONGEVAL guidelines for" heads "3 The LONGEVAL
    guidelines for faithfulness human evaluation"); never a body sentence that opens with the
    title's words."""
    key, t = heading_key(text), heading_key(title or "")
    if not t or not key.startswith(t):
        return False
    return key == t or len(text.split()) <= len((title or "").split()) + 3


class SectionCursor:
    """The section of each passage, walking a paper's passages in reading order.

    A page can hold the end of one section and the start of the next (page 1: title, abstract and
    introduction), so the section is not a property of the page: the cursor moves to the next
    section when a passage *is* its heading (its text, numbers and punctuation aside, is the
    section's title or starts with it and is at most three words longer, or is a run-in
    "Abstract -- We ...")
    on a page the section's verified range allows (one page of slack, as verification has), and
    only forward, to one of the next :data:`HEADING_LOOKAHEAD` sections.  When the passages run
    past the current section's last page without meeting the next heading, it falls back to the
    page rule (:func:`section_for_page`).  Before the first heading (title, authors) a passage
    belongs to the paper itself: the root node.
    """

    def __init__(self, nodes: Sequence[dict[str, Any]]):
        self.root = next((n["node_id"] for n in nodes if n["parent_id"] is None), None)
        self.nodes = nodes
        self.order = [n for n in nodes if n["parent_id"] is not None and n.get("verified", True)]
        self.keys = [heading_key(n.get("title") or "") for n in self.order]
        self.ids = [n["node_id"] for n in self.order]
        self.at = -1

    def _heading(self, j: int, text: str) -> bool:
        # the title itself ("3 Results"), a heading with a few words more ("Results and
        # Discussion" is its own title; "Results." with a footnote mark), or a run-in abstract
        # ("Abstract -- We propose ...")
        title = self.order[j].get("title") or ""
        return is_heading(text, title) or self.keys[j] == "abstract" and heading_key(text).startswith("abstract")

    def section(self, page: int, text: str) -> str | None:
        for j in range(self.at + 1, min(self.at + 1 + HEADING_LOOKAHEAD, len(self.order))):
            n = self.order[j]
            if n["page_start"] - 1 <= page <= n["page_end"] + 1 and self._heading(j, text):
                self.at = j
                return n["node_id"]
        if self.at >= 0 and page > self.order[self.at]["page_end"] + 1 or self.at < 0 and page > 1:
            # ran past the section (or never met a heading after page 1): the page rule, forward only
            guess = section_for_page(self.nodes, page)
            if guess in self.ids and self.ids.index(guess) > self.at:
                self.at = self.ids.index(guess)
            elif guess is not None and guess not in self.ids:
                return guess
        return self.order[self.at]["node_id"] if self.at >= 0 else self.root


def passage_rows(pages: Sequence[dict[str, Any]], nodes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Passages of one paper with their sections (:class:`SectionCursor`), without vectors."""
    rows = []
    cursor = SectionCursor(nodes)
    for page in pages:
        for block, text in split_page(page["text"]):
            rows.append({"passage_id": len(rows), "page_no": page["page_no"], "block": block,
                         "node_id": cursor.section(page["page_no"], text), "text": text})
    return rows


def passages_table(rows: list[dict[str, Any]], vectors: np.ndarray) -> pa.Table:
    """``rows`` and their vectors as a ``PASSAGES_SCHEMA`` table."""
    if not rows:
        return PASSAGES_SCHEMA.empty_table()
    vectors = np.asarray(vectors, dtype=np.float32)
    # vectors go to Arrow straight from the matrix: per-float Python objects (``tolist``) cost
    # ~8x the matrix and made memory grow with the paper's length
    n, dim = vectors.shape
    column = pa.ListArray.from_arrays(pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int32)),
                                      pa.array(vectors.reshape(-1)))
    table = pa.Table.from_pylist(rows, schema=PASSAGES_SCHEMA.remove(PASSAGES_SCHEMA.get_field_index("vector")))
    return table.append_column(PASSAGES_SCHEMA.field("vector"), column)


def build_passages(pages: Sequence[dict[str, Any]], nodes: Sequence[dict[str, Any]], embedder) -> pa.Table:
    """Passages of one paper with their sections and vectors, as a ``PASSAGES_SCHEMA`` table."""
    return build_passages_batch([(pages, nodes)], embedder)[0]


def build_passages_batch(papers: Sequence[tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]]]],
                         embedder) -> list[pa.Table]:
    """:func:`build_passages` for several papers (``(pages, nodes)`` each) with one embedding pass
    over all their sentences: the model sees full batches instead of each paper's short tail."""
    rows = [passage_rows(pages, nodes) for pages, nodes in papers]
    texts = [r["text"] for paper in rows for r in paper]
    vectors = np.asarray(embedder.encode_documents(texts), dtype=np.float32) if texts else None
    tables, at = [], 0
    for paper in rows:
        tables.append(passages_table(paper, vectors[at:at + len(paper)] if paper else None))
        at += len(paper)
    return tables


STREAM_BATCH = 256  # passages embedded per encoder call when streaming


def iter_pages(store: Store, doc_id: str, columns: Sequence[str] = ("page_no", "text")) -> Iterator[dict[str, Any]]:
    """A paper's pages one row group at a time (the pages file is written in page order), so a
    reader holds a few pages, not the paper."""

    path = store.pages_path(doc_id)
    if not path.exists():
        raise StoreError(f"no pages for paper {doc_id!r}")
    with pq.ParquetFile(path) as f:
        for batch in f.iter_batches(batch_size=16, columns=list(columns)):
            yield from batch.to_pylist()


def stream_passages(store: Store, doc_id: str, nodes: Sequence[dict[str, Any]], embedder,
                    pages: Iterable[dict[str, Any]] | None = None, *, batch: int = STREAM_BATCH) -> dict[str, Any]:
    """Write one paper's passages like ``write_passages(build_passages(...))``, but embedding
    ``batch`` passages at a time and appending each batch to the Parquet file as it is done, so
    memory stays flat with the paper's length.  ``pages`` default to :func:`iter_pages`.  The
    file is renamed into place at the end (the old one stays if this raises).  Returns
    ``{"passages": n, "pages_with_passages": m}``."""
    import os
    import tempfile

    from .store import _file_mode

    path = passages_path(store, doc_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    pending: list[dict[str, Any]] = []
    state = {"n": 0, "pages": set()}
    try:
        with pq.ParquetWriter(tmp, PASSAGES_SCHEMA, compression="zstd") as writer:
            def flush() -> None:
                if pending:
                    writer.write_table(build_passages_rows(pending, embedder))
                    pending.clear()

            cursor = SectionCursor(nodes)
            for page in (iter_pages(store, doc_id) if pages is None else pages):
                for block, text in split_page(page["text"]):
                    pending.append({"passage_id": state["n"], "page_no": page["page_no"], "block": block,
                                    "node_id": cursor.section(page["page_no"], text), "text": text})
                    state["n"] += 1
                    state["pages"].add(page["page_no"])
                    if len(pending) >= batch:
                        flush()
            flush()
        os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return {"passages": state["n"], "pages_with_passages": len(state["pages"])}


def build_passages_rows(rows: list[dict[str, Any]], embedder) -> pa.Table:
    """``rows`` (passages without vectors) embedded in one encoder call, as a ``PASSAGES_SCHEMA`` table."""
    if not rows:
        return PASSAGES_SCHEMA.empty_table()
    return passages_table(rows, embedder.encode_documents([r["text"] for r in rows]))


def write_passages(store: Store, doc_id: str, table: pa.Table) -> None:
    atomic_write_parquet(passages_path(store, doc_id), table)


def passage_vectors_by_text(store: Store, doc_id: str) -> dict[str, np.ndarray]:
    """``{passage text: its stored MiniLM vector}`` of one paper (empty when it has no passages).

    The SproutRAG tree builder reuses these for its chunks whose text is a passage's (most are:
    a one-sentence chunk is a one-sentence passage), so ingest runs MiniLM over a sentence once."""
    path = passages_path(store, doc_id)
    if not path.exists():
        return {}
    table = pq.read_table(path, columns=["text", "vector"])
    if table.num_rows == 0:
        return {}
    vectors = np.asarray(table.column("vector").combine_chunks().flatten(), dtype=np.float32)
    vectors = vectors.reshape(table.num_rows, -1)
    return dict(zip(table.column("text").to_pylist(), vectors))


@dataclass
class PassageHit:
    passage_id: int
    page_no: int
    node_id: str | None
    text: str
    score: float


class PaperPassages:
    """One paper's passages, loaded for querying (vectors as a matrix, a BM25 index in memory)."""

    def __init__(self, table: pa.Table, *, acronyms: bool = True):
        # acronyms=False: queries are taken as asked (the `vectree-no-acronyms` ablation)
        self.use_acronyms = acronyms
        cols = table.to_pydict()
        self.ids = cols["passage_id"]
        self.pages = cols["page_no"]
        self.blocks = cols["block"]
        self.nodes = cols["node_id"]
        self.texts = cols["text"]
        self.vectors = np.asarray(cols["vector"], dtype=np.float32) if self.texts else np.zeros((0, 1), np.float32)
        sb = tantivy.SchemaBuilder()
        sb.add_integer_field("i", stored=True, indexed=True)
        sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
        self._index = tantivy.Index(sb.build())
        writer = self._index.writer(15_000_000, 1)
        for i, text in enumerate(self.texts):
            writer.add_document(tantivy.Document(i=i, body=text))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()
        self._acronyms: dict[str, str] | None = None

    @property
    def acronyms(self) -> dict[str, str]:
        """The paper's own abbreviations, ``{short form: long form}`` (:mod:`.acronyms`)."""
        if self._acronyms is None:
            from .acronyms import definitions

            self._acronyms = definitions(self.texts)
        return self._acronyms

    def expand_query(self, query: str) -> str:
        """``query`` with the other form of every term this paper abbreviates ("Random kitchen
        sink" -> also "RKS"): what every within-paper ranking is given (:func:`.acronyms.expand`)."""
        from .acronyms import expand

        return expand(query, self.acronyms) if self.use_acronyms else query

    def on_pages(self, pages: Sequence[int]) -> list[int]:
        """Indices of the passages on ``pages``, in reading order."""
        wanted = set(pages)
        return [i for i, p in enumerate(self.pages) if p in wanted]

    def context(self, i: int, before: int = 1, after: int = 1) -> str:
        """Passage ``i`` with its neighbours in the same paragraph: a snippet that reads."""
        lo, hi = i, i
        while lo > 0 and i - lo < before and self.blocks[lo - 1] == self.blocks[i] and self.pages[lo - 1] == self.pages[i]:
            lo -= 1
        while hi + 1 < len(self.texts) and hi - i < after and self.blocks[hi + 1] == self.blocks[i] \
                and self.pages[hi + 1] == self.pages[i]:
            hi += 1
        return " ".join(self.texts[lo:hi + 1])

    def __len__(self) -> int:
        return len(self.texts)

    def bm25(self, query: str, limit: int) -> list[int]:
        terms = " ".join(_WORD.findall(self.expand_query(query).lower()))
        if not terms or not self.texts:
            return []
        q = self._index.parse_query_lenient(terms, ["body"])[0]
        hits = self._index.searcher().search(q, limit).hits
        return [self._index.searcher().doc(addr)["i"][0] for _, addr in hits]

    def rank(self, query: str, query_vector: np.ndarray | None, k: int = 5, *,
             pages: Sequence[int] | None = None,
             extra: Sequence[tuple[Sequence[int], float]] = ()) -> list[PassageHit]:
        """Top ``k`` passages by reciprocal-rank fusion of BM25 and cosine (either may be absent);
        ``pages`` restricts the candidates to those pages; ``extra``: more rankings of passage
        indices, each with its weight in the fusion (:func:`fuse_with_sprout`)."""
        if not self.texts:
            return []
        allowed = None if pages is None else set(pages)
        fused: dict[int, float] = {}
        rankings = [(self.bm25(query, 50), 1.0)]
        if query_vector is not None:
            sims = self.vectors @ query_vector
            rankings.append(([int(i) for i in np.argsort(-sims)[:50]], 1.0))
        rankings += [(list(r), float(w)) for r, w in extra]
        for ranking, weight in rankings:
            ranking = [i for i in ranking if allowed is None or self.pages[i] in allowed]
            for r, i in enumerate(ranking):
                fused[i] = fused.get(i, 0.0) + weight / (RRF_K + r + 1)
        best = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return [PassageHit(self.ids[i], self.pages[i], self.nodes[i], self.context(i), round(s, 5)) for i, s in best]


_NON_ALNUM = re.compile(r"[^a-z0-9]+")
MATCH_CHARS = 60  # a passage is inside a node when this much of its normalised start is in the node


def _norm(text: str) -> str:
    return _NON_ALNUM.sub("", text.lower())


def passages_in_node(passages: PaperPassages, node_text: str, node_pages: Sequence[int]) -> list[int]:
    """Indices of the passages a SproutRAG node holds: on the node's pages, and the first
    ``MATCH_CHARS`` of the passage (lowercase alphanumerics, so hyphenation and line breaks do not
    matter) found in the node's text.  The two segmentations differ slightly (PyMuPDF blocks vs.
    page text), hence a match on text rather than on offsets."""
    body = _norm(node_text)
    out = []
    for i in passages.on_pages(node_pages):
        head = _norm(passages.texts[i])[:MATCH_CHARS]
        if len(head) >= 8 and head in body:
            out.append(i)
    return out


SPROUT_WEIGHT = 1.0  # the SproutRAG ranking's vote beside BM25's and the cosine's (plain RRF)
# the search settings of the nodes that vote: uncapped and at the scorer's own probability, as the
# nodes were when the vote's weight was calibrated (:func:`calibrate_sprout_weight`); the evidence cap
# and the logit scale serve nodes returned as answers (measured: with the cap, qasper page recall
# of vectree-sprout .483 -> .420)
SPROUT_VOTE_SEARCH = {"gold_cap": None, "logit_scale": 1.0}


def sprout_ranking(passages: PaperPassages, query_vector: np.ndarray | None,
                   nodes: Sequence[dict[str, Any]], per_node: int | None = None) -> tuple[list[int], dict[int, Any]]:
    """The SproutRAG nodes (best first) as a ranking of passage indices: the passages a node holds
    take that node's rank (ties broken by their cosine), none twice; and each ranked passage's
    node id.  ``per_node``: only that many passages of each node (its best by cosine) -- a node of
    forty sentences would otherwise fill the whole vote.  The third vote of
    :func:`fuse_with_sprout` (and of the reranked within-paper search)."""
    sims = passages.vectors @ query_vector if query_vector is not None and len(passages) else None
    ranking: list[int] = []
    holder: dict[int, Any] = {}
    for node in nodes:
        inside = passages_in_node(passages, node.get("text", ""), node.get("pages") or [])
        if sims is not None:
            inside.sort(key=lambda i: -sims[i])
        for i in inside[:per_node]:
            if i not in holder:
                holder[i] = node.get("node_id")
                ranking.append(i)
    return ranking, holder


def sprout_vote(passages: PaperPassages, query_vector: np.ndarray | None, nodes: Sequence[dict[str, Any]], *,
                weight: float | None = None) -> tuple[list[tuple[list[int], float]], dict[int, Any]]:
    """The SproutRAG nodes as one more ranking for :meth:`PaperPassages.rank` (its ``extra``), with
    the weight and passages per node their model's calibration set (every hit carries them as
    ``vote_weight`` / ``vote_per_node``; 1.0 and all for hits without); ``weight`` overrides it.
    Returns the ``extra`` list (empty when the nodes hold no passage or weigh nothing) and each
    ranked passage's node id."""
    first = nodes[0] if nodes else {}
    w = float(first.get("vote_weight", SPROUT_WEIGHT)) if weight is None else float(weight)
    ranking, holder = sprout_ranking(passages, query_vector, nodes, first.get("vote_per_node"))
    return ([(ranking, w)] if ranking and w > 0 else []), holder


def fuse_with_sprout(passages: PaperPassages, query: str, query_vector: np.ndarray | None,
                     nodes: Sequence[dict[str, Any]], k: int = 5, *,
                     weight: float | None = None) -> list[tuple[PassageHit, Any]]:
    """Within-paper search with SproutRAG: the paper's passages ranked by reciprocal-rank fusion of
    BM25, cosine and the SproutRAG nodes (``nodes``: hits of
    :func:`vectree.retrieval.sprout.papers.retrieve_in_paper`, best first).  The passages a node
    holds take that node's rank (ties broken by their cosine); a passage is never ranked twice.
    The vote weighs what the nodes' model calibrated (:func:`sprout_vote`; ``weight`` overrides it).
    Returns ``(hit, node_id)`` pairs, ``node_id`` the SproutRAG node holding the passage or ``None``."""
    extra, holder = sprout_vote(passages, query_vector, nodes, weight=weight)
    hits = passages.rank(query, query_vector, k, extra=extra)
    index_of = {pid: i for i, pid in enumerate(passages.ids)}
    return [(h, holder.get(index_of.get(h.passage_id))) for h in hits]


class PassageCache:
    """Loaded :class:`PaperPassages` per paper, reloaded when the file changes (LRU, thread-safe)."""

    def __init__(self, store: Store, size: int = 32, *, acronyms: bool = True):
        self.store = store
        self.size = size
        self.acronyms = acronyms
        self._items: OrderedDict[str, tuple[float, PaperPassages]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, doc_id: str) -> PaperPassages:
        path = passages_path(self.store, doc_id)
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            raise StoreError(f"no passages for paper {doc_id!r}") from None
        with self._lock:
            hit = self._items.get(doc_id)
            if hit and hit[0] == mtime:
                self._items.move_to_end(doc_id)
                return hit[1]
        loaded = PaperPassages(pq.read_table(path), acronyms=self.acronyms)
        with self._lock:
            self._items[doc_id] = (mtime, loaded)
            self._items.move_to_end(doc_id)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return loaded


# ---- how much SproutRAG's vote weighs, calibrated on training data ---------------------------
SPROUT_WEIGHT_GRID = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
SPROUT_PER_NODE_GRID = (None, 3, 1)
PAPER_CHUNKS = 200  # about the sentences of a short paper: what a calibration document is padded to


READ_CANDIDATES = 8  # what the offline navigator reads of a reranked within-paper search


def calibrate_sprout_weight(model, docs, x, xq, encode, *, k: int = 5, depth: int = 12,
                            grid: Sequence[float] = SPROUT_WEIGHT_GRID,
                            per_node_grid: Sequence[int | None] = SPROUT_PER_NODE_GRID,
                            sources: Sequence[str] = ("qasper",), min_chunks: int = PAPER_CHUNKS,
                            rerank=None, padding: str = "next") -> dict[str, Any]:
    """How SproutRAG's nodes vote in within-paper search, chosen on held-out training documents.

    ``docs`` / ``x`` / ``xq``: a SproutRAG training set's dev documents, their chunk and query
    vectors (:class:`vectree.retrieval.sprout.data.TrainingSet`); ``encode``: texts -> MiniLM vectors
    (the model's text nodes).  Each document of ``sources`` becomes a paper whose passages are its
    chunks followed by those of the next documents until it has ``min_chunks`` (a QASPER training
    document holds only its questions' evidence paragraphs; a real paper is mostly other text, and
    its SproutRAG nodes are larger).  Every query ranks them as :func:`fuse_with_sprout` does (BM25,
    cosine and the model's ``k`` nodes) at every ``(weight, per_node)`` of the grids.  The score of
    a setting is the mean of the recall of the gold chunks among the first ``k`` and among the
    first ``depth`` (what the reader reranks); the chosen setting is the best, the smallest weight
    among ties -- 0, plain passages, unless the nodes help.  ``padding``: ``"next"`` pads with the
    documents that follow in the training set's order (topics unrelated to the paper's), ``"similar"``
    with the documents nearest to it (cosine of the mean chunk vectors), so the padding reads like the
    rest of one paper on one topic.  Returns ``{"weight", "per_node",
    "scores": {"<weight>/<per_node>": {...}}, "queries", ...}``.

    With ``rerank`` (the trained reader's within-paper reranking,
    :func:`vectree.retrieval.rerank.apply.passage_reranker`), the setting is also chosen for the
    path the agent takes when a reader is active: each first stage is reranked as
    ``search_within_paper`` does and the score is the mean of the gold chunks' recall among the first sentence (the one the offline
    navigator reads its answer from) and among the :data:`READ_CANDIDATES` it reads; the result is
    the ``"reader"`` block (same keys).  The first-stage recall above can rise while the reranked
    order does not: what a user sees with a reader is the second.
    """
    from vectree.retrieval.sprout.search import unit_rows
    from vectree.retrieval.sprout.tree import node_text

    settings = [(0.0, None)] + [(float(w), c) for w in grid if w > 0 for c in per_node_grid]
    sums = {st: {f"recall@{k}": 0.0, f"recall@{depth}": 0.0} for st in settings}
    read_at = (1, READ_CANDIDATES)
    read_sums = {st: {f"read_recall@{n}": 0.0 for n in read_at} for st in settings}
    n_queries = 0
    pool = [(d, xd) for d, xd in zip(docs, x) if d.source in sources and d.n]
    for doc, xd, xqd in zip(docs, x, xq):
        if doc.source not in sources or not doc.queries or doc.n < 2:
            continue
        at = next(i for i, (d, _) in enumerate(pool) if d is doc)
        chunks, para, weights, parts = list(doc.chunks), list(doc.para), list(doc.weights), [xd]
        if padding == "similar":
            centre = np.asarray(xd, np.float32).mean(0)
            others = sorted((j for j in range(len(pool)) if j != at),
                            key=lambda j: -float(np.asarray(pool[j][1], np.float32).mean(0) @ centre))
        else:
            others = [(at + j) % len(pool) for j in range(1, len(pool))]
        for j in others:
            if len(chunks) >= min_chunks:
                break
            other, xo = pool[j]
            base = max(para) + 1  # paragraph ids stay distinct: each document's after the last
            chunks += other.chunks
            para += [base + p for p in other.para]
            weights += other.weights
            parts.append(xo)
        xd = np.concatenate(parts)
        tree = model.document_tree(xd, para, weights, texts=chunks, encode=encode).tree
        unit = unit_rows(xd)
        table = pa.Table.from_pylist(
            [{"passage_id": i, "page_no": 1, "block": int(para[i]), "node_id": None, "text": t,
              "vector": unit[i].tolist()} for i, t in enumerate(chunks)], schema=PASSAGES_SCHEMA)
        passages = PaperPassages(table)
        search_q = model.search_query(xqd)
        for query, qv, sq in zip(doc.queries, unit_rows(xqd), search_q):
            gold = set(query.positives)
            if not gold:
                continue
            nodes = [{"node_id": int(c.node), "text": node_text(tree, chunks, c.node), "pages": [1]}
                     for c in model.search([tree], sq, k, query_text=query.text, **SPROUT_VOTE_SEARCH)]
            n_queries += 1
            rankings = {c: sprout_ranking(passages, qv, nodes, c)[0] for c in per_node_grid}
            for w, c in settings:
                ranking = rankings.get(c, [])
                extra = [(ranking, w)] if ranking and w else ()
                hits = passages.rank(query.text, qv, depth, extra=extra)
                ids = [h.passage_id for h in hits]
                sums[(w, c)][f"recall@{k}"] += len(gold & set(ids[:k])) / len(gold)
                sums[(w, c)][f"recall@{depth}"] += len(gold & set(ids)) / len(gold)
                if rerank is not None:
                    read = rerank(passages, query.text, qv, READ_CANDIDATES, depth=depth, extra=extra)
                    for n in read_at:
                        read_sums[(w, c)][f"read_recall@{n}"] += len(gold & set(read[:n])) / len(gold)

    def choose(totals: dict) -> dict[str, Any]:
        """Mean recalls per setting, their mean as the score, and the best setting (the smallest
        weight among ties)."""
        scores = {st: {m: round(v / max(n_queries, 1), 4) for m, v in s_.items()} for st, s_ in totals.items()}
        for v in scores.values():
            v["score"] = round(sum(v.values()) / len(v), 4)
        best = max(settings, key=lambda st: (scores[st]["score"], -st[0])) if n_queries else (0.0, None)
        return {"weight": best[0], "per_node": best[1],
                "scores": {f"{w}/{c if c else 'all'}": v for (w, c), v in scores.items()}}

    out = {**choose(sums), "queries": n_queries, "k": k, "depth": depth, "sources": list(sources),
           "min_chunks": min_chunks, "padding": padding}
    if rerank is not None:
        out["reader"] = {**choose(read_sums), "reader": getattr(rerank, "model_id", ""), "candidates": READ_CANDIDATES}
    return out

