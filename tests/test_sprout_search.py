"""Beam search, threshold and selection on a hand-made tree."""

from __future__ import annotations

import numpy as np
import pytest

from vectree.retrieval.sprout.search import (
    SearchParams, beam_search, expected_relevant, leaf_probabilities, search_forest,
)
from vectree.retrieval.sprout.tree import tree_from_merges

Q = np.array([1.0, 0.0])


def _tree():
    # leaves: cos to Q = 1.0, 0.8, 0.0, -1.0; node 4 = (0,1), node 5 = (2,3), root 6 = (4,5)
    leaves = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]])
    return tree_from_merges(np.array([[0, 1], [2, 3], [4, 5]]), leaves)


def _scores(tree):
    v = tree.vectors / np.linalg.norm(tree.vectors, axis=1, keepdims=True)
    return v @ Q


def test_beam_search_keeps_the_best_children_per_level():
    tree = _tree()
    s = _scores(tree)
    assert s[4] == pytest.approx(0.9 / np.hypot(0.9, 0.3)) and s[6] == pytest.approx(0.2 / np.hypot(0.2, 0.4))
    assert beam_search(tree, s, beam_width=1) == [6, 4, 0]
    assert beam_search(tree, s, beam_width=2) == [6, 4, 5, 0, 1]
    assert sorted(beam_search(tree, s, beam_width=8)) == list(range(7))


def test_threshold_filters_candidates_and_the_fallback_returns_the_best():
    tree = _tree()
    p = dict(rerank="cosine", beam_width=1, fill_k=False)  # the threshold alone, without k means k
    hits = search_forest([tree], Q, SearchParams(tau=0.99, **p), k=3)
    assert [h.node for h in hits] == [0]  # only leaf 0 (cos 1.0) passes
    hits = search_forest([tree], Q, SearchParams(tau=1.5, min_results=0, **p), k=3)
    assert hits == []  # nothing passes tau and no fallback asked for
    hits = search_forest([tree], Q, SearchParams(tau=1.5, min_results=1, **p), k=3)
    assert [h.node for h in hits] == [0]  # fallback: the best visited node


def test_never_a_node_together_with_its_descendant():
    tree = _tree()
    hits = search_forest([tree], Q, SearchParams(tau=0.5, rerank="cosine", beam_width=2, fill_k=False), k=3)
    nodes = [h.node for h in hits]
    assert nodes == [0, 1]  # node 4 (cos .95) is the ancestor of 0 and is skipped
    for a in nodes:
        for b in nodes:
            assert a == b or not (tree.is_ancestor(a, b) or tree.is_ancestor(b, a))
    # with every node a candidate, the expected-IE reranker still never nests
    hits = search_forest([tree], Q, SearchParams(tau=-2.0, beam_width=8, rerank="expected_ie"), k=5)
    nodes = [h.node for h in hits]
    assert all(a == b or not tree.is_ancestor(a, b) for a in nodes for b in nodes)


def test_expected_ie_prefers_a_node_that_is_all_relevant():
    tree = _tree()
    s = _scores(tree)
    prob = leaf_probabilities(s[:4], tau=0.5, temperature=0.05)
    exp = expected_relevant(tree, prob)
    assert exp[4] == pytest.approx(prob[0] + prob[1]) and exp[6] == pytest.approx(prob.sum())
    for rerank in ("expected_ie", "leaf_expected_ie"):
        hits = search_forest([tree], Q, SearchParams(tau=0.5, tau_temperature=0.05, beam_width=2, rerank=rerank,
                                                     fill_k=False), k=3)
        # node 4 holds both relevant leaves: (2)^2/2 beats leaf 0 alone (1^2/1); adding more only lowers it
        assert [h.node for h in hits] == [4]
    # over the leaves with a scorer that finds 0 and 1 relevant and 2 not (feature 0 = node cosine):
    # the greedy stops after two, since (p0 + p1 + p2)^2 / 3 < (p0 + p1)^2 / 2 ...
    scorer = lambda f: 10 * (f[:, 0] - 0.5)
    p = dict(tau=-100.0, leaves_only=True)
    assert [h.node for h in search_forest([tree], Q, SearchParams(fill_k=False, **p), k=3, node_scorer=scorer)] == [0, 1]
    # ... by default (k means k) the greedy goes on to k nodes, the stopping point first
    assert [h.node for h in search_forest([tree], Q, SearchParams(**p), k=3, node_scorer=scorer)][:2] == [0, 1]
    assert len(search_forest([tree], Q, SearchParams(fill_k=True, **p), k=3, node_scorer=scorer)) == 3


def test_the_evidence_cap_stops_a_large_node_winning_by_its_size():
    """``gold_cap``: a query's evidence holds about G sentences, so a node cannot be expected to
    hold more relevant ones.  Uncapped, a 10-sentence node at precision .5 (5 expected) beats a
    2-sentence node at .9 (25/10 against 3.24/2); with G = 2 the small one wins (4/10 against 1.62)."""
    from vectree.retrieval.sprout.search import _select

    doc = np.array([0, 0])
    lo, hi = np.array([0, 10]), np.array([10, 12])  # disjoint: both could be returned
    expected, weight = np.array([5.0, 1.8]), np.array([10.0, 2.0])
    pick = lambda cap, k=1: _select(doc, lo, hi, np.zeros(2), expected, weight, True, k, True, gold_cap=cap)
    assert pick(None) == [0]
    assert pick(2.0) == [1]
    assert pick(2.0, k=2) == [1, 0]  # k means k either way: the cap orders, never drops
    # a cap as large as the evidence any node holds changes nothing
    assert pick(100.0) == pick(None)


