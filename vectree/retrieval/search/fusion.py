"""Fusion of BM25 and dense hits, and the roll-up of entry hits to papers.

Each retriever returns *entries* (paper or section).  Per retriever, entries first roll up to
their paper: a paper's score is its best entry's score and its rank follows from that, so a
paper with twenty sections is not favoured over one with three.  The per-retriever paper
rankings are then fused:

* ``rrf``: reciprocal-rank fusion, ``sum_r w_r / (RRF_K + rank_r)`` (Cormack et al., 2009); needs
  no score calibration.
* ``weighted``: each retriever's paper scores are min-max normalised over its own candidate list,
  then ``dense_weight * dense + (1 - dense_weight) * bm25`` (a paper missing from a list gets 0).

A result is ``{doc_id, title, score, matched_sections: [{node_id, title, pages}]}``, where
``matched_sections`` are the paper's section entries hit by any retriever, best first, at most
``max_sections`` of them (the agent reads about 50 tokens per result), and ``pages`` is
``[page_start, page_end]`` (1-based, inclusive).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from .entries import EntryHit

RRF_K = 60
FUSIONS = ("rrf", "weighted")


Hit = EntryHit


def rollup(hits: Sequence[Hit]) -> tuple[list[str], dict[str, float]]:
    """Papers in order of their best entry (hits must be sorted best first), with that score."""
    order: list[str] = []
    best: dict[str, float] = {}
    for h in hits:
        if h.doc_id not in best:
            best[h.doc_id] = h.score
            order.append(h.doc_id)
        elif h.score > best[h.doc_id]:  # defensive: a backend that returns ties out of order
            best[h.doc_id] = h.score
    order.sort(key=lambda d: -best[d])
    return order, best


def rrf_scores(rankings: Mapping[str, Sequence[str]], weights: Mapping[str, float] | None = None,
               k: int = RRF_K) -> dict[str, float]:
    """Reciprocal-rank fusion of ranked id lists (rank 1 is best)."""
    out: dict[str, float] = {}
    for name, ranking in rankings.items():
        w = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, doc_id in enumerate(ranking, start=1):
            out[doc_id] = out.get(doc_id, 0.0) + w / (k + rank)
    return out


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores mapped to [0, 1] over this candidate list (all equal -> all 1)."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo <= 1e-12:
        return {d: 1.0 for d in scores}
    return {d: (s - lo) / (hi - lo) for d, s in scores.items()}


def weighted_scores(scores: Mapping[str, Mapping[str, float]], weights: Mapping[str, float]) -> dict[str, float]:
    """Weighted sum of min-max normalised per-retriever scores."""
    out: dict[str, float] = {}
    for name, s in scores.items():
        w = weights.get(name, 0.0)
        for doc_id, v in minmax(s).items():
            out[doc_id] = out.get(doc_id, 0.0) + w * v
    return out


def fuse(hits: Mapping[str, Sequence[Hit]], *, fusion: str = "rrf", dense_weight: float = 0.5, k: int = 10,
         paper_titles: Mapping[str, str] | None = None, max_sections: int = 3, rrf_k: int = RRF_K) -> list[dict]:
    """Fuse per-retriever entry hits (``{"bm25": [...], "dense": [...]}``, each best first) into
    the top ``k`` papers.  With a single retriever the result is simply its paper ranking."""
    if fusion not in FUSIONS:
        raise ValueError(f"unknown fusion {fusion!r}: expected one of {', '.join(FUSIONS)}")
    if not 0.0 <= dense_weight <= 1.0:
        raise ValueError(f"dense_weight must be within [0, 1], got {dense_weight}")
    active = {name: list(h) for name, h in hits.items()}
    rolled = {name: rollup(h) for name, h in active.items()}
    if len(active) == 1:
        (name, (order, best)), = rolled.items()
        fused = {d: best[d] for d in order}
    elif fusion == "rrf":
        weights = {"dense": 2 * dense_weight, "bm25": 2 * (1 - dense_weight)}  # 0.5 -> plain RRF
        fused = rrf_scores({n: order for n, (order, _) in rolled.items()}, weights, k=rrf_k)
    else:
        weights = {"dense": dense_weight, "bm25": 1 - dense_weight}
        fused = weighted_scores({n: best for n, (_, best) in rolled.items()}, weights)
    top = sorted(fused, key=lambda d: (-fused[d], d))[:k]

    # matched sections: each section entry ranked by its best rank in any retriever
    section_rank: dict[str, dict[str, tuple[int, Hit]]] = {}
    titles = dict(paper_titles or {})
    for name, entry_hits in active.items():
        for rank, h in enumerate(entry_hits):
            if h.kind == "paper":
                titles.setdefault(h.doc_id, h.title)
                continue
            per_doc = section_rank.setdefault(h.doc_id, {})
            if h.node_id not in per_doc or rank < per_doc[h.node_id][0]:
                per_doc[h.node_id] = (rank, h)
    results = []
    for doc_id in top:
        sections = sorted(section_rank.get(doc_id, {}).values(), key=lambda rh: rh[0])[:max_sections]
        results.append({
            "doc_id": doc_id,
            "title": titles.get(doc_id, ""),
            "score": round(float(fused[doc_id]), 6),
            "matched_sections": [
                {"node_id": h.node_id, "title": h.title, "pages": [h.page_start, h.page_end]} for _, h in sections
            ],
        })
    return results
