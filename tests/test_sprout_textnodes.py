"""Text nodes: small nodes of a SproutRAG tree carry the MiniLM vector of their own text, and the
search scores every such node of a routed document, not only those on the beam."""

from __future__ import annotations

import numpy as np
import pytest

from vectree.retrieval.sprout.search import SearchParams, search_forest
from vectree.retrieval.sprout.tree import tree_from_merges, with_text_vectors


def _four_leaf_tree(vectors):
    # leaves 0..3; 4 = (0, 1), 5 = (2, 3), 6 = root
    return tree_from_merges(np.array([[0, 1], [2, 3], [4, 5]]), np.asarray(vectors, np.float32))


def test_small_nodes_get_their_text_vector_and_large_ones_keep_the_progressive_mean():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    h = x + 0.1  # stands in for the contextual vectors the tree was built from
    tree = _four_leaf_tree(h)
    seen: list[list[str]] = []

    def encode(texts):
        seen.append(list(texts))
        return np.stack([np.full(6, float(len(t)), np.float32) for t in texts])

    texts = ["a", "bb", "ccc", "dddd"]
    out = with_text_vectors(tree, x, texts, encode, max_chunks=2)
    assert np.allclose(out.vectors[:4], x)  # leaves: the chunks' own vectors, not the contextual ones
    assert seen == [["a bb", "ccc dddd"]]  # inner nodes of <= 2 chunks, texts in document order
    assert np.allclose(out.vectors[4], len("a bb")) and np.allclose(out.vectors[5], len("ccc dddd"))
    assert np.allclose(out.vectors[6], tree.vectors[6])  # the root (4 chunks) keeps its progressive vector
    assert np.array_equal(out.children, tree.children) and out is not tree
    assert with_text_vectors(tree, x, texts, encode, max_chunks=0) is tree
    with pytest.raises(ValueError, match="chunk texts"):
        with_text_vectors(tree, x, texts[:3], encode, max_chunks=2)


def test_scan_chunks_makes_every_small_node_a_candidate():
    q = np.array([1.0, 0.0], np.float32)
    # node 4 (leaves 0, 1) beats node 5 (leaves 2, 3), so a beam of width 1 never visits leaf 2,
    # the best match of all
    v = np.array([[0.6, 0.8], [0.6, 0.8], [1.0, 0.0], [-1.0, 0.0]], np.float32)
    tree = _four_leaf_tree(v)
    tree.vectors[4] = [0.9, 0.1]
    tree.vectors[5] = [0.0, 1.0]
    base = dict(beam_width=1, rerank="cosine", tau=-2.0, route_docs=None, max_sentences=None)
    beam_only = search_forest([tree], q, SearchParams(**base), k=1)
    scanned = search_forest([tree], q, SearchParams(**base, scan_chunks=1), k=1)
    assert beam_only[0].node != 2
    assert scanned[0].node == 2
