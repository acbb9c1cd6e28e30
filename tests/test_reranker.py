"""The trained reranker + reader: training on a tiny sample, the shipped model, calibration,
abstention and the demo answers through the offline navigator."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from vectree.retrieval.rerank.calibrate import ece, select
from vectree.retrieval.rerank.data import (Example, ReaderData, build_reader_data, eval_article_ids, find_span,
                                           pubmedqa_split)
from vectree.retrieval.rerank.model import ADAPTER_FILE, SHIPPED_DIR, Reader, best_span

SHARED = Path(os.environ.get("VECTREE_TRAINING_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data")


def _tiny_data() -> ReaderData:
    """Two sources' worth of pairs, each question with its evidence and a distractor."""
    facts = [("Who founded Kalomi?", "Kalomi was founded in 1820 by Renzel Tor.", "Renzel Tor"),
             ("What colour is the Vuzel emblem?", "The Vuzel emblem is violet and round.", "violet"),
             ("Where does Marqui lie?", "Marqui lies next to the Solbex river.", "the Solbex river"),
             ("How many towers has Drisol?", "Drisol has seven towers of stone.", "seven"),
             ("Who wrote the Panren song?", "The Panren song was written by Lo Mi.", "Lo Mi"),
             ("When was Norbex built?", "Norbex was built in 1604 near the coast.", "1604")]
    ex = []
    for n, (q, text, answer) in enumerate(facts):
        split = "dev" if n % 3 == 2 else "train"
        span = find_span(text, answer)
        ex.append(Example(q, text, 1, 2, span, f"q{n}", "qasper", split))
        other = facts[(n + 1) % len(facts)][1]
        ex.append(Example(q, other, 0, 3, None, f"q{n}", "qasper", split))
    return ReaderData(ex)


def test_tiny_training_saves_a_small_model_that_loads_back(tmp_path):
    from vectree.retrieval.rerank.train import TrainSettings, fit_and_save

    events = []
    out = fit_and_save(_tiny_data(), tmp_path / "m", TrainSettings(max_steps=3, batch_size=4, eval_every=2,
                                                                   max_len=32, dev_sample=4), progress=events.append)
    folder = tmp_path / "m"
    assert (folder / ADAPTER_FILE).stat().st_size < 10 * 1024 * 1024
    assert {"relevance", "selection", "papers", "evidence", "answer"} <= set(out["calibration"])
    assert [e["step"] for e in events if e["event"] == "step"] == [1, 2, 3]
    assert any(e["event"] == "eval" for e in events)
    card = (folder / "MODEL_CARD.md").read_text()
    assert "vectree reranker train" in card and "Seed 13" in card
    # the saved adapters reproduce the trained model's scores (fp16 storage: close, not equal)
    trained = Reader.load(folder)
    again = Reader.load(folder)
    texts = ["Kalomi was founded in 1820 by Renzel Tor.", "Drisol has seven towers of stone."]
    a = trained.score("Who founded Kalomi?", texts)
    b = again.score("Who founded Kalomi?", texts)
    assert np.allclose(a, b)
    # adapters moved away from zero: the model is not the base one
    lora_b = [v for k, v in trained.net.trainable_state().items() if k.endswith("lora_b")]
    assert lora_b and max(float(v.abs().max()) for v in lora_b) > 0


class _Pair:
    def __init__(self, question, text, rel, group, source="qasper"):
        self.question, self.text, self.rel, self.group, self.source = question, text, rel, group, source


