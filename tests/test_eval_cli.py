"""``vectree eval`` end to end: every benchmark on a tiny folder in the shared layout, the
results.json contract, the report, layout errors, reproducibility, and one small real run."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from vectree.evaluation.runner import LLM_METRICS, METRIC_KEYS
from tests.eval_folders import WRITERS

CONTRACT = {"benchmark", "system", "n", "metrics", "per_item", "config", "data_sha256", "seconds"}
RATIOS = {"evidence_page_precision", "evidence_page_recall", "answer_f1", "recall@1", "recall@3", "recall@5",
          "recall@10", "mrr", "ie@1", "ie@3", "ie@5", "precision@1", "precision@3", "precision@5",
          "evidence_paper_precision", "evidence_paper_recall", "answer_rouge_l"}
SYSTEMS = {
    "qasper_pdf": ["bm25", "dense-rag", "reranked-dense-rag"],
    "qasper": ["bm25", "raptor"],
    "pubmedqa": ["vectree", "vectree-bm25", "vectree-dense", "bm25", "dense-rag"],
    "dragonball": ["flat", "bm25", "raptor", "sprout"],
    "hotpotqa": ["flat", "dense-rag", "fixed-128"],
    "scholarqa_multi": ["vectree", "bm25", "raptor"],
}
TASK = {"qasper_pdf": "paper_qa", "qasper": "paper_qa", "pubmedqa": "routing", "dragonball": "sentences",
        "hotpotqa": "sentences", "scholarqa_multi": "synthesis"}


@pytest.fixture(scope="module", autouse=True)
def isolated_env(tmp_path_factory):
    """An embedding cache and an (empty) store of the module's own; no cross-encoder, no model (the
    shipped reader switched off too, so reranked-dense-rag has nothing to rerank with)."""
    root = tmp_path_factory.mktemp("eval-env")
    saved = {k: os.environ.get(k) for k in ("VECTREE_EVAL_CACHE", "VECTREE_STORE", "VECTREE_CROSS_ENCODER",
                                            "VECTREE_SPROUT_MODEL", "VECTREE_RERANKER")}
    os.environ["VECTREE_RERANKER"] = "off"
    os.environ["VECTREE_EVAL_CACHE"] = str(root / "cache")
    os.environ["VECTREE_STORE"] = str(root / "empty-store")
    os.environ.pop("VECTREE_CROSS_ENCODER", None)
    os.environ.pop("VECTREE_SPROUT_MODEL", None)
    yield root
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval-cli-folders")
    return {name: write(root) for name, write in WRITERS.items()}


def run_eval(*args):
    from vectree.cli import main

    return CliRunner().invoke(main, ["eval", *map(str, args)], catch_exceptions=False)


def _systems_args(names):
    return [x for n in names for x in ("--system", n)]


@pytest.mark.parametrize("bench", list(SYSTEMS))
def test_eval_end_to_end_on_every_benchmark(bench, folders, tmp_path):
    out, report = tmp_path / "results.json", tmp_path / "report" / "report.md"
    res = run_eval(bench, "--data", folders[bench], *_systems_args(SYSTEMS[bench]), "--limit", 3, "--seed", 7,
                   "--out", out, "--report", report, "--work", tmp_path / "work")
    assert res.exit_code == 0, res.output
    results = json.loads(out.read_text())
    assert isinstance(results, list) and [r["system"] for r in results] == SYSTEMS[bench]
    for r in results:
        assert CONTRACT <= set(r), r.keys()
        assert r["benchmark"] == bench and r["config"]["seed"] == 7 and r["config"]["limit"] == 3
        assert r["data_sha256"] and all(len(h) == 64 for h in r["data_sha256"].values())
        if r["status"] != "ok":
            assert r["metrics"] == {} and r["notes"], r  # not run: no metric at all, and a reason
            continue
        m = r["metrics"]
        assert r["n"] == len(r["per_item"]) == min(3, r["config"]["n_questions"])
        assert set(m) <= set(METRIC_KEYS) | {"n_with_evidence", "n_without_gold"}, set(m) - set(METRIC_KEYS)
        for k in RATIOS & set(m):
            assert 0.0 <= m[k] <= 1.0, (k, m[k])
        assert m["latency_p50_ms"] <= m["latency_p95_ms"]
        # no LLM endpoint in tests: the LLM metric is absent (never 0) and the notes say so
        if TASK[bench] in LLM_METRICS:
            assert LLM_METRICS[TASK[bench]] not in m
            assert any("not run" in n and "LLM" in n for n in r["notes"])
    by = {r["system"]: r for r in results}
    text = report.read_text()
    assert f"## {bench}" in text and "| system | n |" in text
    ran = [r["system"] for r in results if r["status"] == "ok"]
    if len(ran) > 1:  # every other system paired with the first, question by question
        assert f"Paired against `{ran[0]}`" in text and f"| {ran[1]} |" in text.split("Paired against")[1]
    assert (report.parent / f"{bench}-latency.png").stat().st_size > 1000
    assert "eta" in res.output or "━" in res.output  # the progress bar ran
    if bench == "qasper_pdf":
        assert by["reranked-dense-rag"]["status"] == "not_run"
        assert "VECTREE_CROSS_ENCODER" in " ".join(by["reranked-dense-rag"]["notes"])
        assert "reranked-dense-rag**: not run" in text
        m = by["bm25"]["metrics"]
        assert m["n_with_evidence"] == 2 and "tokens_layer2" in m and "tokens_layer0" not in m
        # both tiny-paper questions with evidence: BM25 over one-topic pages finds the evidence page
        items = {i["question_id"]: i for i in by["bm25"]["per_item"]}
        assert 2 in items["q-bread"]["cited_pages"] and 2 in items["q-bees"]["cited_pages"]
    if bench == "pubmedqa":
        # one abstract per topic, questions in its words: every retriever routes to it first
        for name in SYSTEMS[bench]:
            assert by[name]["metrics"]["recall@1"] == 1.0, name
        assert "tokens_layer0" in by["vectree"]["metrics"] and "tokens_layer2" in by["bm25"]["metrics"]
    if bench == "dragonball":
        assert by["sprout"]["status"] == "not_run" and "SproutRAG model" in " ".join(by["sprout"]["notes"])
        assert "vectree sprout train" in " ".join(by["sprout"]["notes"])  # says which command trains one
        assert by["flat"]["metrics"]["n_without_gold"] == 1
        # the flat 1-2 sentence chunk holding the revenue sentence comes first
        assert by["flat"]["per_item"][0]["recall@1"] == 1.0
    if bench == "hotpotqa":
        assert by["flat"]["metrics"]["recall@5"] > 0
    if bench == "qasper":
        assert by["raptor"]["metrics"]["n_with_evidence"] == 3
    if bench == "scholarqa_multi":
        assert all(0 < len(i["cited_papers"]) <= 5 for i in by["bm25"]["per_item"])


@pytest.mark.parametrize("bench, systems", [
    ("dragonball", ["sprout", "sprout-uniform", "sprout-leaves", "sprout-embtree", "sprout-token"]),
    ("qasper", ["vectree-sprout", "sprout"]),
])
def test_eval_runs_sprout_with_a_model_folder(bench, systems, folders, tmp_path, monkeypatch):
    """With VECTREE_SPROUT_MODEL set, every SproutRAG variant runs end to end (an untrained model:
    the harness's wiring is under test here, the training has tests of its own)."""
    import torch

    from vectree.retrieval.sprout.model import SproutConfig, SproutModel, save_model

    torch.manual_seed(0)
    monkeypatch.setenv("VECTREE_SPROUT_MODEL",
                       str(save_model(SproutModel(SproutConfig(model_id="eval-test")), tmp_path / "model")))
    out = tmp_path / "results.json"
    res = run_eval(bench, "--data", folders[bench], *_systems_args(systems), "--limit", 3, "--out", out,
                   "--work", tmp_path / "work")
    assert res.exit_code == 0, res.output
    results = json.loads(out.read_text())
    assert [r["system"] for r in results] == systems
    for r in results:
        assert r["status"] == "ok", (r["system"], r["notes"])
        if r["system"] == "vectree-sprout":  # the agent over a store that got the model before ingest
            assert r["config"]["system"]["within_paper"] == "sprout"
            assert r["config"]["system"]["sprout_model_dir"] == str(tmp_path / "model")
        else:
            assert r["config"]["system"]["model_id"] == "eval-test"
            assert any("SproutRAG model `eval-test`" in n for n in r["notes"])  # the report names the model
        m = r["metrics"]
        keys = ("ie@1", "ie@3", "ie@5", "recall@5") if bench == "dragonball" else ("evidence_page_recall", "answer_f1")
        for k in keys:
            assert 0.0 <= m[k] <= 1.0, (r["system"], k)


def test_layout_mismatch_exits_non_zero_and_names_the_file(folders, tmp_path):
    broken = tmp_path / "pubmedqa"
    shutil.copytree(folders["pubmedqa"], broken)
    (broken / "corpus.jsonl").unlink()
    res = run_eval("pubmedqa", "--data", broken, "--system", "bm25", "--out", tmp_path / "r.json")
    assert res.exit_code == 2
    assert "corpus.jsonl" in res.output and "missing" in res.output
    assert not (tmp_path / "r.json").exists()

    (broken / "corpus.jsonl").write_text('{"pmid": "1", "contexts": ["x"]}\n')  # no labels
    res = run_eval("pubmedqa", "--data", broken, "--system", "bm25", "--out", tmp_path / "r.json")
    assert res.exit_code == 2 and "corpus.jsonl: line 1 has no field 'labels'" in res.output


def test_unknown_system_and_benchmark_are_usage_errors(folders, tmp_path):
    res = run_eval("pubmedqa", "--data", folders["pubmedqa"], "--system", "gpt-5", "--out", tmp_path / "r.json")
    assert res.exit_code == 2 and "gpt-5" in res.output
    res = run_eval("squad", "--data", folders["pubmedqa"], "--out", tmp_path / "r.json")
    assert res.exit_code == 2


def test_a_system_that_does_not_apply_is_recorded_as_not_run(folders, tmp_path):
    res = run_eval("hotpotqa", "--data", folders["hotpotqa"], "--system", "vectree-bm25", "--system", "bm25",
                   "--limit", 1, "--out", tmp_path / "r.json")
    assert res.exit_code == 0, res.output
    first, second = json.loads((tmp_path / "r.json").read_text())
    assert first["status"] == "not_run" and "does not answer sentences" in first["notes"][-1]
    assert second["status"] == "ok"


def test_same_command_twice_gives_the_same_retrieval_metrics(folders, tmp_path):
    def once(tag):
        out = tmp_path / f"{tag}.json"
        res = run_eval("hotpotqa", "--data", folders["hotpotqa"], "--system", "raptor", "--system", "bm25",
                       "--seed", 3, "--out", out, "--work", tmp_path / f"work-{tag}")
        assert res.exit_code == 0, res.output
        return json.loads(out.read_text())

    a, b = once("a"), once("b")
    timed = {"latency_p50_ms", "latency_p95_ms", "seconds_per_question"}
    for ra, rb in zip(a, b):
        assert ra["config"] == rb["config"] and ra["data_sha256"] == rb["data_sha256"]
        assert {k: v for k, v in ra["metrics"].items() if k not in timed} == \
            {k: v for k, v in rb["metrics"].items() if k not in timed}
        strip = lambda items: [{k: v for k, v in i.items() if k != "latency_ms"} for i in items]  # noqa: E731
        assert strip(ra["per_item"]) == strip(rb["per_item"])


def test_agent_on_paper_qa_through_the_pipeline(folders, tmp_path):
    """The vectree agent adapter: ingest the PDFs through the pipeline, ask with the paper given."""
    out = tmp_path / "r.json"
    res = run_eval("qasper_pdf", "--data", folders["qasper_pdf"], "--system", "vectree", "--limit", 2,
                   "--out", out, "--work", tmp_path / "work")
    assert res.exit_code == 0, res.output
    (r,) = json.loads(out.read_text())
    if r["status"] == "not_run":
        pytest.skip(f"agent not available here: {r['notes']}")
    assert r["status"] == "ok", r["notes"]
    m = r["metrics"]
    assert {"tokens_layer1", "tokens_layer2", "evidence_page_precision", "answer_f1"} <= set(m)
    for item in r["per_item"]:
        assert item["trace"] and all({"tool", "layer", "tokens"} <= set(s) for s in item["trace"])
        assert set(item["cited_pages"]) <= {1, 2, 3}
