"""A short SproutRAG training run on a synthetic corpus in the shared layout (real MiniLM, real
torch): the loss falls, gradients reach alpha, tau and the encoder, alpha and tau move, dev IE
rises, runs are reproducible, and save/load gives identical retrieval."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from vectree.retrieval.sprout.data import TrainingSet, build_training_set, write_synthetic_training_data
from vectree.retrieval.sprout.model import SproutModel, load_model, save_model
from vectree.retrieval.sprout.train import TrainConfig, _doc_rerank_items, encoder_losses, rerank_losses, train

CFG = dict(epochs=4, rerank_epochs=4, scorer_lr=3e-3, threads=1, seed=3)


@pytest.fixture(scope="module")
def training_set(tmp_path_factory) -> TrainingSet:
    root = write_synthetic_training_data(tmp_path_factory.mktemp("syn-data"), n_questions=40, n_articles=14)
    return build_training_set(root)


@pytest.fixture(scope="module")
def trained(training_set):
    return train(training_set.split("train"), training_set.split("dev"), TrainConfig(**CFG), log=None)


def test_training_set_layout(training_set, tmp_path):
    s = training_set.summary()
    assert {"hotpotqa/train", "qasper/train"} <= set(s)
    assert "hotpotqa/test" not in s  # test questions never enter training or selection
    assert all(x.shape == (d.n, 384) for d, x in zip(training_set.docs, training_set.x))
    again = TrainingSet.load(training_set.save(tmp_path / "ts"))
    assert [d.key for d in again.docs] == [d.key for d in training_set.docs]
    assert all(np.array_equal(a, b) for a, b in zip(again.x, training_set.x))


def test_gradients_reach_alpha_tau_and_the_encoder(training_set):
    model = SproutModel()
    cfg = TrainConfig(**CFG)
    d, x, xq = training_set.docs[0], training_set.x[0], training_set.xq[0]
    losses = encoder_losses(model, torch.from_numpy(x), torch.as_tensor(d.para), d.weights, torch.from_numpy(xq),
                            [q.positives for q in d.queries], cfg)
    losses["loss"].backward()
    assert model.alpha.grad is not None and model.alpha.grad.abs().sum() > 0
    assert model.encoder.layers[0].qkv.weight.grad.abs().sum() > 0
    assert model.encoder.out.weight.grad.abs().sum() > 0  # the contextual residual learns
    item = _doc_rerank_items(model, training_set.where(lambda doc: doc.key == d.key), cfg)[0]
    rerank_losses(model, item, cfg)["loss"].backward()
    assert model.tau.grad is not None and model.tau.grad.abs() > 0
    assert model.node_scorer.net[0].weight.grad.abs().sum() > 0


def test_short_run_learns(trained):
    stage1 = [h for h in trained.history if h["stage"] == 1 and h.get("fold") is None and "loss" in h]
    assert stage1[-1]["loss"] < stage1[0]["loss"]
    stage2 = [h for h in trained.history if h["stage"] == 2]
    assert stage2[-1]["loss"] < stage2[0]["loss"]
    tr = trained.model.config.training
    assert np.abs(np.array(tr["alpha_after"]) - np.array(tr["alpha_before"])).max() > 1e-3
    assert abs(tr["tau_after"] - tr["tau_before"]) > 1e-3
    assert trained.dev_best["mean_ie"] > trained.dev_before["mean_ie"]
    assert tr["n_parameters"] == trained.model.n_parameters() > 0


def test_training_chooses_single_paragraph_nodes_on_dev(training_set):
    """Trained on every node (single_paragraph=False), the restriction is kept only when it raises dev IE."""
    every = train(training_set.split("train"), training_set.split("dev"),
                  TrainConfig(**dict(CFG, epochs=1, rerank_epochs=2), single_paragraph=False), log=None)
    record = every.model.config.training["single_paragraph_dev"]
    assert not record["trained_for"]
    assert record["chosen"] == (record["on"] > record["off"]) == every.model.config.search.single_paragraph
    # the logit scale is chosen after it, starting from the figures of the setting kept
    scales = every.model.config.training["logit_scale_dev"]
    assert scales["dev"]["1"] == (record["on"] if record["chosen"] else record["off"])
    assert every.dev_best["mean_ie"] == scales["dev"][f"{scales['chosen']:g}"]


def test_training_chooses_the_greedy_logit_scale_on_dev(trained, training_set, tmp_path):
    """The scale with the best mean dev IE is kept (the smallest on a tie), saved with the model and
    stated in its card; choosing again on the same dev documents gives the same figures."""
    from vectree.retrieval.sprout.model import model_card
    from vectree.retrieval.sprout.train import LOGIT_SCALES, _DevCache, choose_logit_scale

    model = trained.model
    record = model.config.training["logit_scale_dev"]
    dev = {float(k): v for k, v in record["dev"].items()}
    assert sorted(dev) == sorted(LOGIT_SCALES)
    best = max(dev.values())
    assert record["chosen"] == min(s for s, v in dev.items() if v == best) == model.config.search.logit_scale
    assert trained.dev_best["mean_ie"] == best
    assert "logit scale" in model_card(model)
    again, rerecord = choose_logit_scale(model, _DevCache(model, training_set.split("dev")))
    assert rerecord == record and again["mean_ie"] == best
    loaded = load_model(save_model(model, tmp_path / "m"))
    assert loaded.search_params().logit_scale == record["chosen"]


def test_the_default_reranker_ranks_only_single_paragraph_nodes(trained, training_set):
    """The default recipe trains stage 2 on the nodes inside one paragraph and searches only those."""
    from vectree.retrieval.sprout.train import _doc_rerank_items

    model = trained.model
    assert model.config.search.single_paragraph and model.config.training["single_paragraph_dev"]["trained_for"]
    for d, x, xq in list(zip(training_set.docs, training_set.x, training_set.xq))[:6]:
        tree = model.document_tree(x, d.para, d.weights, texts=d.chunks, encode=training_set.encode).tree
        single = tree.single_group()
        for hit in model.search([tree], model.search_query(xq)[0], 5, query_text=d.queries[0].text) if len(xq) else []:
            assert single[hit.node]
    dev = training_set.split("dev")
    every = _doc_rerank_items(model, dev, TrainConfig(**CFG, single_paragraph=False))
    inside = _doc_rerank_items(model, dev, TrainConfig(**CFG))
    assert sum(i.features.shape[1] for i in inside) < sum(i.features.shape[1] for i in every)


def test_training_is_reproducible(training_set, trained):
    again = train(training_set.split("train"), training_set.split("dev"), TrainConfig(**CFG), log=None)
    a, b = trained.model.state_dict(), again.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_save_and_load_give_identical_retrieval(trained, training_set, tmp_path):
    model = trained.model
    model.config.model_id = "test-model"
    folder = save_model(model, tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["base_encoder"] == "all-MiniLM-L6-v2" and cfg["base_dim"] == 384
    assert (folder / "model.safetensors").stat().st_size > 0
    loaded = load_model(folder)
    for d, x, xq in list(zip(training_set.docs, training_set.x, training_set.xq))[:4]:
        text = {"texts": d.chunks, "encode": training_set.encode}
        t1 = model.document_tree(x, d.para, d.weights, **text).tree
        t2 = loaded.document_tree(x, d.para, d.weights, **text).tree
        assert np.array_equal(t1.children, t2.children) and np.allclose(t1.vectors, t2.vectors)
        if not len(xq):
            continue
        h1 = model.search([t1], model.search_query(xq)[0], 5, query_text=d.queries[0].text)
        h2 = loaded.search([t2], loaded.search_query(xq)[0], 5, query_text=d.queries[0].text)
        assert [(h.node, round(h.score, 6)) for h in h1] == [(h.node, round(h.score, 6)) for h in h2]
    assert loaded.search_params().tau == pytest.approx(model.search_params().tau)
    # the evidence cap is the training queries' median evidence size, and it travels with the model
    from vectree.retrieval.sprout.train import median_evidence

    assert model.config.search.gold_cap == median_evidence(training_set.split("train")) is not None
    assert loaded.search_params().gold_cap == model.config.search.gold_cap


def test_load_refuses_a_different_base_encoder(trained, tmp_path, monkeypatch):
    from vectree.retrieval.embed import EmbedderMismatchError

    folder = save_model(trained.model, tmp_path / "m2")
    monkeypatch.setenv("VECTREE_EMBED_MODEL", "some-other-model")
    with pytest.raises(EmbedderMismatchError):
        load_model(folder)
    with pytest.raises(Exception, match="no SproutRAG model"):
        load_model(tmp_path / "empty")


def test_reranker_reads_only_its_configured_features(tmp_path):
    """A feature left out of ``scorer_features`` cannot move the score (in torch and in the numpy
    copy used at query time), survives a save/load, and an unknown name is refused."""
    from vectree.retrieval.sprout.model import NodeScorer, SproutConfig
    from vectree.retrieval.sprout.search import FEATURE_NAMES

    torch.manual_seed(0)
    used = [f for f in FEATURE_NAMES if f != "node_cos"]
    model = SproutModel(SproutConfig(scorer_features=used))
    scorer = model.node_scorer
    with torch.no_grad():
        scorer.net[0].weight.normal_()  # a non-trivial function of every input column
    feats = torch.randn(6, len(FEATURE_NAMES))
    moved = feats.clone()
    moved[:, FEATURE_NAMES.index("node_cos")] += 5.0
    assert torch.allclose(scorer(feats), scorer(moved))
    fn = scorer.numpy_fn()
    np.testing.assert_allclose(fn(feats.numpy()), fn(moved.numpy()), rtol=1e-6)
    np.testing.assert_allclose(fn(feats.numpy()), scorer(feats).detach().numpy(), rtol=1e-5, atol=1e-6)
    # a used feature does move it
    other = feats.clone()
    other[:, FEATURE_NAMES.index("leaf_max_vs_best")] += 5.0
    assert not torch.allclose(scorer(feats), scorer(other))

    loaded = load_model(save_model(model, tmp_path / "m"), check_embedder=False)
    assert loaded.config.scorer_features == used
    assert torch.allclose(loaded.node_scorer(feats), scorer(feats))
    with pytest.raises(ValueError, match="unknown reranker features"):
        NodeScorer(use=["node_cos", "no_such_feature"])


def test_embedding_reports_progress_and_skips_cached_texts(tmp_path):
    from vectree.retrieval.sprout.encoder import embed_texts

    texts = [f"sentence number {i} about battery ageing" for i in range(7)]
    calls = []
    first = embed_texts(texts, cache_dir=tmp_path, progress=lambda d, t: calls.append((d, t)), batch=3)
    assert calls == [(3, 7), (6, 7), (7, 7)]
    calls.clear()
    again = embed_texts(texts + ["one new sentence"], cache_dir=tmp_path, progress=lambda d, t: calls.append((d, t)),
                        batch=3)
    assert calls == []  # one text to embed is one batch: nothing to report
    np.testing.assert_allclose(again[:7], first, atol=1e-6)


def test_within_paper_weight_is_calibrated_on_dev_documents(trained, training_set):
    """calibrate_sprout_weight ranks every dev question's chunks at each setting of the grid and picks
    the best score, the smallest weight among ties (0 = plain passages unless the nodes help)."""
    from vectree.retrieval.passages import calibrate_sprout_weight

    dev = training_set.split("dev")
    cal = calibrate_sprout_weight(trained.model, dev.docs, dev.x, dev.xq, dev.encode, grid=(0.0, 1.0, 2.0),
                                  per_node_grid=(None, 1), min_chunks=60)
    n = sum(len(d.queries) for d in dev.docs if d.source == "qasper" and d.n >= 2)
    assert cal["queries"] == n > 0
    scores = {key: v["score"] for key, v in cal["scores"].items()}
    assert set(scores) == {"0.0/all", "1.0/all", "1.0/1", "2.0/all", "2.0/1"}
    assert all(0.0 <= v <= 1.0 for v in scores.values())
    best = max(scores.values())
    ties = sorted((float(key.split("/")[0]), key) for key, v in scores.items() if v == best)
    assert cal["weight"] == ties[0][0]
    assert f"{cal['weight']}/{cal['per_node'] or 'all'}" in [key for _, key in ties]
    # no QASPER documents: nothing to calibrate on, weight 0
    none = calibrate_sprout_weight(trained.model, dev.docs, dev.x, dev.xq, dev.encode, sources=("nowhere",))
    assert none["queries"] == 0 and none["weight"] == 0.0


def test_within_paper_weight_is_also_calibrated_with_the_reader_reranking(trained, training_set):
    """With the shipped reader in the loop, every setting's first stage is reranked as the agent's
    search_within_paper does; the "reader" block holds recall among the first and the first 8
    reranked sentences, and its own choice (the best score, the smallest weight among ties)."""
    from vectree.retrieval.passages import READ_CANDIDATES, calibrate_sprout_weight
    from vectree.retrieval.rerank.apply import passage_reranker
    from vectree.retrieval.rerank.model import get_reader

    reader = get_reader()
    assert reader is not None, "the package ships a reader"
    dev = training_set.split("dev")
    calls = []
    rerank = passage_reranker(reader)

    def counting(*args, **kw):
        calls.append(args[1])
        return rerank(*args, **kw)

    counting.model_id = rerank.model_id
    cal = calibrate_sprout_weight(trained.model, dev.docs, dev.x, dev.xq, dev.encode, grid=(0.0, 2.0),
                                  per_node_grid=(None,), min_chunks=60, rerank=counting)
    r = cal["reader"]
    assert r["reader"] == reader.config.model_id and r["candidates"] == READ_CANDIDATES
    assert set(r["scores"]) == {"0.0/all", "2.0/all"}
    assert len(calls) == 2 * cal["queries"] > 0  # every question reranked at every setting
    for v in r["scores"].values():
        assert 0.0 <= v["read_recall@1"] <= v[f"read_recall@{READ_CANDIDATES}"] <= 1.0
        assert v["score"] == round((v["read_recall@1"] + v[f"read_recall@{READ_CANDIDATES}"]) / 2, 4)
    best = max(v["score"] for v in r["scores"].values())
    assert r["weight"] == min(float(k.split("/")[0]) for k, v in r["scores"].items() if v["score"] == best)
    # without a reranker there is no reader block
    assert "reader" not in calibrate_sprout_weight(trained.model, dev.docs, dev.x, dev.xq, dev.encode,
                                                   grid=(0.0,), per_node_grid=(None,), min_chunks=60)

