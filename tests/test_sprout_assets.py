"""SproutRAG through Dagster and the CLI: ingest stays fast and skips trees while no model exists;
`vectree sprout train` trains through the assets and rebuilds every paper's Lance tree; retrieval
works from the library (`retrieve_in_paper`) and the CLI."""

from __future__ import annotations

import json
import logging

import dagster as dg
import pytest
import numpy as np
from click.testing import CliRunner

from vectree.assets.sprout import PROGRESS_LOGGER
from vectree.retrieval.sprout.data import write_synthetic_training_data

PAPERS = {
    "anode.pdf": [
        ["Silicon anodes swell by up to three hundred percent during lithiation, which cracks the particles.",
         "The cracks expose fresh surface on which the solid electrolyte interphase grows again.",
         "Repeated growth of the interphase consumes lithium and the capacity fades over cycles."],
        ["We coated the particles with a thin carbon shell to buffer the volume change.",
         "Coated cells kept eighty percent of their capacity after five hundred cycles.",
         "Uncoated cells fell below eighty percent after only one hundred and twenty cycles."],
    ],
    "cathode.pdf": [
        ["Nickel rich cathodes release oxygen at high states of charge.",
         "The released oxygen reacts with the electrolyte and raises the cell temperature.",
         "Thermal runaway starts when the heat cannot leave the cell fast enough."],
        ["A magnesium dopant stabilised the layered structure in our tests.",
         "Doped cathodes released less oxygen and started to self heat twenty degrees later."],
    ],
}


def _write_pdf(path, pages):
    import pymupdf as fitz

    doc = fitz.open()
    for paragraphs in pages:
        page = doc.new_page()
        y = 72
        for sentence_group in [paragraphs]:
            text = " ".join(sentence_group)
            rect = fitz.Rect(72, y, 520, y + 200)
            page.insert_textbox(rect, text, fontsize=11)
            y += 220
    doc.save(path)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sprout-pdfs")
    for name, pages in PAPERS.items():
        _write_pdf(folder / name, pages)
    return folder


@pytest.fixture(scope="module")
def store_without_model(corpus, tmp_path_factory):
    from vectree.cli import run_ingest

    root = tmp_path_factory.mktemp("sprout-store")
    store, report, _ = run_ingest([str(corpus)], str(root), quiet=True)
    assert not report.failed_runs, report.failed_runs
    return store


def _latest(store, key, partition=None):
    from vectree.pipelines.refresh import instance_for

    flt = dg.AssetRecordsFilter(asset_key=dg.AssetKey(key), asset_partitions=[partition] if partition else None)
    records = instance_for(store).fetch_materializations(flt, limit=1, ascending=False).records
    assert records, key
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def test_ingest_does_not_train_and_skips_trees(store_without_model):
    store = store_without_model
    assert _latest(store, "sprout_training_set")["status"] == "not built"
    assert _latest(store, "sprout_model")["status"] == "no model"
    for row in store.papers():
        meta = _latest(store, "sprout_tree", row["doc_id"])
        assert meta["status"] == "skipped" and "vectree sprout train" in meta["reason"]
    assert not (store.sprout_dir / "training_set").exists()
    assert not (store.sprout_dir / "trees").exists()


def test_retrieval_without_a_model_says_how_to_get_one(store_without_model):
    from vectree.retrieval.sprout.model import SproutUnavailableError
    from vectree.retrieval.sprout.papers import retrieve_in_paper, sprout_available
    from vectree.cli import main

    store = store_without_model
    doc_id = store.papers()[0]["doc_id"]
    assert not sprout_available(store, doc_id)
    with pytest.raises(SproutUnavailableError, match="vectree sprout train"):
        retrieve_in_paper(store, doc_id, "capacity fade", 3)
    res = CliRunner().invoke(main, ["sprout", "retrieve", "capacity fade", "--store", str(store.root)])
    assert res.exit_code != 0 and "vectree sprout train" in res.output


def test_missing_training_data_is_a_clear_error(store_without_model, tmp_path):
    import click

    from vectree.commands.sprout import train_through_dagster

    with pytest.raises(click.ClickException, match="training data not found"):
        train_through_dagster(str(store_without_model.root), quick=True, data_dir=str(tmp_path / "nowhere"))


