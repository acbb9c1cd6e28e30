"""Where the reader reranks: Layer-0 papers, within-paper passages, and any list of texts.

Each function takes the hybrid candidates a first stage already found and reorders the top of
them by the reader's relevance, returning calibrated probabilities (``relevance`` in the hits)
so that later decisions (which pages to cite, how many papers, whether to abstain) compare
numbers with one meaning.  Candidates and text lengths are capped so a query stays interactive
on two cores: ``PAPER_DEPTH`` papers (title + best matched section, ``PAPER_CHARS`` characters)
and ``PASSAGE_DEPTH`` sentences.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from .calibrate import relevance_prob

RRF_K = 20  # as in vectree.retrieval.passages
PAPER_DEPTH = 8
PAPER_CHARS = 400
PASSAGE_DEPTH = 12
PASSAGE_MAX_LEN = 96
PAPER_MAX_LEN = 128

_ENTRY_CACHE: dict[str, dict[str, Any]] = {}
_ENTRY_LOCK = threading.Lock()


def _entry_texts(index) -> dict[str, Any]:
    """``entry_id -> (title, body)`` of the index's live snapshot (cached per snapshot)."""
    snap_id = index.snapshot_id
    with _ENTRY_LOCK:
        hit = _ENTRY_CACHE.get(snap_id)
    if hit is not None:
        return hit
    from vectree.retrieval.search.publish import IndexPaths, read_entries_table  # the index's own layout

    path = IndexPaths.of(index.root).snapshots / snap_id
    cols = read_entries_table(path, columns=["entry_id", "title", "body"]).to_pydict()
    table = {e: (t or "", b or "") for e, t, b in zip(cols["entry_id"], cols["title"], cols["body"])}
    with _ENTRY_LOCK:
        _ENTRY_CACHE.clear()  # one snapshot at a time is live
        _ENTRY_CACHE[snap_id] = table
    return table


def paper_text(hit: dict[str, Any], entries: dict[str, Any]) -> str:
    """What the reader sees of a Layer-0 paper: its title and its best matched section (title +
    summary), else its abstract; truncated."""
    doc = hit["doc_id"]
    title, abstract = entries.get(f"{doc}#paper", (hit.get("title") or "", ""))
    parts = [title or hit.get("title") or ""]
    sections = hit.get("matched_sections") or []
    if sections:
        s_title, s_body = entries.get(f"{doc}#{sections[0]['node_id']}", (sections[0].get("title", ""), ""))
        parts.append(f"{s_title}: {s_body}" if s_title else s_body)
    else:
        parts.append(abstract)
    return " | ".join(p for p in parts if p)[:PAPER_CHARS]


def fused_order(probs: np.ndarray) -> np.ndarray:
    """Indices of candidates (given in first-stage order) ordered by reciprocal-rank fusion of
    that order with the order of ``probs``; ties keep the first-stage order."""
    fused = np.zeros(len(probs))
    for rank, j in enumerate(np.argsort(-np.asarray(probs), kind="stable")):
        fused[j] += 1.0 / (RRF_K + rank + 1)
    fused += 1.0 / (RRF_K + np.arange(len(probs)) + 1)
    return np.argsort(-fused, kind="stable")


def rerank_papers(reader, index, query: str, hits: list[dict[str, Any]], k: int, *,
                  depth: int = PAPER_DEPTH, vector_map=None) -> list[dict[str, Any]]:
    """The top ``depth`` Layer-0 hits reordered by the reader; each gets ``relevance`` (the
    calibrated probability) and keeps its fused ``score``; the rest follow in their order.
    ``vector_map``: the reader's query adapter, applied to the cosine its calibration fuses."""
    if not hits:
        return hits
    entries = _entry_texts(index)
    head, tail = hits[:depth], hits[depth:]
    logits = reader.score(query, [paper_text(h, entries) for h in head], max_len=PAPER_MAX_LEN)
    probs = relevance_prob(logits, reader.config.calibration, paper_cosines(index, query, head, vector_map))
    # as within a paper: the reranker refines the first stage's order instead of replacing it.
    # Alone it demoted right papers that the hybrid search had first (PubMedQA held-back R@1
    # .975 -> .945): it reads one section of a paper, the first stage matched all of them
    order = fused_order(probs)
    out = [{**head[i], "relevance": round(float(probs[i]), 4), "relevance_logit": round(float(logits[i]), 3)}
           for i in order]
    return (out + tail)[:k]


