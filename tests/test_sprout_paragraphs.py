"""Single-paragraph nodes: a tree that knows its chunks' paragraphs tells which nodes lie inside one,
the search can be limited to those, the store keeps the paragraphs, and training decides on dev."""

from __future__ import annotations

import numpy as np

from vectree.retrieval.sprout.search import SearchParams, search_forest
from vectree.retrieval.sprout.tree import tree_from_merges


def _tree(groups):
    # leaves 0..4; 5 = (0, 1), 6 = (5, 2), 7 = (3, 4), 8 = root (6, 7)
    x = np.eye(5, 3, dtype=np.float32) + 0.01
    tree = tree_from_merges(np.array([[0, 1], [5, 2], [3, 4], [6, 7]]), x)
    tree.groups = np.asarray(groups)
    return tree


def test_single_group_matches_the_leaves_paragraphs():
    rng = np.random.default_rng(0)
    for _ in range(20):
        groups = rng.integers(0, 3, size=5)
        tree = _tree(groups)
        expect = [len({int(groups[c]) for c in tree.leaves(v)}) == 1 for v in range(tree.n_nodes)]
        assert tree.single_group().tolist() == expect
    assert _tree([0, 0, 1, 2, 2]).single_group().tolist() == [True] * 5 + [True, False, True, False]
    plain = tree_from_merges(np.array([[0, 1]]), np.eye(2, dtype=np.float32))
    assert plain.single_group() is None  # paragraphs unknown: nothing to restrict


def test_single_paragraph_returns_no_node_across_paragraphs():
    tree = _tree([0, 0, 1, 2, 2])
    q = np.array([1.0, 1.0, 0.0], np.float32)
    # node 6 (leaves 0, 1, 2: two paragraphs) is the query itself; node 5 (paragraph 0) is close
    tree.vectors[6] = q
    tree.vectors[5] = [1.0, 0.8, 0.0]
    base = dict(rerank="cosine", tau=-2.0, route_docs=None, max_sentences=None, beam_width=4)
    anything = search_forest([tree], q, SearchParams(**base), k=2)
    inside = search_forest([tree], q, SearchParams(**base, single_paragraph=True), k=2)
    assert anything[0].node == 6
    single = tree.single_group()
    assert inside[0].node == 5 and all(single[c.node] for c in inside) and len(inside) == 2
