"""The evaluated systems' building blocks: chunking, BM25 scoping, the embedding cache, RAPTOR's
clustering and extractive summaries, the SproutRAG adapter, and the registry."""

from __future__ import annotations

import os

import numpy as np
import pytest

from vectree.evaluation.sentences import split_sentences
from vectree.evaluation.systems import REGISTRY, NotApplicable, UnknownSystem, make_system, systems_for
from vectree.evaluation.systems.base import Doc, RunContext, SentenceReader, fixed_token_chunks, join_pages, top_k
from tests.eval_folders import TOPICS


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    from vectree.evaluation.embedcache import CachedEmbedder
    from vectree.retrieval.embed import get_embedder

    emb = CachedEmbedder(get_embedder(), tmp_path_factory.mktemp("cache"))
    docs = [Doc(f"d-{t}", text) for t, text in TOPICS.items()]
    return RunContext(seed=5, work_dir=tmp_path_factory.mktemp("work"), _embedder=emb, docs=docs)


class _Bench:
    task = "sentences"
    name = "tiny"


def test_fixed_token_chunks_cover_the_text_in_order(ctx):
    text = " ".join(TOPICS.values())
    spans = fixed_token_chunks(text, ctx.embedder.model.tokenizer, 16)
    assert len(spans) > 3
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a < b <= c for (a, b), (c, _) in zip(spans, spans[1:]))
    n_tokens = len(ctx.embedder.model.tokenizer(text, add_special_tokens=False)["input_ids"])
    assert len(spans) == -(-n_tokens // 16)
    assert fixed_token_chunks("   ", ctx.embedder.model.tokenizer, 16) == []


def test_join_pages_keeps_offsets_and_pages():
    text, starts = join_pages(["line one\nline two", "page two\n\nnew block"])
    assert text == "line one line two\n\npage two\n\nnew block"  # wraps unwrapped, blocks kept
    doc = Doc("p", text, page_starts=starts)
    two = text.index("page two")
    assert doc.pages_of([(0, 5)]) == (1,) and doc.pages_of([(two, two + 4)]) == (2,)
    assert doc.pages_of([(3, two + 2)]) == (1, 2)


def test_top_k_is_stable_on_ties():
    assert top_k(np.array([0.5, 0.9, 0.5, 0.9]), 3).tolist() == [1, 3, 0]


def test_bm25_scope_filter_and_ranking(ctx):
    system = make_system("bm25", "sentences")
    system.prepare(_Bench(), ctx, ctx.docs)
    hits = system.search("waggle dance of honeybees", 3)
    assert hits[0].doc_id == "d-honeybee"
    scoped = system.search("waggle dance of honeybees", 3, scope=["d-volcano", "d-tides"])
    assert all(h.doc_id in {"d-volcano", "d-tides"} for h in scoped)
    assert system.search("!!!", 3) == []


def test_embedding_cache_returns_the_same_vectors_and_counts_hits(tmp_path):
    from vectree.evaluation.embedcache import CachedEmbedder
    from vectree.retrieval.embed import get_embedder

    inner = get_embedder()
    cached = CachedEmbedder(inner, tmp_path)
    texts = [TOPICS["tides"], TOPICS["bakery"], TOPICS["tides"]]
    first = cached.encode_documents(texts)
    assert cached.misses == 3 and cached.hits == 0
    again = CachedEmbedder(inner, tmp_path).encode_documents(texts[:2])  # a new process reads the file
    np.testing.assert_array_equal(first[:2], again)
    np.testing.assert_allclose(first, inner.encode_documents(texts), atol=1e-5)
    assert (tmp_path / f"all-MiniLM-L6-v2-{inner.info.dim}.sqlite").exists()


def test_sentence_reader_answers_from_the_retrieved_units_only(ctx):
    reader = SentenceReader(ctx.docs, ctx.embedder)
    bee = next(d for d in ctx.docs if d.doc_id == "d-honeybee")
    volcano = next(d for d in ctx.docs if d.doc_id == "d-volcano")
    units = [(bee.doc_id, [(0, len(bee.text))]), (volcano.doc_id, [(0, len(volcano.text))])]
    assert "waggle dance" in reader.answer("How do honeybees communicate?", units)
    only_volcano = reader.answer("How do honeybees communicate?", units[1:])
    assert only_volcano in [volcano.text[a:b] for a, b in split_sentences(volcano.text)]
    long = reader.answer("honeybees", units, max_words=30)
    assert len(long.split()) >= 30 and reader.answer("x", []) == ""


def test_raptor_trees_are_seeded_and_summaries_are_source_sentences(ctx):
    from vectree.evaluation.systems.raptor import RaptorSystem, cluster_nodes

    rng = np.random.default_rng(0)
    vecs = np.vstack([rng.normal(0, 0.05, (6, 8)) + 1, rng.normal(0, 0.05, (6, 8)) - 1])
    a, b = cluster_nodes(vecs, seed=1), cluster_nodes(vecs, seed=1)
    assert a == b and sorted(i for g in a for i in g) == list(range(12))
    assert all(set(g) <= set(range(6)) or set(g) <= set(range(6, 12)) for g in a)  # the two blobs never mix
    assert cluster_nodes(vecs[:2], seed=1) == [[0, 1]]

    long_doc = Doc("long", "\n\n".join(TOPICS.values()) * 2)
    system = RaptorSystem(leaf_tokens=24, summary_tokens=40)
    system.prepare(_Bench(), ctx, [long_doc])
    assert system.n_summaries >= 1
    sentences = {long_doc.text[a:b] for a, b in split_sentences(long_doc.text)}
    for row, layer in enumerate(system.layers):
        if layer == 1:  # a summary: its spans are whole source sentences and its text is theirs
            spans = system.table.spans[row]
            assert all(long_doc.text[a:b] in sentences for a, b in spans)
            assert system.table.texts[row] == " ".join(" ".join(long_doc.text[a:b].split()) for a, b in spans)
    hits = system.search("waggle dance", 4)
    assert len(hits) == 4 and hits[0].score >= hits[-1].score
    again = RaptorSystem(leaf_tokens=24, summary_tokens=40)
    again.prepare(_Bench(), ctx, [long_doc])
    assert again.table.texts == system.table.texts


def test_sprout_variants_run_through_the_model_api(ctx, tmp_path, monkeypatch):
    import torch

    from vectree.retrieval.sprout.model import SproutConfig, SproutModel, save_model

    torch.manual_seed(0)
    model = SproutModel(SproutConfig(model_id="untrained-test"))
    monkeypatch.setenv("VECTREE_SPROUT_MODEL", str(save_model(model, tmp_path / "model")))
    docs = [Doc(f"d-{t}", "\n".join([text, TOPICS["tides"]])) for t, text in list(TOPICS.items())[:3]]
    for name in ("sprout", "sprout-uniform", "sprout-leaves", "sprout-embtree", "sprout-token", "sprout-textnodes"):
        system = make_system(name, "sentences")
        assert system.unavailable() is None, name
        system.prepare(_Bench(), ctx, docs)
        hits = system.search("glacier ice cores", 3, scope=[d.doc_id for d in docs])
        assert 1 <= len(hits) <= 3, name
        for h in hits:
            doc = next(d for d in docs if d.doc_id == h.doc_id)
            assert h.text == " ".join(doc.text[a:b] for a, b in h.spans)
        # never a node together with its own descendant: returned spans of one document do not overlap
        by_doc = {}
        for h in hits:
            by_doc.setdefault(h.doc_id, []).extend(h.spans)
        for spans in by_doc.values():
            spans.sort()
            assert all(b <= c for (_, b), (c, _) in zip(spans, spans[1:])), name
        assert system.config()["model_id"] == "untrained-test"
        if name == "sprout-textnodes":  # small inner nodes carry the MiniLM vector of their own text
            tree, units, chunks = system.trees[0], system.units[0], system.chunks[0]
            small = [v for v in range(tree.n_leaves, tree.n_nodes) if tree.size(v) <= 8]
            assert small
            v = small[0]
            own = ctx.embedder.encode_documents([" ".join(chunks[j].text for j in tree.leaves(v))])[0]
            assert np.allclose(units[v], own / np.linalg.norm(own), atol=1e-5)


def test_sprout_without_a_model_says_why(monkeypatch, tmp_path):
    monkeypatch.delenv("VECTREE_SPROUT_MODEL", raising=False)
    monkeypatch.setenv("VECTREE_STORE", str(tmp_path / "no-store"))
    assert "no trained SproutRAG model" in make_system("sprout", "sentences").unavailable()


def test_reranked_needs_a_local_cross_encoder(monkeypatch, tmp_path):
    monkeypatch.delenv("VECTREE_CROSS_ENCODER", raising=False)
    # by default the shipped reader reranks; switched off, a local cross-encoder is needed
    assert make_system("reranked-dense-rag", "routing").unavailable() is None
    monkeypatch.setenv("VECTREE_RERANKER", "off")
    assert "VECTREE_CROSS_ENCODER" in make_system("reranked-dense-rag", "routing").unavailable()
    monkeypatch.setenv("VECTREE_CROSS_ENCODER", str(tmp_path / "missing"))
    assert "does not exist" in make_system("reranked-dense-rag", "routing").unavailable()


def test_registry():
    assert {"bm25", "dense-rag", "reranked-dense-rag", "raptor", "vectree", "sprout", "flat"} <= set(REGISTRY)
    assert "vectree-bm25" in systems_for("routing") and "vectree-bm25" not in systems_for("sentences")
    with pytest.raises(NotApplicable):
        make_system("vectree-dense", "paper_qa")
    with pytest.raises(UnknownSystem):
        make_system("gpt", "routing")
    assert make_system("vectree", "paper_qa").name == "vectree"
    assert type(make_system("vectree", "routing")).__name__ == "Layer0System"
    assert os.environ.get("OPENAI_BASE_URL") is None  # the tests never reach an LLM


def test_every_registered_system_is_built_for_every_task_it_names():
    """A registry row whose factory cannot build its system (a variant without a description, a
    misspelt name) fails here, not halfway through a benchmark run."""
    for name, spec in REGISTRY.items():
        for task in spec.tasks:
            system = make_system(name, task)
            assert system.name == name and system.description, (name, task)