def paper_cosines(index, query: str, hits: Sequence[dict[str, Any]], vector_map=None) -> np.ndarray | None:
    """Each hit's best dense cosine among its entries (the bi-encoder half of the fused score,
    with the query mapped by ``vector_map``: the reader's query adapter, as in its calibration);
    None when the dense backend cannot say (then the logit alone is calibrated)."""
    try:
        dense = index.entry_hits(query, mode="dense", limit=200, vector_map=vector_map)["dense"]
    except Exception:  # noqa: BLE001 - a BM25-only index: fall back to the logit alone
        return None
    best: dict[str, float] = {}
    for h in dense:
        best[h.doc_id] = max(best.get(h.doc_id, -1.0), float(h.score))
    if not best:
        return None
    floor = min(best.values())
    return np.asarray([best.get(h["doc_id"], floor) for h in hits], float)


def rerank_texts(reader, query: str, texts: Sequence[str], *, max_len: int = PASSAGE_MAX_LEN, cosines=None):
    """Logits and calibrated probabilities of ``texts`` for ``query``."""
    logits = reader.score(query, list(texts), max_len=max_len)
    return logits, relevance_prob(logits, reader.config.calibration, cosines)


def rerank_passages(reader, passages, query: str, query_vector, k: int, *, depth: int = PASSAGE_DEPTH,
                    pages: Sequence[int] | None = None, extra=()) -> list[dict[str, Any]]:
    """The paper's hybrid top ``depth`` sentences reordered by the reader, best ``k`` returned as
    ``{i, page, node_id, text, context, relevance, logit}`` (``i`` indexes the paper's passages).
    ``extra``: more first-stage rankings with their weights (the SproutRAG nodes' vote,
    :func:`vectree.retrieval.passages.sprout_ranking`), fused with BM25 and cosine."""
    hits = passages.rank(query, query_vector, max(depth, k), pages=pages, extra=extra)
    if not hits:
        return []
    idx = [h.passage_id for h in hits]
    pos = {pid: n for n, pid in enumerate(passages.ids)}
    rows = [pos[i] for i in idx if i in pos]
    cosines = passages.vectors[rows] @ query_vector if query_vector is not None else None
    # one forward pass gives relevance and the answer heads: the readings travel with the hits
    readings = reader.read(query, [passages.texts[r] for r in rows], max_len=PASSAGE_MAX_LEN)
    logits = np.asarray([r.relevance for r in readings], np.float32)
    probs = relevance_prob(logits, reader.config.calibration, cosines)
    # the reranker refines the hybrid order instead of replacing it: on dev its fused score only
    # matched the cosine (MRR .860 vs .859) and it never saw BM25, which the hybrid order carries;
    # reciprocal-rank fusion of the two orders keeps both (the probabilities stay as calibrated)
    order = fused_order(probs)[:k]  # rows are in hybrid order
    return [{"i": rows[j], "page": passages.pages[rows[j]], "node_id": passages.nodes[rows[j]],
             "text": passages.texts[rows[j]], "context": passages.context(rows[j]),
             "relevance": round(float(probs[j]), 4), "logit": float(logits[j]), "reading": readings[j]}
            for j in order]


class ReadingMemo:
    """A reader whose readings are remembered per (question, text), the most recent ``size`` of
    them (thread-safe): a calibration that reranks the same sentences at every setting of a grid,
    or an agent that searches a paper twice for one question, reads each sentence once (a reading
    depends on nothing else).  Offers what :func:`rerank_passages` uses: ``read`` and ``config``."""

    def __init__(self, reader, size: int = 50_000):
        self.reader, self.config, self.size = reader, reader.config, size
        self._memo: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, question: str, texts: Sequence[str], **kw):
        how = tuple(sorted(kw.items()))
        with self._lock:
            known = {t: self._memo[(question, t, how)] for t in texts if (question, t, how) in self._memo}
        todo = [t for t in dict.fromkeys(texts) if t not in known]
        if todo:  # read outside the lock: the reader has its own
            known.update(zip(todo, self.reader.read(question, todo, **kw)))
        with self._lock:
            for t in dict.fromkeys(texts):
                self._memo[(question, t, how)] = known[t]
                self._memo.move_to_end((question, t, how))
            while len(self._memo) > self.size:
                self._memo.popitem(last=False)
        return [known[t] for t in texts]


def passage_reranker(reader):
    """``rerank(passages, question, query_vector, k, *, depth, extra) -> passage indices``: the
    within-paper search of a reader-active agent (:func:`rerank_passages`), with readings
    remembered, for calibrations that rerank the same passages many times
    (:func:`vectree.retrieval.passages.calibrate_sprout_weight`).  ``.model_id`` names the reader."""
    memo = ReadingMemo(reader)

    def rerank(passages, question: str, query_vector, k: int, *, depth: int = PASSAGE_DEPTH, extra=()) -> list[int]:
        return [h["i"] for h in rerank_passages(memo, passages, question, query_vector, k, depth=depth, extra=extra)]

    rerank.model_id = reader.config.model_id
    return rerank