def test_query_adapter_learns_a_mapping_that_carries_over_to_dev_questions(tmp_path):
    """Queries whose vectors are a fixed rotation of their evidence's vectors: the cosine ranks
    evidence no better than chance, the trained adapter learns the rotation from the training
    questions and ranks the held-out dev questions' evidence first."""
    from vectree.retrieval.rerank.qadapter import QueryAdapter
    from vectree.retrieval.rerank.qadapter_train import train_query_adapter

    rng = np.random.default_rng(0)
    dim, n = 16, 120
    rotation, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    texts = rng.normal(size=(n, dim))
    texts /= np.linalg.norm(texts, axis=1, keepdims=True)
    queries = texts @ rotation.T + 0.05 * rng.normal(size=(n, dim))
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    qvec = {f"q{i}": queries[i].astype(np.float32) for i in range(n)}
    tvec = {f"t{i}": texts[i].astype(np.float32) for i in range(n)}
    pairs = {"train": [], "dev": []}
    for i in range(n):
        split = "dev" if i % 4 == 0 else "train"
        pairs[split].append(_Pair(f"q{i}", f"t{i}", 1, f"g{i}"))
        for j in (1, 2, 3):
            pairs[split].append(_Pair(f"q{i}", f"t{(i + j) % n}", 0, f"g{i}"))
    events = []
    adapter, info = train_query_adapter(pairs["train"], pairs["dev"], None, epochs=40, lr=5e-2, decay=0.0,
                                        batch=16, vectors=(qvec, tvec), progress=events.append)
    assert info["dev_mrr_after"]["all"] > info["dev_mrr_before"]["all"] + 0.2
    assert info["dev_mrr_after"]["all"] > 0.9 and 1 <= info["chosen_epoch"] <= 40
    assert [e["epoch"] for e in events] == list(range(1, 41))
    # saved as fp16, loaded back: the same ranking
    adapter.save(tmp_path)
    again = QueryAdapter.load(tmp_path)
    q = queries[:8].astype(np.float32)
    assert np.allclose(adapter(q), again(q), atol=2e-3)
    assert np.allclose(np.linalg.norm(again(q), axis=1), 1.0, atol=1e-5)
    assert QueryAdapter.load(tmp_path / "none") is None
    # a zero matrix is the identity (what an adapter starts from)
    assert np.allclose(QueryAdapter(np.zeros((dim, dim)))(q), q / np.linalg.norm(q, axis=1, keepdims=True))
    with pytest.raises(ValueError, match="dimension"):
        adapter(np.ones(dim + 1, np.float32))


def test_load_refuses_a_folder_without_a_model(tmp_path):
    from vectree.retrieval.rerank.model import RerankerError

    with pytest.raises(RerankerError, match="no reader model"):
        Reader.load(tmp_path)


def test_best_span_respects_order_and_length():
    neg = np.finfo(np.float32).min / 2
    start = np.array([neg, 0.0, 5.0, 0.0, 0.0], np.float32)
    end = np.array([neg, 0.0, 0.0, 1.0, 3.0], np.float32)
    s, e, _ = best_span(start, end)
    assert (s, e) == (2, 4)
    s, e, _ = best_span(start, end, max_tokens=2)
    assert (s, e) == (2, 3)


def test_selection_and_ece():
    assert select([0.9, 0.85, 0.2, 0.65], 0.5, 0.3) == [0, 1, 3]
    assert select([0.9, 0.85, 0.2, 0.65], 0.5, 0.1) == [0, 1]
    assert select([0.1, 0.05], 0.5, 0.3) == [0]  # the best is always first
    value, bins = ece(np.array([0.9, 0.9, 0.1, 0.1]), np.array([1, 1, 0, 0]))
    assert value == pytest.approx(0.1) and sum(b["n"] for b in bins) == 4


def test_answer_confidence_reads_the_features_its_map_names():
    from vectree.retrieval.rerank.calibrate import answer_confidence

    # a map fitted on the navigator's named, standardised features ignores the ones it does not name
    cal = {"answer": {"features": ["a", "b"], "coef": [1.0, -1.0], "intercept": 0.5, "mean": [1.0, 0.0],
                      "scale": [2.0, 1.0]}}
    assert answer_confidence({"a": 3.0, "b": 1.0, "unused": 9.0}, cal) == pytest.approx(1 / (1 + np.exp(-0.5)))
    assert answer_confidence({"a": 5.0, "b": 0.0}, cal) > answer_confidence({"a": 3.0, "b": 0.0}, cal)
    # a map of the simulated episodes (no names, no standardisation) reads the three legacy features
    legacy = {"answer": {"coef": [1.0, 2.0, 0.0], "intercept": 0.0}}
    named = {"top_relevance_logit": 1.0, "margin_to_second": -0.5, "answer_type_prob": 0.7}
    assert answer_confidence(named, legacy) == pytest.approx(0.5)
    assert answer_confidence([1.0, -0.5, 0.7], legacy) == pytest.approx(0.5)