@pytest.fixture(scope="module")
def trained_store(corpus, tmp_path_factory):
    from vectree.cli import run_ingest
    from vectree.commands.sprout import train_through_dagster

    root = tmp_path_factory.mktemp("sprout-trained")
    store, report, _ = run_ingest([str(corpus)], str(root), quiet=True)
    data = write_synthetic_training_data(tmp_path_factory.mktemp("syn"), n_questions=20, n_articles=8)
    lines: list[str] = []
    handler = logging.Handler(level=logging.INFO)
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger(PROGRESS_LOGGER)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        # a tiny synthetic set does not lift dev IE, so the model is made live by force
        # (test_a_model_that_did_not_learn_... covers the default, which keeps the live model)
        out = train_through_dagster(str(root), quick=True, data_dir=str(data), epochs=2, force_live=True)
    finally:
        logger.removeHandler(handler)
    return store, dict(out, progress=lines)


def test_training_reports_progress_while_it_runs(trained_store):
    """The long steps (embedding the training set, each epoch) reach the progress logger the CLI's
    status line listens to, in order."""
    _, out = trained_store
    lines = out["progress"]
    first_set = next(i for i, m in enumerate(lines) if m.startswith("training set:"))
    first_epoch = next(i for i, m in enumerate(lines) if "stage 1 epoch 1" in m)
    assert first_set < first_epoch
    assert any("stage 2" in m for m in lines[first_epoch:])


def test_train_publishes_a_model_and_rebuilds_every_tree(trained_store):
    import lancedb

    from vectree.retrieval.sprout.chunks import chunk_pages
    from vectree.retrieval.sprout.model import current_model_dir

    store, out = trained_store
    folder = current_model_dir(store)
    assert folder is not None and (folder / "model.safetensors").exists()
    meta = _latest(store, "sprout_model")
    assert meta["status"] == "trained" and meta["parameters"] > 0 and meta["base_encoder"] == "all-MiniLM-L6-v2"
    assert "dev_ie_after" in meta and "losses" in meta and meta["training_seconds"] > 0
    assert _latest(store, "sprout_training_set")["status"] == "built"
    doc_ids = [r["doc_id"] for r in store.papers()]
    assert sorted(out["trees"]) == sorted(doc_ids) and not out["failed"]
    for doc_id in doc_ids:
        assert _latest(store, "sprout_tree", doc_id)["status"] == "built"
        path = store.sprout_dir / "trees" / f"{doc_id}.lance"
        assert path.exists()
        rows = lancedb.connect(str(path.parent)).open_table(doc_id).to_arrow().to_pylist()
        _, chunks = chunk_pages(store.read_page_texts(doc_id))
        n = len(chunks)
        assert len(rows) == 2 * n - 1
        by_id = {r["node_id"]: r for r in rows}
        root = [r for r in rows if r["parent"] == -1]
        assert len(root) == 1 and root[0]["depth"] == 0 and root[0]["chunk_ids"] == list(range(n))
        for r in rows:
            assert r["doc_id"] == doc_id and len(r["vector"]) == 384 and r["model_id"] == folder.name
            if r["children"]:
                kids = [by_id[c] for c in r["children"]]
                assert sorted(r["chunk_ids"]) == sorted(kids[0]["chunk_ids"] + kids[1]["chunk_ids"])
                assert all(k["parent"] == r["node_id"] and k["depth"] == r["depth"] + 1 for k in kids)
            else:
                assert r["chunk_ids"] == [r["node_id"]] and r["text"] == chunks[r["node_id"]].text
            assert r["pages"] and all(1 <= p <= 2 for p in r["pages"])
            paras = {chunks[c].paragraph for c in r["chunk_ids"]}
            assert r["paragraph"] == (next(iter(paras)) if len(paras) == 1 else -1)
        # the stored paragraphs come back as the tree's groups (SearchParams.single_paragraph)
        from vectree.retrieval.sprout.papers import read_paper_tree

        tree = read_paper_tree(store, doc_id).tree
        assert tree.groups.tolist() == [c.paragraph for c in chunks]


