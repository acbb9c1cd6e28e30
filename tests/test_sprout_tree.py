"""SproutRAG tree construction on hand-made attention matrices."""

from __future__ import annotations

import numpy as np
import pytest

from vectree.retrieval.sprout.chunks import chunk_pages, chunk_text
from vectree.retrieval.sprout.tree import (
    build_tree, greedy_single_linkage, mutual_attention, single_linkage, tree_from_merges,
)


def _sym(n, entries):
    m = np.zeros((n, n))
    for (i, j), v in entries.items():
        m[i, j] = m[j, i] = v
    np.fill_diagonal(m, -np.inf)
    return m


def test_mutual_attention_symmetrises_and_masks_the_diagonal():
    a = np.array([[0.9, 0.1, 0.0], [0.5, 0.3, 0.2], [0.0, 0.6, 0.4]])
    m = mutual_attention(a)
    assert np.allclose(m, m.T)
    assert np.all(np.isneginf(np.diag(m)))
    assert m[0, 1] == pytest.approx(0.3) and m[1, 2] == pytest.approx(0.4)
    with pytest.raises(ValueError):
        mutual_attention(np.zeros((2, 3)))


def test_known_merge_order():
    m = _sym(4, {(0, 1): 0.9, (0, 2): 0.1, (0, 3): 0.2, (1, 2): 0.3, (1, 3): 0.4, (2, 3): 0.8})
    expected = [[0, 1], [2, 3], [4, 5]]  # strongest pair, then the next, then the two parents
    assert single_linkage(m).tolist() == expected
    assert greedy_single_linkage(m).tolist() == expected


def test_parent_inherits_the_strongest_relation():
    # after (0,1) merge, the parent's relation to 2 is max(0.1, 0.7) = 0.7 > 0.6 = (2,3); average
    # linkage would give 0.4 and merge (2,3) first
    m = _sym(4, {(0, 1): 0.9, (1, 2): 0.7, (0, 2): 0.1, (2, 3): 0.6, (0, 3): 0.05, (1, 3): 0.05})
    expected = [[0, 1], [2, 4], [3, 5]]
    assert greedy_single_linkage(m).tolist() == expected
    assert single_linkage(m).tolist() == expected


def test_non_adjacent_merge_makes_a_non_contiguous_node():
    m = _sym(3, {(0, 2): 0.8, (0, 1): 0.1, (1, 2): 0.2})
    merges = single_linkage(m)
    assert merges.tolist() == [[0, 2], [1, 3]]
    tree = tree_from_merges(merges, np.eye(3))
    assert tree.leaves(3) == [0, 2]  # chunks 0 and 2, without 1: not contiguous
    assert tree.leaves(tree.root) == [0, 1, 2]  # document order
    assert tree.parent[1] == tree.root and tree.depth[1] == 1 and tree.depth[0] == 2


def test_progressive_embeddings_average_the_children_not_the_leaves():
    vecs = np.array([[1.0, 0.0], [0.0, 1.0], [4.0, 4.0]])
    tree = tree_from_merges(np.array([[0, 1], [2, 3]]), vecs)
    assert np.allclose(tree.vectors[3], [0.5, 0.5])
    assert np.allclose(tree.vectors[4], [2.25, 2.25])  # (e2 + e3) / 2, not the leaf mean 5/3
    assert tree.root == 4 and tree.parent[4] == -1
    assert tree.weight.tolist() == [1, 1, 1, 2, 3]
    assert tree.is_ancestor(4, 0) and tree.is_ancestor(3, 1) and not tree.is_ancestor(3, 2)


def test_scipy_single_linkage_equals_the_naive_greedy():
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(2, 25))
        m = mutual_attention(rng.random((n, n)))  # continuous values: no ties
        assert single_linkage(m).tolist() == greedy_single_linkage(m).tolist()


def test_build_tree_shapes_and_errors():
    rng = np.random.default_rng(0)
    m = mutual_attention(rng.random((6, 6)))
    tree = build_tree(m, rng.random((6, 3)), leaf_weights=[1, 2, 1, 1, 2, 1])
    assert tree.n_nodes == 11 and tree.n_leaves == 6
    assert sorted(tree.leaf_order.tolist()) == list(range(6))
    assert tree.weight[tree.root] == 8
    one = build_tree(np.full((1, 1), -np.inf), np.ones((1, 3)))
    assert one.n_nodes == 1 and one.root == 0 and one.leaves(0) == [0]
    with pytest.raises(ValueError):
        build_tree(m, rng.random((5, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        single_linkage(np.array([[0, 1.0], [0.5, 0]]))
    with pytest.raises(ValueError):
        tree_from_merges(np.array([[0, 0]]), np.ones((2, 2)))


def test_chunks_keep_spans_paragraphs_and_pages():
    text = "Short one.\nThis is a sentence that is long enough to stand alone. And here is another full sentence, long as well."
    chunks = chunk_text(text)
    assert [c.text for c in chunks] == [
        "Short one.", "This is a sentence that is long enough to stand alone.", "And here is another full sentence, long as well."]
    assert [c.paragraph for c in chunks] == [0, 1, 1]
    assert all(text[c.start:c.end] == c.text for c in chunks)
    merged = chunk_text("Fig. 2. The capacity fades quickly after one hundred cycles at high rate.")
    assert len(merged) == 1 and merged[0].n_sentences == 2  # a fragment joins its neighbour
    doc, pages = chunk_pages(["First page line\nwraps here. Second sentence of page one is here.",
                              "Page two starts with this sentence about results."])
    assert pages[0].pages == (1,) and pages[-1].pages == (2,)
    assert "line wraps here" in doc  # a layout line break became a space