def test_the_reranker_refines_the_first_stage_order_instead_of_replacing_it():
    from vectree.retrieval.rerank.apply import fused_order

    # candidates come in first-stage order; the reranker likes the fourth best and the first second
    order = list(fused_order(np.array([0.8, 0.1, 0.2, 0.9, 0.05])))
    assert order[0] == 0, "a first-stage winner the reranker ranks second keeps its place"
    assert order.index(3) < order.index(1), "the reranker's favourite moves up"
    assert sorted(order) == [0, 1, 2, 3, 4]
    # when both stages agree nothing moves; a reranker that reverses the list cannot flip it whole
    assert list(fused_order(np.array([0.9, 0.5, 0.1]))) == [0, 1, 2]
    assert list(fused_order(np.array([0.1, 0.5, 0.9])))[0] == 0  # a tie: the first stage decides


# ---- the shipped model ---------------------------------------------------------------------
needs_shipped = pytest.mark.skipif(not (SHIPPED_DIR / ADAPTER_FILE).exists(), reason="no shipped reader model")


@needs_shipped
def test_shipped_model_is_small_documented_and_ranks_evidence_first():
    size = sum(p.stat().st_size for p in SHIPPED_DIR.iterdir() if p.is_file())
    assert size <= 10 * 1024 * 1024
    card = (SHIPPED_DIR / "MODEL_CARD.md").read_text()
    for needed in ("Reproduce", "vectree reranker train", "Splits", "pubmedqa", "Dev figures", "Never used"):
        assert needed in card
    reader = Reader.load()
    cal = reader.config.calibration
    assert 0 < cal["selection"]["threshold"] < 1 and 0 < cal["evidence"]["abstain_below"] < 1
    q = "What capacity retention did the cells show after 500 cycles?"
    texts = ["After 500 cycles the cells retained 91% of their initial capacity.",
             "The authors thank the funding agency for its support.",
             "Figure 3. Photograph of the test bench."]
    scores = reader.score(q, texts)
    assert scores[0] == scores.max()
    r = reader.read(q, texts[:1])[0]
    # the span head is weak (dev span F1 about .34): check the span's form, not its content
    assert r.span and r.span in texts[0] and len(r.span.split()) <= 24
    assert abs(sum(r.type_probs.values()) - 1) < 1e-4


def test_reading_in_length_sorted_batches_keeps_each_texts_own_reading():
    """The reader batches pairs by token length; every reading still belongs to its own text, in
    the order given, and equals the text read alone."""
    reader = Reader.load()
    q = "What capacity retention did the cells show after 500 cycles?"
    texts = ["After 500 cycles the cells retained 91% of their initial capacity, measured at 25 degrees "
             "Celsius with a C/3 charge and discharge between 2.5 and 4.2 volts in every checkup.",
             "Thanks.",
             "Figure 3. Photograph of the test bench.",
             "The cells retained 91% after 500 cycles.",
             "The authors thank the funding agency for its support of this long-running study."]
    together = reader.read(q, texts, batch=2)
    alone = [reader.read(q, [t])[0] for t in texts]
    assert [r.span for r in together] == [r.span for r in alone]
    assert np.allclose([r.relevance for r in together], [r.relevance for r in alone], atol=1e-4)
    assert all(r.span in t for r, t in zip(together, texts))
    scores = reader.score(q, texts, batch=2)
    assert np.allclose(scores, [r.relevance for r in alone], atol=1e-4)


