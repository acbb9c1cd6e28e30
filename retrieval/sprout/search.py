"""Hierarchical beam search over SproutRAG trees, reranking, and the store-facing entry point.

For one query vector ``q`` and one tree:

1. every node is scored by the cosine of ``q`` and its (normalised) progressive embedding;
2. **beam search** from the root: at each level the children of the beam are scored and the
   ``beam_width`` best kept; every node the search visits is a candidate when its score passes the
   learned threshold ``tau`` (:func:`beam_search`);
3. **rerank** and select at most ``k`` nodes, never a node together with one of its descendants
   or ancestors (:func:`select`).  Two rerankers:

   * ``"cosine"``: the node's cosine, the plain reading of the method;
   * ``"expected_ie"`` (default): each leaf gets a relevance probability from the learned
     calibration ``sigmoid((cos(q, leaf) - tau) / tau_temperature)``; a node's expected number
     of relevant sentences is the sum over its leaves, its cost its sentence count, and nodes are
     picked greedily to maximise ``(expected relevant)^2 / (sentences returned)`` -- the expected
     recall x precision of the whole answer set -- stopping when no candidate improves it.  This
     is how candidates from different levels are compared: a big node wins only when most of it
     is expected to be relevant.

Across many documents (:func:`search_forest`) each document is searched on its own (optionally
only the ``route_docs`` documents whose best leaf scores highest, the "Layer 0" routing) and the
candidates are merged before selection.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from .tree import Tree

RERANKERS = ("cosine", "expected_ie")


@dataclass
class SearchParams:
    """Retrieval settings; the model's config holds the trained ``tau``/``tau_temperature``."""

    beam_width: int = 5
    top_k: int = 10
    tau: float = 0.3
    tau_temperature: float = 0.05
    rerank: str = "expected_ie"
    min_results: int = 1  # return at least this many nodes even when none passes tau
    route_docs: int | None = None  # search only the best documents (by best leaf), None: all
    leaves_only: bool = False  # ablation: candidates are the leaves only, no tree

    def __post_init__(self) -> None:
        if self.rerank not in RERANKERS:
            raise ValueError(f"rerank must be one of {RERANKERS}, got {self.rerank!r}")
        if self.beam_width < 1 or self.top_k < 1:
            raise ValueError("beam_width and top_k must be at least 1")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Candidate:
    doc: int  # index of the document in the forest
    node: int
    score: float  # cosine of the node
    expected: float = 0.0  # expected relevant sentences (expected_ie)
    weight: float = 1.0  # sentences in the node
    rank_score: float = 0.0  # what the reranker ranked by


