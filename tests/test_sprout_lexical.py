"""SproutRAG's lexical node features: BM25 words of the chunks, node coverage, the legacy models."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vectree.retrieval.sprout.lexical import LEXICAL_FEATURES, LeafTerms, QueryLexicon, analyze, node_lexical
from vectree.retrieval.sprout.tree import tree_from_merges

CHUNKS = [
    "Acme Government Solutions paid a dividend of five million dollars.",
    "The board of directors changed in December 2021.",
    "Revenue grew in the second quarter.",
    "Acme opened an office in Denver.",
]


def _tree():
    # leaves 0..3; node 4 = (0, 1), node 5 = (2, 3), root 6 = (4, 5)
    x = np.eye(4, 8, dtype=np.float32)
    return tree_from_merges(np.array([[0, 1], [2, 3], [4, 5]]), x, np.ones(4))


def test_bm25_of_chunks_matches_the_formula():
    terms = LeafTerms.from_texts(CHUNKS)
    lex = QueryLexicon([terms], "When did the board of directors change?")
    words = lex.words
    assert words == list(dict.fromkeys(analyze("When did the board of directors change?")))
    assert "board" in words and "the" not in words  # stop words dropped, like Layer 0's BM25
    n, avg = 4, terms.lengths.mean()
    expected = 0.0
    for w in words:
        df = sum(w in analyze(c) for c in CHUNKS)
        tf = analyze(CHUNKS[1]).count(w)
        if tf:
            idf = math.log1p((n - df + 0.5) / (df + 0.5))
            expected += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * terms.lengths[1] / avg))
    assert lex[0].bm25[1] == pytest.approx(expected)
    assert int(np.argmax(lex[0].bm25)) == 1
    assert lex[0].bm25[2] == 0.0  # no query word in the revenue sentence


def test_idf_is_shared_by_the_trees_searched_together():
    a, b = LeafTerms.from_texts(CHUNKS[:2]), LeafTerms.from_texts(CHUNKS[2:])
    alone = QueryLexicon([a], "Acme dividend Denver office")
    together = QueryLexicon([a, b], "Acme dividend Denver office")
    # "dividend": in one chunk of two (a alone), in one of four (together): rarer together
    j = together.words.index("dividend")
    assert together.idf[j] > alone.idf[j]
    assert together[1].bm25[1] > 0 and together[1].bm25[0] == 0.0


def test_node_features_cover_the_query_words_of_their_chunks():
    tree = _tree()
    terms = LeafTerms.from_texts(CHUNKS)
    lex = QueryLexicon([terms], "Acme dividend Denver")
    f = node_lexical(tree, lex[0], float(lex[0].bm25.max()))
    assert f.shape == (tree.n_nodes, len(LEXICAL_FEATURES))
    cover = f[:, 0]
    assert cover[tree.root] == pytest.approx(1.0)  # every word is somewhere in the document
    assert cover[2] == 0.0  # "Revenue grew ...": none
    assert 0 < cover[0] < 1 and 0 < cover[3] < 1
    assert cover[4] >= max(cover[0], cover[1]) and cover[5] >= max(cover[2], cover[3])
    best = f[:, 1]
    assert best.max() == pytest.approx(1.0) and best[tree.root] == pytest.approx(1.0)
    assert np.all(f[:, 2] <= f[:, 1] + 1e-9)  # a mean never exceeds the best
    assert np.all(node_lexical(tree, None, 0.0) == 0.0)


def test_a_legacy_model_reads_its_own_columns():
    """Models trained before the lexical features keep their 14 inputs and their results."""
    from vectree.retrieval.sprout.model import PACKAGED_DIR, load_model
    from vectree.retrieval.sprout.search import FEATURE_NAMES, LEGACY_FEATURE_NAMES

    v3 = load_model(PACKAGED_DIR / "sprout-default-v3")
    assert v3.config.feature_space == list(LEGACY_FEATURE_NAMES)
    assert not v3.node_scorer.reads_lexical
    rng = np.random.default_rng(0)
    full = rng.normal(size=(5, len(FEATURE_NAMES))).astype(np.float32)
    fn = v3.scorer_fn()
    changed = full.copy()
    changed[:, len(LEGACY_FEATURE_NAMES):] += 10.0  # lexical columns: ignored by a legacy scorer
    assert np.allclose(fn(full), fn(changed))


def test_a_lexical_model_needs_the_query_words():
    from vectree.retrieval.sprout.model import SproutModel

    model = SproutModel()
    assert model.node_scorer.reads_lexical
    tree = _tree()
    q = np.ones(8, dtype=np.float32)
    with pytest.raises(ValueError, match="query_text"):
        model.search([tree], q, 2)
    with pytest.raises(ValueError, match="chunk words"):
        model.search([tree], q, 2, query_text="Acme")
    SproutModel.attach_terms(tree, CHUNKS)
    assert len(model.search([tree], q, 2, query_text="Acme dividend")) == 2
    # the scorer moves with the lexical columns (masked out: it does not)
    fn, without = model.scorer_fn(), model.node_scorer.numpy_fn(without=LEXICAL_FEATURES)
    from vectree.retrieval.sprout.search import FEATURE_NAMES

    base = np.zeros((1, len(FEATURE_NAMES)), dtype=np.float32)
    moved = base.copy()
    moved[0, FEATURE_NAMES.index("lex_cover")] = 5.0
    assert fn(base)[0] != pytest.approx(fn(moved)[0])
    assert without(base)[0] == pytest.approx(without(moved)[0])
