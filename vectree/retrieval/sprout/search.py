"""Hierarchical beam search over SproutRAG trees, reranking, and selection.

For one query vector ``q`` and one tree:

1. every node is scored by the cosine of ``q`` and its (normalised) node vector: the progressive
   embedding, or -- for a model with text nodes -- the MiniLM vector of the node's own text when
   it has at most ``text_node_chunks`` chunks (:func:`vectree.retrieval.sprout.tree.with_text_vectors`);
2. **beam search** from the root: at each level the children of the beam are scored by that
   cosine and the ``beam_width`` best kept; every node the search visits, at any level, is a
   candidate (:func:`beam_search`), and so is every node of at most ``scan_chunks`` chunks of a
   routed document (text-node models: the small nodes are scored exactly, the beam guides above).
   With ``single_paragraph`` only nodes inside one paragraph are candidates (the larger ones
   only route the beam);
3. **threshold**: a candidate stays when its score passes the learned ``tau`` (and it has at most
   ``max_sentences`` sentences: a node holding most of a long paper is no answer unit).  With the default
   ``rerank="learned"`` the score is the learned reranker's logit (below); with the other
   rerankers it is the node's cosine;
4. **rerank and select** at most ``k`` nodes, never a node together with one of its descendants
   or ancestors (:func:`_select`).  Rerankers:

   * ``"learned"`` (default): the model's node scorer maps :func:`node_features` (the node's
     cosine; its leaves' mean, max and min cosine; its size; scores relative to the best of the
     search and to the document; what its parent and sibling add; its cohesion; for models
     trained with them, the query's words in its chunks, :mod:`vectree.retrieval.sprout.lexical`)
     to the logit of the node's precision ``p`` (read as ``sigmoid(logit_scale * logit)``, the
     scale chosen on dev); nodes are picked greedily to maximise
     ``min(sum p * sentences, G)^2 / (sum sentences)`` -- the expected recall x precision of the
     whole answer set, ``G`` the sentences a query's evidence holds (``gold_cap``: a set cannot
     hold more relevant sentences than that) -- stopping when no candidate raises it.  This is
     how candidates from different levels are compared: a big node wins only when most of it
     is expected to be relevant, and a query whose evidence is one node gets one node, not k;
   * ``"expected_ie"`` / ``"leaf_expected_ie"``: the same greedy with ``p`` calibrated from the
     node's own cosine, or summed over its leaves' calibrated cosines (no learned scorer);
   * ``"cosine"``: the node's cosine, the plain reading of the method.

Across many documents (:func:`search_forest`) each document is searched on its own -- by default
only the ``route_docs`` documents whose best leaf scores highest (the "Layer 0" routing) -- and
the candidates are merged before selection.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy.special import expit  # the logistic function without exp's overflow warnings

from .lexical import LEXICAL_FEATURES, LeafLexical, QueryLexicon, node_lexical
from .tree import Tree, range_reduce as _range_reduce, range_sum

RERANKERS = ("learned", "cosine", "expected_ie", "leaf_expected_ie")


@dataclass
class SearchParams:
    """Retrieval settings; the model's config holds the trained ``tau``/``tau_temperature``."""

    beam_width: int = 5
    top_k: int = 10
    tau: float = 0.3
    tau_temperature: float = 0.05
    rerank: str = "learned"
    min_results: int = 1  # return at least this many nodes even when none passes tau
    route_docs: int | None = 8  # search only the best documents (by best leaf), None: all
    leaves_only: bool = False  # ablation: candidates are the leaves only, no tree
    # k means k: return k distinct nodes whenever the documents have k leaves; False stops where the
    # expected-IE greedy stops gaining (the earlier behaviour, kept for comparison)
    fill_k: bool = True
    max_sentences: int | None = 40  # nodes larger than this are traversed but never returned
    # every node of at most this many chunks in a routed document is a candidate too, beside the
    # beam's (text-node models: their small nodes are scored exactly, the beam guides above them)
    scan_chunks: int = 0
    # return only nodes whose chunks lie in one paragraph (a paragraph or part of one; trees that
    # know their paragraphs): larger nodes still guide the beam.  Measured: unions of paragraphs
    # were mostly a relevant paragraph plus an unrelated one (see the README's SproutRAG section)
    single_paragraph: bool = False
    # a query's evidence holds about this many sentences: the expected-IE greedy never counts more
    # relevant sentences than that (expected recall stops at 1), so a large node cannot win by its
    # size alone.  Models set it to the median evidence size of their training queries
    # (:func:`vectree.retrieval.sprout.train.median_evidence`); None: uncapped (models before)
    gold_cap: float | None = None
    # the greedy reads a node's precision as sigmoid(logit_scale x the scorer's logit): above 1 it
    # trusts a confident small node more against a large uncertain one (the tau gate still reads the
    # plain logit).  Chosen on the dev split after training (:func:`vectree.retrieval.sprout.train.
    # choose_logit_scale`); 1: the scorer's own probability (models before)
    logit_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.rerank not in RERANKERS:
            raise ValueError(f"rerank must be one of {RERANKERS}, got {self.rerank!r}")
        if self.beam_width < 1 or self.top_k < 1:
            raise ValueError("beam_width and top_k must be at least 1")
        if not self.logit_scale > 0:
            raise ValueError(f"logit_scale must be positive, got {self.logit_scale!r}")

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