def test_onnx_runtime_reads_as_torch_does_and_the_export_is_made_once(tmp_path):
    """At query time the reader runs through ONNX Runtime: the network exported once into the
    model cache (reused by the next process while the model is the same) and checked against
    torch; every head reads as torch's does."""
    q = "What capacity retention did the cells show after 500 cycles?"
    texts = ["After 500 cycles the cells retained 91% of their initial capacity at 25 degrees Celsius.",
             "Thanks.",
             "Figure 3. Photograph of the test bench.",
             "The authors thank the funding agency for its support of this long-running study."]
    plain, fast = Reader.load(), Reader.load()
    assert plain.onnx is None
    fast.use_onnx(tmp_path)
    exported = list(tmp_path.glob("reader-*.onnx"))
    assert len(exported) == 1 and exported[0].stat().st_size > 10_000_000
    a, b = plain.read(q, texts, batch=2), fast.read(q, texts, batch=2)
    assert np.allclose([r.relevance for r in a], [r.relevance for r in b], atol=1e-4)
    assert [r.span for r in a] == [r.span for r in b] and [r.span_chars for r in a] == [r.span_chars for r in b]
    assert all(abs(x.type_probs[t] - y.type_probs[t]) < 1e-4 for x, y in zip(a, b) for t in x.type_probs)
    assert np.allclose(plain.score(q, texts), fast.score(q, texts), atol=1e-4)
    # another process with the same model reuses the export; a changed model gets its own
    mtime = exported[0].stat().st_mtime_ns
    again = Reader.load()
    again.use_onnx(tmp_path)
    assert again.onnx.path == exported[0] and exported[0].stat().st_mtime_ns == mtime
    import torch

    changed = Reader.load()
    with torch.no_grad():
        changed.net.relevance.bias += 1.0
    assert changed.onnx_key() != again.onnx_key()


