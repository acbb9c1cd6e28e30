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