def unit_rows(v: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero): what every cosine here compares."""
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
    return expit((np.asarray(leaf_scores, dtype=np.float64) - tau) / max(temperature, 1e-6))


def expected_relevant(tree: Tree, leaf_prob: np.ndarray) -> np.ndarray:
    """Expected relevant sentences under every node: the sum of ``leaf_prob * weight`` over its
    leaves, in O(n) with prefix sums over the depth-first leaf order."""
    w = tree.weight[: tree.n_leaves]
    return range_sum((leaf_prob * w)[tree.leaf_order], tree.lo, tree.hi)


# the features of models trained before lexical features (sprout-default-v1..v3): their scorers'
# input columns, in this order
LEGACY_FEATURE_NAMES = (
    "node_cos", "leaf_mean", "leaf_max", "leaf_min", "log_sentences", "doc_fraction",
    "leaf_max_vs_best", "leaf_mean_vs_best", "node_cos_vs_best", "leaf_mean_z", "leaf_max_z",
    "parent_gain", "sibling_gain", "cohesion",
)
FEATURE_NAMES = LEGACY_FEATURE_NAMES + LEXICAL_FEATURES
N_FEATURES = len(FEATURE_NAMES)


def node_features(tree: Tree, leaf_scores: np.ndarray, node_scores: np.ndarray, best_leaf: float | None = None,
                  best_node: float | None = None, lexical: LeafLexical | None = None,
                  best_bm25: float | None = None) -> np.ndarray:
    """Features of every node for the learned reranker, ``(n_nodes, N_FEATURES)`` float32.

    From the query's cosines to the node (progressive embedding) and to its leaves: the leaves'
    mean (by sentences), max and min; the node's size; scores relative to the best leaf / node of
    the whole search (``best_leaf``/``best_node``, default this tree's) and to this document's
    score distribution; how much the parent and the sibling add; and the node's cohesion (the rank
    of the mutual attention that formed it among the document's merges, 1 for leaves); then the
    lexical features of :func:`vectree.retrieval.sprout.lexical.node_lexical` (``lexical``: the
    query's word matches in this tree's chunks; ``best_bm25``: the best chunk BM25 of the search,
    default this tree's; zeros without ``lexical``).
    """
    n = tree.n_leaves
    order = tree.leaf_order
    w = tree.weight[:n]
    ls = np.asarray(leaf_scores, dtype=np.float64)
    ordered_s, ordered_w = ls[order], w[order]
    size = range_sum(ordered_w, tree.lo, tree.hi)
    mean = range_sum(ordered_w * ordered_s, tree.lo, tree.hi) / np.maximum(size, 1e-9)
    mx = _range_reduce(ordered_s, tree.lo, tree.hi, np.maximum)
    mn = _range_reduce(ordered_s, tree.lo, tree.hi, np.minimum)
    best_leaf = float(ls.max()) if best_leaf is None else best_leaf
    best_node = float(np.max(node_scores)) if best_node is None else best_node
    doc_mean = float((w * ls).sum() / w.sum())
    doc_std = float(np.sqrt((w * (ls - doc_mean) ** 2).sum() / w.sum())) + 1e-3
    parent = np.where(tree.parent >= 0, tree.parent, np.arange(tree.n_nodes))
    kids = tree.children[parent]
    sibling = np.where(kids[:, 0] == np.arange(tree.n_nodes), kids[:, 1], kids[:, 0])
    sibling = np.where(tree.parent >= 0, sibling, np.arange(tree.n_nodes))
    cohesion = np.ones(tree.n_nodes)
    if tree.n_nodes > n and tree.strength is not None:
        inner = tree.strength[n:]
        ranks = np.argsort(np.argsort(inner, kind="stable"), kind="stable")
        cohesion[n:] = (ranks + 1) / len(inner)
    f = np.stack([
        node_scores, mean, mx, mn, np.log(size), size / size[tree.root],
        mx - best_leaf, mean - best_leaf, node_scores - best_node, (mean - doc_mean) / doc_std,
        (mx - doc_mean) / doc_std, mean[parent] - mean, mean[sibling] - mean, cohesion,
    ], axis=1)
    if best_bm25 is None:
        best_bm25 = float(lexical.bm25.max()) if lexical is not None and len(lexical.bm25) else 0.0
    return np.concatenate([f, node_lexical(tree, lexical, best_bm25)], axis=1).astype(np.float32)



def _select(doc: np.ndarray, lo: np.ndarray, hi: np.ndarray, score: np.ndarray, expected: np.ndarray,
            weight: np.ndarray, greedy_ie: bool, k: int, fill_k: bool, got: float = 0.0,
            cost: float = 0.0, capacity: int | None = None, gold_cap: float | None = None) -> list[int]:
    """Indices of at most ``k`` candidates, none nested in another (vectorised), in the order picked.

    Nodes of one tree either nest or are disjoint, so two candidates conflict exactly when they
    are in the same document and their leaf intervals ``[lo, hi)`` intersect.  The expected-IE
    greedy picks, at every step, the node that gives the set picked so far the highest expected
    recall x precision (``got``/``cost``: the expected relevant and returned sentences of nodes
    picked before, by an earlier tier; ``gold_cap``: the relevant sentences a query has, at most);
    without ``fill_k`` it stops when no node raises it.
    ``capacity`` (the leaves no picked node covers yet): a node is only picked while the leaves
    left beside it still hold the rest of the ``k``, so k distinct nodes exist whenever k leaves do.
    """
    alive = np.ones(len(doc), dtype=bool)
    size = hi - lo
    chosen: list[int] = []
    best = got * got / cost if cost else 0.0
    while alive.any() and len(chosen) < k:
        ok = alive if capacity is None else alive & (size <= capacity - (k - len(chosen) - 1))
        if not ok.any():
            break
        if greedy_ie:
            gain = got + expected if gold_cap is None else np.minimum(got + expected, gold_cap)
            value = np.where(ok, gain ** 2 / (cost + weight), -np.inf)
        else:
            value = np.where(ok, score, -np.inf)
        i = int(np.argmax(value))
        if greedy_ie and (chosen or cost) and value[i] <= best and not fill_k:
            break  # nothing left raises the expected recall x precision
        chosen.append(i)
        got, cost, best = got + expected[i], cost + weight[i], float(value[i])
        if capacity is not None:
            capacity -= int(size[i])
        alive &= ~((doc == doc[i]) & (lo < hi[i]) & (lo[i] < hi))
    return chosen


def _beam_and_small(tree: Tree, node_scores: np.ndarray, params: SearchParams) -> np.ndarray:
    """The beam search's nodes, then (``scan_chunks``) every other node of at most that many chunks."""
    nodes = np.array(beam_search(tree, node_scores, params.beam_width))
    if params.scan_chunks:
        small = np.flatnonzero(tree.hi - tree.lo <= params.scan_chunks)
        nodes = np.concatenate([nodes, np.setdiff1d(small, nodes, assume_unique=False)])
    return nodes


def _disjoint_from(doc, lo, hi, taken: list[tuple[int, int, int]]) -> np.ndarray:
    """Mask of the candidates that nest in none of the ``taken`` ``(doc, lo, hi)`` nodes."""
    keep = np.ones(len(doc), dtype=bool)
    for d, a, b in taken:
        keep &= ~((doc == d) & (lo < b) & (a < hi))
    return keep


def search_forest(trees: Sequence[Tree], query: np.ndarray, params: SearchParams, k: int | None = None,
                  node_units: Sequence[np.ndarray] | None = None,
                  node_scorer: Callable[[np.ndarray], np.ndarray] | None = None,
                  query_text: str | None = None) -> list[Candidate]:
    """Search several documents' trees for one query vector and merge (see the module docstring).

    Returns ``k`` distinct nodes, none nested in another, ranked, whenever the searched documents
    have ``k`` leaves between them (with ``fill_k``, the default): candidates are taken in tiers
    -- the nodes the beam search visited that pass ``tau``, then the other visited ones, then every
    other node of the routed documents, then those of the documents routing left out -- and each
    tier continues the expected-IE greedy of the tiers before it.  Without ``fill_k`` the result
    stops where the greedy stops raising the expected IE (at least ``min_results`` nodes).

    ``node_units`` (optional, per tree): the normalised node vectors, precomputed by the caller
    to save the normalisation on every query.  ``node_scorer`` (needed by ``rerank="learned"``):
    maps :func:`node_features` rows to logits of the node's precision (the model's reranker).
    ``query_text``: the query's words for the lexical features, read from every tree's ``terms``
    (:class:`vectree.retrieval.sprout.lexical.LeafTerms`); without it they are zeros.
    """
    if params.rerank == "learned" and node_scorer is None:
        raise ValueError('rerank="learned" needs the model\'s node_scorer')
    k = k or params.top_k
    if not trees:
        return []
    q = unit_rows(np.asarray(query, dtype=np.float32))
    units = node_units if node_units is not None else [unit_rows(t.vectors) for t in trees]
    scores = [u @ q for u in units]
    order = np.arange(len(trees))
    if params.route_docs is not None and len(trees) > params.route_docs:
        best_leaf = np.array([s[: t.n_leaves].max() for s, t in zip(scores, trees)])
        order = np.argsort(-best_leaf, kind="stable")[: params.route_docs]
    best_leaf = max(float(scores[d][: trees[d].n_leaves].max()) for d in order)
    best_node = max(float(scores[d].max()) for d in order)
    features: dict[int, np.ndarray] = {}
    lexicon: QueryLexicon | None = None
    best_bm25 = None
    if params.rerank == "learned" and query_text is not None and all(t.terms is not None for t in trees):
        # IDF over every tree searched; the best chunk of the routed documents sets the scale
        lexicon = QueryLexicon([t.terms for t in trees], query_text)
        best_bm25 = max((float(lexicon[int(d)].bm25.max()) for d in order if trees[d].n_leaves), default=0.0)

    def candidates(d: int, nodes: np.ndarray):
        """The candidate arrays of ``nodes`` of document ``d``: what the reranker makes of them."""
        t, s = trees[d], scores[d]
        single = t.single_group() if params.single_paragraph else None
        if single is not None:
            nodes = nodes[single[nodes]]
        if params.rerank == "learned":
            if d not in features:
                features[d] = node_features(t, s[: t.n_leaves], s, best_leaf, best_node,
                                            lexicon[d] if lexicon is not None else None, best_bm25)
            # the reranker's logit is the candidate score: tau gates it, sigmoid(logit) estimates precision
            logit = node_scorer(features[d][nodes])
            expected = t.weight[nodes] * expit(params.logit_scale * logit)
            gate, rank = logit, logit
        elif params.rerank == "expected_ie":
            expected = leaf_probabilities(s[nodes], params.tau, params.tau_temperature) * t.weight[nodes]
            gate, rank = s[nodes], s[nodes]
        elif params.rerank == "leaf_expected_ie":
            expected = expected_relevant(t, leaf_probabilities(s[: t.n_leaves], params.tau, params.tau_temperature))[nodes]
            gate, rank = s[nodes], s[nodes]
        else:
            expected = np.zeros(len(nodes))
            gate, rank = s[nodes], s[nodes]
        return (np.full(len(nodes), d), nodes, s[nodes], expected, t.weight[nodes], t.lo[nodes], t.hi[nodes],
                gate, rank)

    def stack(parts):
        if not parts:
            return None
        return [np.concatenate(c) for c in zip(*parts)]

    visited = {int(d): (np.arange(trees[d].n_leaves) if params.leaves_only
                        else _beam_and_small(trees[d], scores[d], params)) for d in order}
    pool = stack([candidates(d, nodes) for d, nodes in visited.items()])
    doc, node, score, expected, weight, lo, hi, gate, rank = pool
    greedy = params.rerank != "cosine"
    # an answer unit must stay readable: huge nodes (a whole long paper) are never returned
    size_ok = weight <= params.max_sentences if params.max_sentences else np.ones(len(weight), dtype=bool)
    if not size_ok.any():
        size_ok[:] = True
    passed = (gate >= params.tau) & size_ok
    picked: list[tuple] = []  # (doc, node, score, expected, weight, rank, lo, hi)
    got = cost = 0.0
    # leaves not yet covered by a picked node (all documents): what k distinct nodes can still use
    capacity = sum(t.n_leaves for t in trees) if params.fill_k else None
    if capacity is not None:
        k = min(k, capacity)

    def take(arrays, mask, limit, fill):
        nonlocal got, cost, capacity
        d_, n_, s_, e_, w_, lo_, hi_, _, r_ = arrays
        idx = np.flatnonzero(mask & _disjoint_from(d_, lo_, hi_, [(p[0], p[6], p[7]) for p in picked]))
        for i in _select(d_[idx], lo_[idx], hi_[idx], r_[idx], e_[idx], w_[idx], greedy, limit, fill, got, cost,
                         capacity, params.gold_cap):
            j = idx[i]
            picked.append((int(d_[j]), int(n_[j]), float(s_[j]), float(e_[j]), float(w_[j]), float(r_[j]),
                           int(lo_[j]), int(hi_[j])))
            got, cost = got + float(e_[j]), cost + float(w_[j])
            if capacity is not None:
                capacity -= int(hi_[j] - lo_[j])

    take(pool, passed, k, params.fill_k)
    if params.fill_k:
        # k means k: the rest of the beam, then the rest of the routed documents, then the others
        take(pool, ~passed & size_ok, k - len(picked), True)
        for tier_docs in ([d for d in order], [d for d in range(len(trees)) if d not in visited]):
            if len(picked) >= k:
                break
            parts = []
            for d in tier_docs:
                seen = visited.get(int(d))
                nodes = np.arange(trees[d].n_leaves if params.leaves_only else trees[d].n_nodes)
                if seen is not None:
                    nodes = np.setdiff1d(nodes, seen, assume_unique=True)
                if len(nodes):
                    parts.append(candidates(int(d), nodes))
            more = stack(parts)
            if more is None:
                continue
            ok = more[4] <= params.max_sentences if params.max_sentences else np.ones(len(more[4]), dtype=bool)
            take(more, ok, k - len(picked), True)
    elif len(picked) < min(params.min_results, k):
        # nothing (or too little) passed tau: the best of the rest, by the same reranker, not nesting
        take(pool, ~passed & size_ok, min(params.min_results, k) - len(picked), True)
    return [Candidate(d, n, s, e, w, r) for d, n, s, e, w, r, _, _ in picked]