def test_retrieve_in_paper_and_cli(trained_store):
    from vectree.retrieval.sprout.papers import retrieve_in_paper, retrieve_papers, sprout_available
    from vectree.retrieval.sprout import retrieve_in_paper as from_search
    from vectree.cli import main

    store, _ = trained_store
    by_title = {r["source_path"].rsplit("/", 1)[-1]: r["doc_id"] for r in store.papers()}
    doc_id = by_title["anode.pdf"]
    assert sprout_available(store, doc_id)
    hits = retrieve_in_paper(store, doc_id, "why does the capacity of silicon anodes fade?", k=3)
    assert 1 <= len(hits) <= 3
    for h in hits:
        assert set(h) >= {"node_id", "text", "chunk_ids", "pages", "score"} and h["doc_id"] == doc_id
        assert h["text"] and h["pages"]
    sets = [set(h["chunk_ids"]) for h in hits]
    assert all(a.isdisjoint(b) for i, a in enumerate(sets) for b in sets[i + 1:])  # never nested
    assert from_search(store, doc_id, "why does the capacity of silicon anodes fade?", 3) == hits
    # every hit carries the weight its model's calibration gives the nodes in within-paper search
    from vectree.retrieval.sprout.model import load_current_model

    model = load_current_model(store)
    cal = model.config.within_paper_calibration
    setting = f"{model.config.within_paper_weight}/{model.config.within_paper_per_node or 'all'}"
    assert cal["queries"] > 0 and setting in cal["scores"]
    assert all(h["vote_weight"] == model.config.within_paper_weight
               and h["vote_per_node"] == model.config.within_paper_per_node for h in hits)
    # the stored tree is the tree the model builds (structure, vectors, merge strengths)
    import numpy as np

    from vectree.retrieval.sprout.chunks import chunk_pages
    from vectree.retrieval.sprout.encoder import embed_texts
    from vectree.retrieval.sprout.papers import model_for, read_paper_tree

    stored = read_paper_tree(store, doc_id).tree
    _, chunks = chunk_pages(store.read_page_texts(doc_id))
    fresh = model_for(store).document_tree(embed_texts([c.text for c in chunks]), [c.paragraph for c in chunks],
                                           [c.n_sentences for c in chunks], texts=[c.text for c in chunks],
                                           encode=embed_texts).tree
    assert np.array_equal(stored.children, fresh.children)
    assert np.allclose(stored.vectors, fresh.vectors, atol=1e-5)
    assert np.allclose(stored.strength, fresh.strength) and np.array_equal(stored.weight, fresh.weight)
    across = retrieve_papers(store, "oxygen release and thermal runaway", k=2)
    assert across and across[0]["doc_id"] in by_title.values()
    with pytest.raises(ValueError):
        retrieve_in_paper(store, doc_id, "  ", 3)
    res = CliRunner().invoke(main, ["sprout", "retrieve", "carbon coating", "--store", str(store.root),
                                    "--paper", doc_id, "-k", "2", "--json"])
    assert res.exit_code == 0, res.output
    parsed = json.loads(res.output)
    assert 1 <= len(parsed) <= 2 and parsed[0]["doc_id"] == doc_id
    res = CliRunner().invoke(main, ["sprout", "retrieve", "carbon coating", "--store", str(store.root)])
    assert res.exit_code == 0 and "SproutRAG" in res.output


