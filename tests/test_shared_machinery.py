"""One sentence splitter and one embedding cache for the whole project (issue 15, item 6)."""

from __future__ import annotations

import sqlite3

import numpy as np

from vectree.retrieval.sentences import split_sentences as sentence_spans

TEXT = ("We follow Smith et al. 2020 and measure at 3.5 mV.\nResults in Fig. 3 show a 12% gain, "
        "e.g. for the U.S. data-\nset. The cells were cycled for 600 days. See Tab. 2 for the rest. Capacity fell.")
FOLDED = ("We follow Smith et al. 2020 and measure at 3.5 mV. Results in Fig. 3 show a 12% gain, "
          "e.g. for the U.S. dataset. The cells were cycled for 600 days. See Tab. 2 for the rest. Capacity fell.")


def test_the_offline_tree_extractor_splits_by_the_project_rule():
    from vectree.retrieval.trees.offline import split_sentences

    got = split_sentences(TEXT)
    assert got == [
        "We follow Smith et al. 2020 and measure at 3.5 mV.",
        "Results in Fig. 3 show a 12% gain, e.g. for the U.S. dataset.",
        "The cells were cycled for 600 days.",
        "See Tab. 2 for the rest.",
        "Capacity fell.",
    ]
    # every boundary it draws is one the project's rule draws (it only joins after "Tab."-like ends)
    rule = [FOLDED[a:b] for a, b in sentence_spans(FOLDED)]
    ends = set()
    pos = 0
    for piece in rule:
        pos = FOLDED.index(piece, pos) + len(piece)
        ends.add(pos)
    pos = 0
    for sentence in got:
        pos = FOLDED.index(sentence, pos) + len(sentence)
        assert pos in ends, sentence
    assert split_sentences("  \n ") == []


def test_sprout_training_embeddings_use_the_one_cache(tmp_path):
    from vectree.evaluation.embedcache import CachedEmbedder as EvalCachedEmbedder
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.embedcache import CachedEmbedder
    from vectree.retrieval.sprout.encoder import embed_texts

    assert EvalCachedEmbedder is CachedEmbedder  # evaluation re-uses the library's cache
    inner = get_embedder()
    docs = ["capacity fade at high temperature", "lithium plating when charging cold"]
    vecs = embed_texts(docs, cache_dir=tmp_path)
    qvecs = embed_texts(["what causes plating?"], cache_dir=tmp_path, queries=True)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [f"all-MiniLM-L6-v2-{inner.info.dim}.sqlite"]
    with sqlite3.connect(tmp_path / files[0]) as db:
        assert db.execute("SELECT COUNT(*) FROM vec").fetchone()[0] == 3  # two documents, one query
    np.testing.assert_allclose(vecs, inner.encode_documents(docs), atol=1e-5)
    np.testing.assert_allclose(qvecs, inner.encode_queries(["what causes plating?"]), atol=1e-5)
    # the same file serves the evaluation's wrapper: documents are hits there
    cached = CachedEmbedder(inner, tmp_path)
    np.testing.assert_array_equal(cached.encode_documents(docs), vecs)
    assert (cached.hits, cached.misses) == (2, 0)


def test_recent_query_vectors_are_remembered_not_shared(monkeypatch):
    """`encode_query` answers a repeated question from memory (one question is encoded by Layer 0
    and by each within-paper search) with the vector a fresh encoding gives; the caller's copy is
    its own, and the memory keeps only the most recent queries."""
    import numpy as np

    from vectree.retrieval import embed
    from vectree.retrieval.embed import get_embedder

    emb = get_embedder()
    question = "what limits the cycle life of silicon anodes?"
    fresh = emb.encode_queries([question])[0]
    first = emb.encode_query(question)
    calls = []
    real = emb.encode_queries
    monkeypatch.setattr(emb, "encode_queries", lambda texts: calls.append(list(texts)) or real(texts))
    first[:] = 0.0  # the caller's array: changing it must not change what is remembered
    again = emb.encode_query(question)
    assert calls == [] and np.allclose(again, fresh, atol=1e-6)
    monkeypatch.setattr(embed, "RECENT_QUERIES", 3)
    for n in range(4):
        emb.encode_query(f"question number {n}")
    assert len(emb._recent) == 3 and question not in emb._recent
    calls.clear()
    assert np.allclose(emb.encode_query(question), fresh, atol=1e-6) and calls == [[question]]
