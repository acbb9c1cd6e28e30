"""k means k: SproutRAG search returns k distinct nodes, none nested in another, ranked; fewer only
when the searched documents have fewer leaves.  On synthetic trees (every reranker, one and many
documents, routing) and on real DragonBall documents with a model's own trees."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vectree.retrieval.sprout.search import RERANKERS, SearchParams, search_forest
from vectree.retrieval.sprout.tree import build_tree, mutual_attention


def _random_tree(rng, n, dim=8):
    att = rng.random((n, n))
    return build_tree(mutual_attention(att), rng.normal(size=(n, dim)).astype(np.float32),
                      rng.integers(1, 3, size=n).astype(float))


def _check(trees, hits, k):
    total_leaves = sum(t.n_leaves for t in trees)
    assert len(hits) == min(k, total_leaves)
    keys = [(h.doc, h.node) for h in hits]
    assert len(set(keys)) == len(keys)  # distinct
    for i, a in enumerate(hits):
        for b in hits[i + 1:]:
            if a.doc == b.doc:
                t = trees[a.doc]
                assert not t.is_ancestor(a.node, b.node) and not t.is_ancestor(b.node, a.node)


def _scorer(f):
    # prefers small, well-matching nodes (features 0 and 4: node cosine, log sentences)
    return 4 * f[:, 0] - 0.3 * f[:, 4]


@pytest.mark.parametrize("rerank", RERANKERS)
@pytest.mark.parametrize("leaves_only", [False, True])
def test_k_distinct_nodes_on_synthetic_trees(rerank, leaves_only):
    rng = np.random.default_rng(7)
    for n_docs, sizes in ((1, (9,)), (3, (2, 5, 7)), (12, tuple(range(2, 14)))):
        trees = [_random_tree(rng, n) for n in sizes]
        q = rng.normal(size=8).astype(np.float32)
        # a high tau: almost nothing passes, the fill must still reach k
        for tau in (-10.0, 10.0):
            params = SearchParams(rerank=rerank, tau=tau, beam_width=2, route_docs=2, leaves_only=leaves_only)
            for k in (1, 3, 5, 8, sum(sizes), sum(sizes) + 3):
                hits = search_forest(trees, q, params, k, node_scorer=_scorer)
                _check(trees, hits, k)


def test_ranking_is_stable_as_k_grows():
    """The top-j of a search for k nodes are the search for j nodes (one ranking, cut at k)."""
    rng = np.random.default_rng(3)
    trees = [_random_tree(rng, n) for n in (6, 11, 4)]
    q = rng.normal(size=8).astype(np.float32)
    params = SearchParams(rerank="learned", tau=0.0, beam_width=3)
    full = [(h.doc, h.node) for h in search_forest(trees, q, params, 8, node_scorer=_scorer)]
    for j in (1, 3, 5):
        assert [(h.doc, h.node) for h in search_forest(trees, q, params, j, node_scorer=_scorer)] == full[:j]


def test_fewer_only_when_there_are_fewer_leaves():
    rng = np.random.default_rng(1)
    tree = _random_tree(rng, 2)
    hits = search_forest([tree], rng.normal(size=8).astype(np.float32), SearchParams(rerank="cosine"), 5)
    assert sorted(h.node for h in hits) == [0, 1]  # both leaves; the root would nest them


def test_k_distinct_nodes_on_real_documents(shared_data):
    """Real DragonBall finance reports, a model's own trees and reranker: 1, 3 and 5 nodes."""
    from vectree.retrieval.datasets import load_dragonball
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.sprout.chunks import chunk_text
    from vectree.retrieval.sprout.model import SproutModel

    bench = load_dragonball(shared_data / "dragonball")
    with_gold = [q for q in bench.queries if q.gold]
    wanted = list(dict.fromkeys(d for q in with_gold[:6] for d in q.gold_doc_ids))[:3]
    docs = [bench.documents[d] for d in wanted]
    emb = get_embedder()
    torch.manual_seed(0)
    model = SproutModel()
    trees = []
    for d in docs:
        chunks = chunk_text(d.text)
        x = emb.encode_documents([c.text for c in chunks])
        trees.append(model.document_tree(x, [c.paragraph for c in chunks], [c.n_sentences for c in chunks],
                                         texts=[c.text for c in chunks], encode=emb.encode_documents).tree)
    assert all(t.n_leaves > 5 for t in trees)
    queries = [q for q in bench.queries if set(q.gold_doc_ids) & {d.doc_id for d in docs}][:4]
    assert queries
    for q in queries:
        qv = model.encode_query(emb.encode_query(q.text)[None])[0]
        for k in (1, 3, 5):
            _check(trees, model.search(trees, qv, k, query_text=q.text), k)
            _check(trees[:1], model.search(trees[:1], qv, k, query_text=q.text), k)  # within one document
        one, three = model.search(trees, qv, 1, query_text=q.text), model.search(trees, qv, 3, query_text=q.text)
        assert [(h.doc, h.node) for h in three][:1] == [(h.doc, h.node) for h in one]