def test_search_within_paper_uses_sprout_nodes_once_a_model_exists(trained_store, store_without_model):
    """The agent's Layer 1 passage tool: SproutRAG nodes (with pages and the verified section of
    their first page) when the store has a model, plain passages otherwise or when asked."""
    from vectree.agent.tools import Toolbox

    store, _ = trained_store
    doc_id = {r["source_path"].rsplit("/", 1)[-1]: r["doc_id"] for r in store.papers()}["anode.pdf"]
    query = "why does the capacity of silicon anodes fade?"
    res = Toolbox(store, reranker="off").search_within_paper(doc_id, query, k=3).data
    assert res["method"] == "sprout" and 1 <= len(res["results"]) <= 3
    section_ids = {n["node_id"] for n in Toolbox(store).tree(doc_id)}
    # SproutRAG nodes fused with the passages: passages, each with the node that holds it (if any)
    from vectree.retrieval.sprout.papers import retrieve_in_paper

    # the vote's nodes come from the uncapped search at the scorer's own probability (its weight
    # was calibrated on them)
    from vectree.retrieval.passages import SPROUT_VOTE_SEARCH

    assert SPROUT_VOTE_SEARCH == {"gold_cap": None, "logit_scale": 1.0}
    nodes = {n["node_id"]: n for n in retrieve_in_paper(store, doc_id, query, 3, **SPROUT_VOTE_SEARCH)}
    assert any(hit["sprout_node"] is not None for hit in res["results"])
    for hit in res["results"]:
        assert hit["pages"] and hit["page"] == hit["pages"][0] and hit["snippet"]
        assert "sprout_node" in hit
        if hit["sprout_node"] is not None:
            assert hit["page"] in nodes[hit["sprout_node"]]["pages"]
        assert hit["node_id"] is None or hit["node_id"] in section_ids
    assert Toolbox(store, within_paper="passages").search_within_paper(doc_id, query, k=3).data["method"] == "passages"
    plain = store_without_model
    other = plain.papers()[0]["doc_id"]
    assert Toolbox(plain, reranker="off").search_within_paper(other, query, k=3).data["method"] == "passages"


def _output(res) -> str:
    try:
        return res.output + (res.stderr or "")
    except (ValueError, AttributeError):  # stderr not captured apart
        return res.output


def test_train_cli_prints_data_progress_figures_and_the_command_that_makes_it_live(trained_store, tmp_path):
    """`vectree sprout train` as a person runs it: data per source, a bar per phase with its dev
    metric, dev figures before/after, where the model went and how to make it live (--no-live)."""
    from vectree.cli import main
    from vectree.retrieval.sprout.model import current_model_dir

    store, _ = trained_store
    live_before = current_model_dir(store)
    data = write_synthetic_training_data(tmp_path / "syn", n_questions=20, n_articles=8)
    res = CliRunner().invoke(main, ["sprout", "train", "--store", str(store.root), "--quick", "--data", str(data),
                                    "--epochs", "1", "--no-live", "--no-trees", "--no-lexical"])
    text = _output(res)
    assert res.exit_code == 0, text
    assert "training data" in text and "hotpotqa" in text and "qasper" in text
    assert "stage 1: encoder" in text and "dev R-precision" in text and "stage 2: reranker" in text
    assert "dev figures" in text and "->" in text
    # what training chose on dev besides the weights is printed, and written to the card
    assert "single-paragraph nodes only:" in text and "within-paper search: the nodes vote with weight" in text
    assert "greedy's logit scale:" in text
    new = [p for p in (store.sprout_dir / "models").iterdir() if p.is_dir() and p != live_before]
    assert len(new) == 1 and (new[0] / "MODEL_CARD.md").exists()
    assert f"vectree sprout use {new[0].name}" in text and "written to" in text
    assert current_model_dir(store) == live_before  # --no-live kept the live model
    card = (new[0] / "MODEL_CARD.md").read_text()
    assert "licence-compatible" in card and "IE@1" in card and "Benchmark model" not in card
    assert "## Within-paper vote weight" in card and "returned nodes: only those inside one paragraph" in card
    # --no-lexical: the scorer reads cosine features only (the sprout-nolex ablation as a model)
    from vectree.retrieval.sprout.model import load_model

    assert "cosine features only" in card and not load_model(new[0]).node_scorer.reads_lexical
    # the card states the evidence cap the training set (the median evidence of its queries)
    cap = load_model(new[0]).config.search.gold_cap
    assert cap and f"at most {cap:g} relevant sentences" in card
    # ... and the greedy's logit scale training chose on dev
    scale = load_model(new[0]).config.search.logit_scale
    assert f"greedy's logit scale: {scale:g}" in card and "chosen on dev by mean IE" in card


