"""Within-paper ranking with the paragraph vote (retrieval.passages): each paragraph (a page's
PyMuPDF block) of several sentences is embedded whole at ingest and its sentences take its rank
in a third ranking beside BM25 and the cosine (real MiniLM, real Tantivy, real Parquet)."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

from vectree.retrieval.embed import get_embedder
from vectree.retrieval.passages import (PaperPassages, build_passages, passages_table, stream_passages,
                                        write_passages)
from vectree.retrieval.store import Store

PAGES = [
    {"page_no": 1, "text": "Silicon anodes swell by up to three hundred percent during lithiation. The swelling "
                           "cracks the particles and exposes fresh surface.\n\nWe thank the funding agency."},
    {"page_no": 2, "text": "Capacity fades because lithium is trapped in the interphase. The interphase grows "
                           "on every exposed surface. It consumes electrolyte too.\n\nFigure 2 shows the cell."},
]


def test_paragraphs_of_several_sentences_carry_their_whole_text_vector():
    emb = get_embedder()
    table = build_passages(PAGES, [], emb)
    rows = table.to_pylist()
    assert [r["block"] for r in rows] == [0, 0, 1, 0, 0, 0, 1]
    first = [i for i, r in enumerate(rows) if r["block_vector"] is not None]
    assert first == [0, 3]  # the first passage of each paragraph of several sentences, nothing else
    whole = " ".join(r["text"] for r in rows[3:6])
    assert np.allclose(rows[3]["block_vector"], emb.encode_documents([whole])[0], atol=1e-5)
    pp = PaperPassages(table)
    assert pp.paragraph_members == [[0, 1], [2], [3, 4, 5], [6]]
    # a one-sentence paragraph's vector is its sentence's own
    assert np.allclose(pp.paragraph_vectors[1], pp.vectors[2])


def test_streamed_passages_equal_the_built_ones(tmp_path):
    emb = get_embedder()
    store = Store(tmp_path / "store")
    built = build_passages(PAGES, [], emb)
    stream_passages(store, "p1", [], emb, pages=iter(PAGES), batch=2)  # flushes after every page
    streamed = pq.read_table(store.passages_path("p1"))
    assert streamed.column("block_vector").null_count == built.column("block_vector").null_count == 5
    a = np.asarray([v for v in streamed.column("block_vector").to_pylist() if v is not None])
    b = np.asarray([v for v in built.column("block_vector").to_pylist() if v is not None])
    assert np.allclose(a, b, atol=1e-5)
    write_passages(store, "p2", built)
    assert PaperPassages(pq.read_table(store.passages_path("p2"))).paragraph_members == \
        PaperPassages(streamed).paragraph_members


def test_the_paragraph_vote_lifts_the_sentences_of_the_best_paragraph():
    """Hand-made vectors: each sentence alone is a poor match, the middle paragraph as a whole is
    the best one; BM25 has nothing to match (no query word occurs).  Without the vote the ranking is
    the cosine's; with it the middle paragraph's sentences come first, in their own cosine order."""
    rows = [{"passage_id": i, "page_no": 1, "block": b, "node_id": None, "text": f"sentence number {i}"}
            for i, b in enumerate([0, 0, 1, 1, 1, 2, 2])]
    for i in (0, 2, 5):
        rows[i]["block_text"] = "a paragraph"
    q = np.asarray([1.0, 0, 0, 0], np.float32)
    sentences = np.asarray([[.6, .8, 0, 0], [.5, 0, .866, 0], [.3, .954, 0, 0], [.4, 0, 0, .917],
                            [.2, .98, 0, 0], [.55, .835, 0, 0], [.1, 0, .995, 0]], np.float32)
    paragraphs = np.asarray([[.2, .98, 0, 0], [.95, .312, 0, 0], [.1, 0, .995, 0]], np.float32)
    pp = PaperPassages(passages_table(rows, sentences, paragraphs))
    assert pp.paragraph_ranking(q) == [3, 2, 4, 0, 1, 5, 6]
    plain = [h.passage_id for h in pp.rank("zzz", q, 7, paragraph_weight=0)]
    assert plain == [0, 5, 1, 3, 2, 4, 6]  # by cosine
    voted = [h.passage_id for h in pp.rank("zzz", q, 3)]
    assert voted[0] == 3 and set(voted) >= {2, 3}, voted
    # an old table (no paragraph vectors) ranks as before, whatever the weight
    old = PaperPassages(passages_table(rows, sentences, paragraphs).drop_columns(["block_vector"]))
    assert old.paragraph_vectors is None
    assert [h.passage_id for h in old.rank("zzz", q, 7)] == plain