def test_a_sharper_logit_scale_trusts_a_confident_small_node_over_a_large_uncertain_one():
    """``logit_scale``: the greedy reads a node's precision as sigmoid(scale x logit).  A 2-sentence
    node at logit 0 is worth .5^2 x 2 = .5 at every scale; a 1-sentence node at logit .4 is worth
    .60^2 = .36 at scale 1 (loses) and .83^2 = .69 at scale 4 (wins).  The tau gate reads the plain
    logit whatever the scale."""
    from scipy.special import expit

    # leaves 0 (cos 1.0) and 1 (cos .8) merge into node 4; feature 0 = node cosine, 4 = log sentences
    tree = _tree()

    def scorer(f):
        two = (f[:, 4] > 0.5) & (f[:, 4] < 1.0) & (f[:, 0] > 0.5)  # node 4 (log 2)
        return np.where(two, 0.0, np.where((f[:, 4] == 0) & (f[:, 0] > 0.99), 0.4, -5.0))

    p = dict(tau=-100.0, beam_width=8, fill_k=False)
    for scale, want in ((1.0, 4), (2.0, 4), (4.0, 0)):
        assert (expit(scale * 0.0) ** 2 * 2 > expit(scale * 0.4) ** 2) == (want == 4)  # the arithmetic above
        hits = search_forest([tree], Q, SearchParams(logit_scale=scale, **p), k=1, node_scorer=scorer)
        assert hits[0].node == want, scale
        w, logit = (2, 0.0) if want == 4 else (1, 0.4)
        assert hits[0].expected == pytest.approx(expit(scale * logit) * w)
    # the gate: tau between the two logits keeps only leaf 0 at any scale
    for scale in (1.0, 4.0):
        gated = search_forest([tree], Q, SearchParams(logit_scale=scale, tau=0.2, beam_width=8, fill_k=False), k=3,
                              node_scorer=scorer)
        assert [h.node for h in gated] == [0]
    with pytest.raises(ValueError, match="logit_scale"):
        SearchParams(logit_scale=0.0)


def test_a_trained_model_caps_at_its_training_queries_median_evidence():
    from types import SimpleNamespace as NS

    from vectree.retrieval.sprout.train import median_evidence

    data = NS(docs=[NS(weights=[1, 2, 3, 1], queries=[NS(positives=[0]), NS(positives=[1, 2]), NS(positives=[]),
                                                           NS(positives=[2, 3])])])
    assert median_evidence(data) == 4.0  # evidence sizes 1, 5 and 4 sentences (no positive: left out)
    assert median_evidence(NS(docs=[])) is None


def test_learned_reranker_scores_gate_and_rank():
    tree = _tree()
    # a scorer that prefers big nodes: logit = log(sentences) - 0.5 (feature 4 is log_sentences)
    scorer = lambda f: f[:, 4] - 0.5
    hits = search_forest([tree], Q, SearchParams(tau=0.0, beam_width=8, fill_k=False), k=3, node_scorer=scorer)
    assert hits[0].node == tree.root  # the only node whose logit is highest and passes tau
    # k means k: asked for one node it is the root; asked for three, the root (which would leave no
    # room for two more) gives way to its two children's best split
    assert [h.node for h in search_forest([tree], Q, SearchParams(tau=0.0, beam_width=8), k=1,
                                          node_scorer=scorer)] == [tree.root]
    three = search_forest([tree], Q, SearchParams(tau=0.0, beam_width=8), k=3, node_scorer=scorer)
    assert len(three) == 3 and tree.root not in [h.node for h in three]
    with pytest.raises(ValueError, match="node_scorer"):
        search_forest([tree], Q, SearchParams(), k=3)


def test_many_documents_are_searched_apart_and_merged():
    t1 = _tree()
    # the second document is about something else: every node is nearly orthogonal to the query
    t2 = tree_from_merges(np.array([[0, 1], [2, 3], [4, 5]]),
                          np.array([[0.1, 1.0], [0.2, 1.0], [0.0, 1.0], [-0.1, 1.0]]))
    hits = search_forest([t1, t2], Q, SearchParams(tau=0.5, rerank="cosine", beam_width=2, fill_k=False), k=3)
    assert {h.doc for h in hits} == {0}
    routed = search_forest([t2, t1], Q, SearchParams(tau=0.5, rerank="cosine", beam_width=2, route_docs=1,
                                                     fill_k=False), k=3)
    assert {h.doc for h in routed} == {1}
    # k means k: the nodes that pass tau come first, then the other document fills the rest
    filled = search_forest([t2, t1], Q, SearchParams(tau=0.5, rerank="cosine", beam_width=2, route_docs=1), k=6)
    assert len(filled) == 6 and filled[0].doc == 1 and {h.doc for h in filled} == {0, 1}
    leaves = search_forest([t1], Q, SearchParams(tau=0.5, rerank="cosine", leaves_only=True), k=3)
    assert all(tree_leaf < 4 for tree_leaf in (h.node for h in leaves))


def test_bad_params():
    with pytest.raises(ValueError):
        SearchParams(rerank="bm25")
    with pytest.raises(ValueError):
        SearchParams(beam_width=0)


def test_nodes_above_max_sentences_are_not_returned():
    tree = _tree()
    p = dict(tau=-2.0, beam_width=8, rerank="expected_ie")
    assert [h.node for h in search_forest([tree], Q, SearchParams(fill_k=False, **p), k=3)] == [tree.root]
    hits = search_forest([tree], Q, SearchParams(max_sentences=2, **p), k=3)
    assert hits and all(tree.weight[h.node] <= 2 for h in hits)
