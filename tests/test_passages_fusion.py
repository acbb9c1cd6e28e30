"""Within-paper search with SproutRAG (retrieval.passages.fuse_with_sprout): the paper's passages,
ranked by RRF of BM25, cosine and the SproutRAG nodes holding them (real Tantivy, real MiniLM)."""

from __future__ import annotations

import pyarrow as pa

from vectree.retrieval.embed import get_embedder
from vectree.retrieval.passages import PASSAGES_SCHEMA, PaperPassages, fuse_with_sprout, passages_in_node

SENTENCES = [
    (1, "Silicon anodes swell by up to three hundred percent during lithiation."),
    (1, "The swelling cracks the particles and exposes fresh surface."),
    (2, "The solid electrolyte interphase grows again on every exposed sur-\nface and consumes lithium."),
    (2, "We measured the impedance of every cell after formation."),
    (3, "Capacity fades because lithium is trapped in the growing interphase layer."),
    (3, "The authors thank the funding agency for its support."),
]


def _passages() -> PaperPassages:
    emb = get_embedder()
    texts = [t.replace("-\n", "") for _, t in SENTENCES]
    vecs = emb.encode_documents(texts)
    rows = [{"passage_id": i, "page_no": p, "block": 0, "node_id": f"s{p}", "text": t, "vector": v.tolist()}
            for i, ((p, _), t, v) in enumerate(zip(SENTENCES, texts, vecs))]
    return PaperPassages(pa.Table.from_pylist(rows, schema=PASSAGES_SCHEMA))


def test_without_nodes_it_is_the_passages_ranking():
    pp = _passages()
    q = "why does the capacity fade?"
    qv = get_embedder().encode_query(q)
    plain = pp.rank(q, qv, 4)
    fused = fuse_with_sprout(pp, q, qv, [], 4)
    assert [h.passage_id for h, _ in fused] == [h.passage_id for h in plain]
    assert all(node is None for _, node in fused)


def test_a_node_lifts_the_passages_it_holds():
    pp = _passages()
    q = "what did they measure after formation?"
    qv = get_embedder().encode_query(q)
    plain = [h.passage_id for h in pp.rank(q, qv, 6)]
    # a node holding passages 1 and 2 (page text: line break and hyphen as the PDF has them)
    node = {"node_id": 17, "pages": [1, 2],
            "text": "The swelling cracks the particles and exposes fresh surface. The solid electrolyte "
                    "interphase grows again on every exposed sur- face and consumes lithium."}
    assert passages_in_node(pp, node["text"], node["pages"]) == [1, 2]
    fused = fuse_with_sprout(pp, q, qv, [node], 6)
    order = [h.passage_id for h, _ in fused]
    holders = {h.passage_id: n for h, n in fused}
    assert holders[1] == 17 and holders[2] == 17 and holders[3] is None
    assert sorted(order) == sorted(plain)  # the same passages, re-ranked
    for pid in (1, 2):
        assert order.index(pid) <= plain.index(pid)
    assert order.index(1) < plain.index(1) or order.index(2) < plain.index(2)
    # a node on other pages holds nothing there
    assert passages_in_node(pp, node["text"], [3]) == []


def test_a_vote_of_weight_zero_leaves_the_passages_ranking():
    """A model whose calibration found its nodes add nothing (weight 0) changes no ranking."""
    pp = _passages()
    q = "what did they measure after formation?"
    qv = get_embedder().encode_query(q)
    node = {"node_id": 17, "pages": [1, 2], "text": "The swelling cracks the particles and exposes fresh surface."}
    plain = [h.passage_id for h in pp.rank(q, qv, 6)]
    assert [h.passage_id for h, _ in fuse_with_sprout(pp, q, qv, [node], 6, weight=0.0)] == plain
    assert [h.passage_id for h, _ in fuse_with_sprout(pp, q, qv, [node], 6, weight=1.0)] != plain
    # without an explicit weight the vote weighs what the nodes' model calibrated (carried by the hits)
    assert [h.passage_id for h, _ in fuse_with_sprout(pp, q, qv, [dict(node, vote_weight=0.0)], 6)] == plain
    assert [h.passage_id for h, _ in fuse_with_sprout(pp, q, qv, [dict(node, vote_weight=1.0)], 6)] != plain


def test_per_node_keeps_only_a_nodes_best_passages_in_the_vote():
    pp = _passages()
    q = "why does the capacity fade?"
    qv = get_embedder().encode_query(q)
    node = {"node_id": 3, "pages": [1, 2, 3], "text": " ".join(t.replace("-\n", "") for _, t in SENTENCES)}
    from vectree.retrieval.passages import sprout_ranking

    every, _ = sprout_ranking(pp, qv, [node])
    best, _ = sprout_ranking(pp, qv, [node], per_node=2)
    assert len(every) == len(SENTENCES) and best == every[:2]
