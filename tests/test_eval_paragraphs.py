"""The `paragraphs` eval system: one unit per paragraph (newline-free run), MiniLM cosine, top-k."""

from __future__ import annotations

import pytest

from vectree.evaluation.systems import REGISTRY, DEFAULT_SYSTEMS, make_system
from vectree.evaluation.systems.base import Doc, RunContext
from vectree.evaluation.systems.paragraphs import paragraph_chunk_table

TEXT = ("  Bees pollinate flowers and make honey in hives.  \n\n"
        "Bread rises because yeast ferments the sugars in the dough.\n"
        "\n   \n"
        "Volcanoes erupt when magma pressure exceeds the strength of the crust.")


def test_units_are_the_trimmed_paragraphs():
    doc = Doc("d", TEXT)
    table = paragraph_chunk_table([doc])
    assert table.texts == [
        "Bees pollinate flowers and make honey in hives.",
        "Bread rises because yeast ferments the sugars in the dough.",
        "Volcanoes erupt when magma pressure exceeds the strength of the crust.",
    ]
    for (span,), text in zip(table.spans, table.texts):
        assert TEXT[span[0]:span[1]] == text


def test_registered_and_ranks_the_right_paragraph_first(tmp_path):
    from vectree.evaluation.embedcache import CachedEmbedder
    from vectree.retrieval.embed import get_embedder

    assert "paragraphs" in REGISTRY and "paragraphs" in DEFAULT_SYSTEMS["sentences"]
    system = make_system("paragraphs", "sentences")
    docs = [Doc("d", TEXT)]
    ctx = RunContext(seed=0, work_dir=tmp_path, _embedder=CachedEmbedder(get_embedder(), tmp_path / "c"), docs=docs)

    class _Bench:
        name = "test"

    system.prepare(_Bench(), ctx, docs)
    hits = system.search("why does dough rise?", 2)
    assert len(hits) == 2 and hits[0].text.startswith("Bread rises")
    with pytest.raises(Exception):
        make_system("no-such-system", "sentences")


def test_paragraphs_bm25_adds_the_words_to_the_cosine(tmp_path):
    """`paragraphs-bm25`: a paragraph that names the query's rare word gains on its cosine rank."""
    from vectree.evaluation.embedcache import CachedEmbedder
    from vectree.evaluation.systems.paragraphs import BM25_SHARE
    from vectree.retrieval.embed import get_embedder

    assert "paragraphs-bm25" in DEFAULT_SYSTEMS["sentences"]
    text = ("Quarterly revenue grew strongly across every region of the company.\n"
            "Zephyrine Holdings changed its board of directors in March 2021.\n"
            "The firm reorganised its leadership team during the year.")
    docs = [Doc("d", text)]
    emb = CachedEmbedder(get_embedder(), tmp_path / "c")

    class _Bench:
        name = "test"

    plain, lexical = make_system("paragraphs", "sentences"), make_system("paragraphs-bm25", "sentences")
    for s in (plain, lexical):
        s.prepare(_Bench(), RunContext(seed=0, work_dir=tmp_path, _embedder=emb, docs=docs), docs)
    query = "When did Zephyrine change its leadership?"
    cos, _ = plain.scores(query, None)
    mixed, _ = lexical.scores(query, None)
    # only the Zephyrine paragraph holds the query's rarest words: it gains the whole share
    assert mixed[1] - cos[1] == pytest.approx(BM25_SHARE, abs=1e-5)
    assert mixed[0] == pytest.approx(cos[0], abs=1e-6)
    assert lexical.search(query, 1)[0].text.startswith("Zephyrine")