def test_a_model_that_did_not_learn_is_written_but_not_made_live(trained_store, tmp_path, monkeypatch):
    """A run whose best dev IE is not above the untrained model's (a --quick run on a small sample
    can end there) keeps the live model and says how to switch anyway: a worse model never
    replaces a better one without the user asking."""
    import vectree.retrieval.sprout.train as sprout_train
    from vectree.cli import main
    from vectree.retrieval.sprout.model import current_model_dir

    real_train = sprout_train.train

    def train_that_ends_worse(*args, **kwargs):
        result = real_train(*args, **kwargs)
        tr = result.model.config.training
        tr["dev_best"] = {**tr["dev_best"], "mean_ie": round(tr["dev_before"]["mean_ie"] - 0.01, 4)}
        return result

    monkeypatch.setattr(sprout_train, "train", train_that_ends_worse)
    store, _ = trained_store
    live_before = current_model_dir(store)
    data = write_synthetic_training_data(tmp_path / "syn", n_questions=20, n_articles=8)
    res = CliRunner().invoke(main, ["sprout", "train", "--store", str(store.root), "--quick", "--data", str(data),
                                    "--epochs", "1", "--no-trees"])
    text = " ".join(_output(res).split())
    assert res.exit_code == 0, text
    assert current_model_dir(store) == live_before
    new = sorted((p for p in (store.sprout_dir / "models").iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)[-1]
    assert "not made live" in text and f"vectree sprout use {new.name}" in text
    assert _latest(store, "sprout_model")["live"].startswith("kept the live model")


def test_sprout_within_paper_with_the_reader_gives_passages_it_can_answer_from(trained_store):
    """`vectree-sprout` (SproutRAG's nodes in search_within_paper) with the trained reader active:
    the nodes vote in the first stage and the reader reranks passages, so the navigator has
    sentences (and their readings) to answer from.  It used to return bare nodes, and every
    question ended in "the papers hold no passages to read"."""
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox

    store, _ = trained_store
    tb = Toolbox(store, within_paper="sprout")
    assert tb.reranker() is not None
    doc_id = store.papers()[0]["doc_id"]
    query = "why does the capacity of silicon anodes fade?"
    found = tb.search_within_paper(doc_id, query, k=5).data
    assert found["method"] == "sprout"
    assert found["results"] and all("passage" in h and 0 <= h["relevance"] <= 1 for h in found["results"])
    answer = OfflineNavigator(tb).answer(query, paper=doc_id)
    assert "no passages" not in answer.answer
    assert answer.citations or answer.abstained


def test_vectree_sprout_cites_the_plain_passages_pages_and_reads_from_sprouts_order(trained_store):
    """`vectree-sprout` never cites worse pages than `vectree`: with the reader active the navigator
    searches a paper twice (SproutRAG's order, then plain passages via ``passages_only``), cites the
    pages plain passages give, and reads the answer from SproutRAG's order only where its sentence
    lies on one of those pages."""
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox

    store, _ = trained_store
    sprout, plain = Toolbox(store, within_paper="sprout"), Toolbox(store, within_paper="passages")
    doc_id = store.papers()[0]["doc_id"]
    question = "why does the capacity of silicon anodes fade?"
    assert sprout.search_within_paper(doc_id, question, k=5).data["method"] == "sprout"
    forced = sprout.search_within_paper(doc_id, question, k=5, passages_only=True).data
    assert forced["method"] == "passages"
    assert forced == plain.search_within_paper(doc_id, question, k=5).data
    assert sprout.call("search_within_paper", {"doc_id": doc_id, "query": question,
                                               "passages_only": True}).data["method"] == "passages"
    questions = [question, "what coating keeps the anode stable?", "how was the cell tested?",
                 "which electrolyte additive was used?"]
    for paper in [p["doc_id"] for p in store.papers()]:
        for q in questions:
            a, b = OfflineNavigator(sprout).answer(q, paper=paper), OfflineNavigator(plain).answer(q, paper=paper)
            assert a.abstained == b.abstained, q
            if a.abstained:
                continue
            assert set(a.pages) == set(b.pages), (paper, q)
            calls = [(c["tool"], c["arguments"].get("passages_only", False)) for c in a.trace["steps"]
                     if c["tool"] == "search_within_paper"]
            assert calls == [("search_within_paper", False), ("search_within_paper", True)]
            # the answer is quoted from a cited page
            assert a.citations and (a.citations[0]["doc_id"], a.citations[0]["page"]) in set(b.pages)


def test_list_switch_off_and_back_on(trained_store, monkeypatch):
    """Rollback: `vectree sprout list` names the live model and its dev figures; `use none` makes
    search_within_paper use passages, retrieval and the eval system say how to switch back;
    `use ID` switches the model on again and rebuilds the trees."""
    from vectree.agent.tools import Toolbox
    from vectree.cli import main
    from vectree.evaluation.systems import make_system
    from vectree.retrieval.sprout.model import SproutOffError, current_model_dir
    from vectree.retrieval.sprout.papers import retrieve_in_paper

    store, out = trained_store
    root = str(store.root)
    model_id = out["model"].config.model_id
    assert current_model_dir(store).name == model_id
    res = CliRunner().invoke(main, ["sprout", "list", "--store", root, "--json"])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.output)
    live = [m for m in listed["models"] if m["live"]]
    assert [m["model_id"] for m in live] == [model_id] and not listed["switched_off"]
    assert live[0]["dev_ie_after"] is not None and live[0]["sources"] == ["hotpotqa", "qasper"]
    res = CliRunner().invoke(main, ["sprout", "list", "--store", root])
    assert res.exit_code == 0 and model_id in res.output and "vectree sprout use" in res.output

    doc_id = store.papers()[0]["doc_id"]
    query = "why does the capacity of silicon anodes fade?"
    assert Toolbox(store, reranker="off").search_within_paper(doc_id, query, k=3).data["method"] == "sprout"
    res = CliRunner().invoke(main, ["sprout", "use", "none", "--store", root])
    assert res.exit_code == 0 and "switched off" in res.output
    assert current_model_dir(store) is None
    assert Toolbox(store, reranker="off").search_within_paper(doc_id, query, k=3).data["method"] == "passages"
    with pytest.raises(SproutOffError, match="vectree sprout use"):
        retrieve_in_paper(store, doc_id, query, 3)
    monkeypatch.delenv("VECTREE_SPROUT_MODEL", raising=False)
    monkeypatch.setenv("VECTREE_STORE", root)
    reason = make_system("sprout", "sentences").unavailable()
    assert "vectree sprout train" in reason and "vectree sprout use" in reason
    assert json.loads(CliRunner().invoke(main, ["sprout", "list", "--store", root, "--json"]).output)["switched_off"]

    res = CliRunner().invoke(main, ["sprout", "use", "no-such-model", "--store", root])
    assert res.exit_code != 0 and "vectree sprout list" in res.output
    res = CliRunner().invoke(main, ["sprout", "use", model_id, "--store", root])
    assert res.exit_code == 0, res.output
    assert "trees rebuilt for 2 papers" in res.output
    assert current_model_dir(store).name == model_id
    assert make_system("sprout", "sentences").unavailable() is None
    assert Toolbox(store, reranker="off").search_within_paper(doc_id, query, k=3).data["method"] == "sprout"