def _unit(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(norm, 1e-12)


def beam_search(tree: Tree, node_scores: np.ndarray, beam_width: int) -> list[int]:
    """Nodes visited by a beam search from the root, in visiting order (root first).

    At each level the children of every beam node are scored (``node_scores``) and the
    ``beam_width`` best children form the next beam; leaves end their branch.
    """
    visited = [tree.root]
    beam = [tree.root] if not tree.is_leaf(tree.root) else []
    children = tree.children
    while beam:
        kids = children[beam].reshape(-1)
        if len(kids) > beam_width:
            kids = kids[np.argsort(-node_scores[kids], kind="stable")[:beam_width]]
        visited.extend(int(v) for v in kids)
        beam = [int(v) for v in kids if v >= tree.n_leaves]
    return visited


def leaf_probabilities(leaf_scores: np.ndarray, tau: float, temperature: float) -> np.ndarray:
    """Calibrated relevance of each leaf: ``sigmoid((score - tau) / temperature)``."""
    return 1.0 / (1.0 + np.exp(-(leaf_scores - tau) / max(temperature, 1e-6)))


def expected_relevant(tree: Tree, leaf_prob: np.ndarray) -> np.ndarray:
    """Expected relevant sentences under every node: the sum of ``leaf_prob * weight`` over its
    leaves, in O(n) with prefix sums over the depth-first leaf order."""
    w = tree.weight[: tree.n_leaves]
    ordered = (leaf_prob * w)[tree.leaf_order]
    prefix = np.concatenate([[0.0], np.cumsum(ordered)])
    return prefix[tree.hi] - prefix[tree.lo]


def _overlaps(trees: Sequence[Tree], chosen: list[Candidate], c: Candidate) -> bool:
    t = trees[c.doc]
    return any(o.doc == c.doc and (t.is_ancestor(o.node, c.node) or t.is_ancestor(c.node, o.node)) for o in chosen)


def select(trees: Sequence[Tree], candidates: list[Candidate], params: SearchParams, k: int) -> list[Candidate]:
    """Rerank ``candidates`` and keep at most ``k`` that do not nest (see the module docstring)."""
    if params.rerank == "cosine":
        for c in candidates:
            c.rank_score = c.score
        chosen: list[Candidate] = []
        for c in sorted(candidates, key=lambda c: -c.rank_score):
            if len(chosen) >= k:
                break
            if not _overlaps(trees, chosen, c):
                chosen.append(c)
        return chosen
    # expected_ie: greedy on (sum expected)^2 / (sum weight)
    chosen = []
    got, cost, best_value = 0.0, 0.0, 0.0
    pool = list(candidates)
    while pool and len(chosen) < k:
        values = [((got + c.expected) ** 2) / (cost + c.weight) for c in pool]
        order = np.argsort(-np.array(values), kind="stable")
        pick = None
        for i in order:
            c = pool[int(i)]
            if not _overlaps(trees, chosen, c):
                pick = int(i)
                break
        if pick is None:
            break
        value = values[pick]
        if chosen and value <= best_value:
            break
        c = pool.pop(pick)
        c.rank_score = value
        chosen.append(c)
        got, cost, best_value = got + c.expected, cost + c.weight, value
        pool = [o for o in pool if not _overlaps(trees, [c], o)]
    return chosen


def search_forest(trees: Sequence[Tree], query: np.ndarray, params: SearchParams, k: int | None = None,
                  node_units: Sequence[np.ndarray] | None = None) -> list[Candidate]:
    """Search several documents' trees for one query vector and merge (see the module docstring).

    ``node_units`` (optional, per tree): the normalised node vectors, precomputed by the caller
    to save the normalisation on every query.
    """
    k = k or params.top_k
    q = _unit(np.asarray(query, dtype=np.float32))
    units = node_units if node_units is not None else [_unit(t.vectors) for t in trees]
    scores = [u @ q for u in units]
    order = range(len(trees))
    if params.route_docs is not None and len(trees) > params.route_docs:
        best_leaf = np.array([s[: t.n_leaves].max() for s, t in zip(scores, trees)])
        order = np.argsort(-best_leaf, kind="stable")[: params.route_docs]
    candidates: list[Candidate] = []
    fallback: list[Candidate] = []
    for d in order:
        t, s = trees[d], scores[d]
        nodes = np.arange(t.n_leaves) if params.leaves_only else np.array(beam_search(t, s, params.beam_width))
        exp = None
        if params.rerank == "expected_ie":
            exp = expected_relevant(t, leaf_probabilities(s[: t.n_leaves], params.tau, params.tau_temperature))
        for v in nodes:
            c = Candidate(int(d), int(v), float(s[v]), float(exp[v]) if exp is not None else 0.0, float(t.weight[v]))
            (candidates if c.score >= params.tau else fallback).append(c)
    chosen = select(trees, candidates, params, k)
    if len(chosen) < min(params.min_results, k) and fallback:
        # nothing (or too little) passed tau: the best of the rest, by the same reranker
        extra = select(trees, fallback, params, min(params.min_results, k) - len(chosen))
        chosen += [c for c in extra if not _overlaps(trees, chosen, c)]
    return chosen