def test_reader_backend_setting_and_the_fallback_to_torch(tmp_path, monkeypatch):
    """``VECTREE_READER_BACKEND``: ``auto`` (the default) reads through ONNX Runtime and falls back
    to torch when the export fails; ``onnx`` then says why; ``torch`` never exports."""
    import vectree.retrieval.rerank.model as model

    monkeypatch.setenv("VECTREE_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(model, "_LOADED", {})
    monkeypatch.setenv("VECTREE_READER_BACKEND", "torch")
    assert model.get_reader().onnx is None and not (tmp_path / "cache").exists()
    monkeypatch.setenv("VECTREE_READER_BACKEND", "auto")
    assert model.get_reader().onnx is not None and list((tmp_path / "cache").glob("reader-*.onnx"))

    import torch

    def broken(*a, **kw):
        raise RuntimeError("exporter broke")

    monkeypatch.setattr(torch.onnx, "export", broken)
    monkeypatch.setenv("VECTREE_MODEL_CACHE", str(tmp_path / "other"))
    monkeypatch.setattr(model, "_LOADED", {})
    reader = model.get_reader()
    assert reader.onnx is None and reader.read("Which cells?", ["The cells were pouch cells."])[0].span
    assert not list((tmp_path / "other").glob("*"))  # nothing half-written is left
    monkeypatch.setenv("VECTREE_READER_BACKEND", "onnx")
    with pytest.raises(model.RerankerError, match="could not export the reader to ONNX.*exporter broke"):
        model.get_reader()
    # a damaged export in the cache: `auto` reads with torch and says why, `onnx` names the file
    monkeypatch.undo()
    monkeypatch.setenv("VECTREE_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(model, "_LOADED", {})
    for f in (tmp_path / "cache").glob("reader-*.onnx"):
        f.write_bytes(b"not a model")
    monkeypatch.setenv("VECTREE_READER_BACKEND", "auto")
    assert model.get_reader().onnx is None
    monkeypatch.setenv("VECTREE_READER_BACKEND", "onnx")
    with pytest.raises(model.RerankerError, match="cannot load .*reader-.*onnx.*delete it"):
        model.get_reader()


def test_reading_memo_reads_each_sentence_once_and_forgets_the_oldest():
    """A paper searched twice for one question (vectree-sprout's navigator) reads each sentence once;
    the readings are the reader's own, in the order asked, and only the last ``size`` are kept."""
    from vectree.retrieval.rerank.apply import ReadingMemo

    reader = Reader.load()
    read: list[str] = []

    class Counting:  # the real reader, counting what it is asked to read
        config = reader.config

        def read(self, question, texts, **kw):
            read.extend(texts)
            return reader.read(question, texts, **kw)

    memo = ReadingMemo(Counting(), size=3)
    q = "What capacity retention did the cells show after 500 cycles?"
    texts = ["After 500 cycles the cells retained 91% of their initial capacity.",
             "The authors thank the funding agency for its support.",
             "Figure 3. Photograph of the test bench."]
    first = memo.read(q, texts[:2])
    again = memo.read(q, [texts[1], texts[0], texts[2]])
    assert read == texts  # the first two once, the third when first asked
    assert again[0] is first[1] and again[1] is first[0]
    direct = reader.read(q, texts)
    assert [r.span for r in again] == [direct[1].span, direct[0].span, direct[2].span]
    # kept, least recently used first: texts[1], texts[0], texts[2]; a new reading evicts texts[1]
    memo.read("another question about capacity?", texts[:1])
    assert len(read) == 4
    memo.read(q, texts[:1])  # still remembered
    assert len(read) == 4
    memo.read(q, texts[1:2])  # forgotten: read again
    assert read[-1] == texts[1] and len(read) == 5


@needs_shipped
def test_toolbox_search_within_paper_is_reranked(demo_store):
    from vectree.agent.tools import Toolbox

    on, off = Toolbox(demo_store), Toolbox(demo_store, reranker="off")
    doc = demo_store.read_catalog()[0]["doc_id"]
    a = on.call("search_within_paper", {"doc_id": doc, "query": "capacity fade", "k": 3}).data["results"]
    b = off.call("search_within_paper", {"doc_id": doc, "query": "capacity fade", "k": 3}).data["results"]
    assert all(0.0 <= h["relevance"] <= 1.0 for h in a) and not any("relevance" in h for h in b)
    # the order is the rank fusion of the hybrid order and the calibrated relevance
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.rerank.apply import PASSAGE_DEPTH, RRF_K, rerank_passages

    passages = on.passages(doc)
    # the query vector both stages compare is the reader's (adapted when the model has an adapter)
    reader = on.reranker()
    qv = reader.adapt_query(get_embedder().encode_query("capacity fade"))
    every = rerank_passages(reader, passages, "capacity fade", qv, PASSAGE_DEPTH)
    hybrid = [h.passage_id for h in passages.rank("capacity fade", qv, PASSAGE_DEPTH)]
    by_prob = [h["i"] for h in sorted(every, key=lambda h: -h["relevance"])]
    fused = {i: 1 / (RRF_K + hybrid.index(i) + 1) + 1 / (RRF_K + by_prob.index(i) + 1) for i in hybrid}
    assert [h["passage"] for h in a] == sorted(fused, key=lambda i: -fused[i])[:3]
    papers = on.call("search_papers", {"query": "lithium plating at low temperature", "k": 3}).data
    assert papers["score"] == "relevance" and all(0.0 <= p["score"] <= 1.0 for p in papers["results"])


@needs_shipped
@pytest.mark.parametrize("question, candidates", [("x", False), ("Who won the football world cup in 2018?", True),
                                                  ("What is the best recipe for sourdough bread?", True)])
def test_nonsense_and_off_corpus_questions_abstain(demo_store, question, candidates):
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox

    answer = OfflineNavigator(Toolbox(demo_store)).answer(question)
    assert answer.abstained, (answer.answer, answer.confidence)
    assert answer.citations == [] and not answer.pages
    assert "no good evidence" in answer.answer
    # an off-corpus question still shows where one might look; "x" has nothing to look for
    assert bool(answer.possibly_relevant) == candidates


@needs_shipped
def test_demo_questions_are_answered_right_with_their_pages(demo_store):
    """The questions `vectree demo` prints: right answer, right paper and page, a confidence."""
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox
    from vectree.cli import DEMO_ASKS
    from vectree.demo import DEMO_QUESTIONS, expected_pages
    from vectree.retrieval.rerank.calibrate import answer_confidence
    from vectree.retrieval.rerank.model import get_reader

    def answer_calibration():
        return get_reader().config.calibration.get("answer") or {}

    def words(text):
        return set(text.lower().replace("?", " ").split())

    # each printed question is a demo question (worded a little differently in the CLI)
    def demo_question(text):
        return max(DEMO_QUESTIONS, key=lambda q: len(words(q["question"]) & words(text)) / len(words(q["question"]) | words(text)))
    slugs = {r["doc_id"]: r["slug"] for r in demo_store.read_catalog()}
    nav = OfflineNavigator(Toolbox(demo_store))
    for text in DEMO_ASKS:
        q = demo_question(text)
        answer = nav.answer(text)
        assert not answer.abstained, answer.answer
        assert q["answer"].lower() in answer.answer.lower(), (answer.answer, q["answer"])
        first = answer.citations[0]
        assert first["valid"] and q["answer"].lower() in first["quote"].lower()
        assert slugs[first["doc_id"]].startswith(q["slug"]) and first["page"] in expected_pages(q)
        assert answer.confidence is not None and 0.0 <= answer.confidence <= 1.0
        # each quote carries its calibrated evidence relevance, the first (the answer's) included
        assert all(0.0 <= c["relevance"] <= 1.0 for c in answer.citations), answer.citations
        # the confidence is the shipped map of what the navigator measured, every feature it names
        named = (answer_calibration().get("features") or [])
        assert set(named) <= set(answer.confidence_features), set(named) - set(answer.confidence_features)
        assert answer.confidence == pytest.approx(answer_confidence(answer.confidence_features,
                                                                    {"answer": answer_calibration()}), abs=1e-3)


# ---- data ----------------------------------------------------------------------------------
needs_shared = pytest.mark.skipif(not (SHARED / "qasper" / "dev-questions").exists() and os.environ.get("CI") != "true",
                                  reason=f"workplace training data not at {SHARED}")


@needs_shared
def test_the_training_set_is_the_same_in_every_process():
    """The mined negatives once depended on PYTHONHASHSEED (a float sum over a set's words, in the
    set's order, broke ties differently): the same command built a different training set."""
    import subprocess
    import sys

    code = ("import hashlib, json, sys; from dataclasses import asdict; from pathlib import Path; "
            "from vectree.retrieval.rerank.data import build_reader_data; "
            "d = build_reader_data(Path(sys.argv[1])); "
            "print(hashlib.sha256('\\n'.join(json.dumps(asdict(e)) for e in d.examples).encode()).hexdigest())")
    digests = set()
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code, str(SHARED)], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed})
        digests.add(out.stdout.strip())
    assert len(digests) == 1