def test_tree_building_reuses_the_passages_vectors_and_refuses_another_models(trained_store):
    """Ingest runs MiniLM over a sentence once: the tree builder takes the vectors the passages
    asset stored for the chunks that are passages, and its tree is the one it builds alone; vectors
    from another model (here: random ones for the same texts) are detected and not used."""
    from vectree.retrieval.passages import passage_vectors_by_text
    from vectree.retrieval.sprout.papers import build_paper_tree, model_for

    store, _ = trained_store
    model = model_for(store)
    doc_id = store.papers()[0]["doc_id"]
    assert _latest(store, "sprout_tree", doc_id)["reused_vectors"] > 0  # what ingest did
    known = passage_vectors_by_text(store, doc_id)
    assert known and all(v.shape == (384,) for v in known.values())
    alone, stats_alone = build_paper_tree(store, doc_id, model)
    reused, stats = build_paper_tree(store, doc_id, model, known=known)
    assert stats_alone["reused_vectors"] == 0 and 0 < stats["reused_vectors"] <= stats["chunks"]

    def shape(rows):
        return [(r["node_id"], r["parent"], r["children"], r["chunk_ids"]) for r in rows]

    assert shape(reused) == shape(alone)
    assert np.allclose([r["vector"] for r in reused], [r["vector"] for r in alone], atol=1e-4)
    rng = np.random.default_rng(0)
    other = {t: (v := rng.normal(size=384).astype(np.float32)) / np.linalg.norm(v) for t in known}
    foreign, stats_foreign = build_paper_tree(store, doc_id, model, known=other)
    assert stats_foreign["reused_vectors"] == 0 and shape(foreign) == shape(alone)