@needs_shared
def test_training_set_never_holds_evaluation_papers_or_held_back_questions():
    data = build_reader_data(SHARED, quick=True)
    eval_ids = eval_article_ids(SHARED)
    assert "1909.00694" in eval_ids  # the QASPER evaluation papers are known to the builder
    qasper_dev = json.loads((SHARED / "qasper/dev-questions/dev_question_dict.json").read_text())
    for e in data.examples:
        if e.source == "qasper":
            assert str(qasper_dev[e.group]["article_id"]) not in eval_ids
        if e.source == "pubmedqa":
            assert pubmedqa_split(e.group[3:]) == e.split and e.split in ("train", "dev")
    assert {e.source for e in data.examples} >= {"qasper", "hotpotqa", "pubmedqa", "ict"}


def test_pubmedqa_evaluation_asks_only_the_held_back_split(tmp_path, monkeypatch):
    from tests.eval_folders import write_pubmedqa
    from vectree.evaluation.loaders import load_benchmark

    folder = write_pubmedqa(tmp_path)
    monkeypatch.delenv("VECTREE_EVAL_PUBMEDQA_SPLIT", raising=False)
    every = [json.loads(x)["pmid"] for x in (folder / "questions.jsonl").read_text().split("\n") if x.strip()]
    held = load_benchmark("pubmedqa", folder)
    assert [q.gold_doc_id for q in held.questions] == [p for p in every if pubmedqa_split(p) == "test"]
    monkeypatch.setenv("VECTREE_EVAL_PUBMEDQA_SPLIT", "everything")
    with pytest.raises(ValueError, match="VECTREE_EVAL_PUBMEDQA_SPLIT"):
        load_benchmark("pubmedqa", folder)


def _write_tiny_shared_layout(root: Path) -> Path:
    """HotpotQA + QASPER (SproutRAG's synthetic writer) and a small PubMedQA in the shared layout."""
    from vectree.retrieval.sprout.data import write_synthetic_training_data

    write_synthetic_training_data(root, n_questions=12, n_articles=6)
    (root / "pubmedqa").mkdir(parents=True, exist_ok=True)
    corpus, questions = [], []
    for i in range(40):
        pmid = str(5000 + i)
        corpus.append({"pmid": pmid, "contexts": [f"Trial {i} tested drug D{i} in {10 + i} patients.",
                                                  f"Drug D{i} lowered pressure in most of them."],
                       "labels": ["METHODS", "RESULTS"], "meshes": []})
        questions.append({"pmid": pmid, "question": f"Does drug D{i} lower pressure?", "long_answer": "",
                          "final_decision": "yes" if i % 2 else "no"})
    (root / "pubmedqa" / "corpus.jsonl").write_text("\n".join(json.dumps(c) for c in corpus))
    (root / "pubmedqa" / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in questions))
    return root


def test_cli_trains_through_dagster_and_says_how_to_make_it_live(tmp_path):
    from click.testing import CliRunner

    from vectree.cli import main

    data = _write_tiny_shared_layout(tmp_path / "data")
    out = tmp_path / "model"
    res = CliRunner().invoke(main, ["reranker", "train", "--quick", "--max-steps", "2", "--data", str(data),
                                    "--out", str(out), "--store", str(tmp_path / "store")])
    assert res.exit_code == 0, res.output
    assert "training data" in res.output and "qasper" in res.output and "pubmedqa" in res.output
    assert f"VECTREE_RERANKER={out}" in res.output and "dev figures" in res.output
    reader = Reader.load(out)
    assert reader.config.training["steps"] == 2 and reader.config.training["quick"]
    # the off-corpus floor is calibrated with the rest (retrieval.rerank.coverage) and printed
    from vectree.retrieval.rerank.coverage import GRID

    floor = reader.config.calibration["coverage"]
    assert floor["min_coverage"] in GRID and set(floor["questions"]) == {"qasper", "pubmedqa", "hotpotqa"}
    assert floor["together"] == 2
    assert "off-corpus floor" in res.output and "Off-corpus floor" in (out / "MODEL_CARD.md").read_text()
    # and the in-paper floor, on the same dev questions with and without their evidence
    inside = reader.config.calibration["passage_coverage"]
    assert inside["min_coverage"] in GRID and inside["window"] == 0
    assert "in-paper floor" in res.output and "In-paper floor" in (out / "MODEL_CARD.md").read_text()
    # and when a second paper is read (retrieval.rerank.second_paper)
    second = reader.config.calibration["second_paper"]
    assert 0 < second["min_share"] <= 1.01 and set(second["questions"]) == {"qasper", "pubmedqa", "hotpotqa"}
    assert "second paper" in res.output and "Second paper" in (out / "MODEL_CARD.md").read_text()
    # the Dagster asset recorded the dev figures as metadata
    from vectree.pipelines.refresh import instance_for
    from vectree.retrieval.store import Store
    import dagster as dg

    event = instance_for(Store(tmp_path / "store")).get_latest_materialization_event(dg.AssetKey("reranker_model"))
    meta = event.asset_materialization.metadata
    assert meta["status"].value == "trained" and "dev_mrr" in meta and "make_live" in meta
    # the shipped recipe has no query adapter; `reranker adapt` trains one and re-calibrates in place
    assert reader.query_adapter is None
    res = CliRunner().invoke(main, ["reranker", "adapt", "--model", str(out), "--data", str(data)])
    assert res.exit_code == 0, res.output
    assert "adapter epoch 3/3" in res.output and "query-adapted" in res.output
    adapted = Reader.load(out)
    assert adapted.query_adapter is not None and "Query adapter" in (out / "MODEL_CARD.md").read_text()
    assert adapted.config.training["query_adapter"]["chosen_epoch"] in (0, 1, 2, 3)


def test_cli_names_missing_training_data(tmp_path):
    from click.testing import CliRunner

    from vectree.cli import main

    res = CliRunner().invoke(main, ["reranker", "train", "--data", str(tmp_path / "nowhere"), "--store",
                                    str(tmp_path / "store")])
    assert res.exit_code != 0 and "dev_question_dict.json" in res.output


def test_abstention_with_no_dev_question_of_the_sources_abstains_least_and_warns_nothing():
    import warnings

    from vectree.retrieval.rerank.calibrate import GRID, _fit_abstention

    dev = [Example(question="q", text="t", rel=1, source="qasper", group="g1", split="dev")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the empty sample once gave "Mean of empty slice" and NaN figures
        threshold, curve = _fit_abstention(dev, [0.7], {"g1": [0]}, ("hotpotqa", "pubmedqa"))
    assert threshold == GRID[0] and curve[0]["questions"] == 0
    assert all(v == v for d in curve for v in d.values())  # no NaN reaches config.json
    threshold, curve = _fit_abstention(dev, [0.7], {"g1": [0]}, None)  # the qasper question counts here
    assert len(curve) == len(GRID)


def test_groupwise_loss_ranks_each_questions_candidates_against_each_other():
    """The experimental groupwise loss (``TrainSettings.listwise``): batches keep a question's
    candidates together, and the loss falls as the positive's logit rises above its own
    question's negatives -- whatever another question's logits are."""
    import random

    import torch

    from vectree.retrieval.rerank.train import _group_batches, _groupwise_loss

    data = _tiny_data().split("train")
    batches = _group_batches(data, 2, random.Random(0))
    assert [len(b) for b in batches] == [4, 4]  # 4 questions of 2 pairs, 2 questions a batch
    for b in batches:
        groups = [e.group for e in b]
        assert all(groups.count(g) == 2 for g in groups)  # never a question split across batches
    batch = batches[0]
    pos = torch.tensor([float(e.rel) for e in batch])
    logits = torch.zeros(len(batch), requires_grad=True)
    loss = _groupwise_loss(logits, batch)
    assert abs(float(loss) - np.log(2)) < 1e-6  # a tie between one positive and one negative
    loss.backward()
    assert torch.all(logits.grad[pos == 1] < 0) and torch.all(logits.grad[pos == 0] > 0)
    better = _groupwise_loss(torch.where(pos == 1, 3.0, -3.0), batch)
    assert float(better) < 0.01
    # a question without a negative adds nothing (nothing to rank it against)
    only_pos = [e for e in batch if e.rel]
    assert float(_groupwise_loss(torch.zeros(len(only_pos)), only_pos)) == 0.0


@pytest.mark.skipif(not (SHARED / "qasper" / "dev-questions").exists(), reason="needs ../shared/data")
def test_paper_examples_pair_evidence_with_the_first_stage_negatives_of_a_whole_paper():
    """The experimental ``qasper-paper`` source: each question's evidence sentences against the
    sentences the hybrid first stage ranks highest in its (dev-built) paper, never an evaluation
    paper, one group per question."""
    from vectree.evaluation.embedcache import cached_embedder
    from vectree.retrieval.rerank import pages
    from vectree.retrieval.rerank.pages import paper_examples

    real = pages.dev_papers
    try:
        pages.dev_papers = lambda data_dir, split="dev", **kw: real(data_dir, split=split, limit=2)
        ex = paper_examples(SHARED, cached_embedder(), negatives=4, splits=("dev",))
    finally:
        pages.dev_papers = real
    papers = real(SHARED, split="dev", limit=2)
    assert ex and {e.source for e in ex} == {"qasper-paper"} and {e.split for e in ex} == {"dev"}
    excluded = eval_article_ids(SHARED)
    assert not any(e.group.split(":")[1] in excluded for e in ex)
    for paper in papers:
        for n, ((question, _), evidence) in enumerate(zip(paper.questions, paper.evidence)):
            group = [e for e in ex if e.group == f"paper:{paper.key}:{n}"]
            gold = {paper.chunks[i] for i in evidence}
            assert [e.question for e in group] == [question] * len(group)
            assert {e.text for e in group if e.rel} <= gold and any(e.rel for e in group)
            negatives = [e for e in group if not e.rel]
            assert 1 <= len(negatives) <= 4 and not any(e.text in gold for e in negatives)
