"""The ``search_index`` Dagster asset (real materialisation, its check) and ``vectree search``."""

from __future__ import annotations

import json

import dagster as dg
import pytest
from click.testing import CliRunner

from vectree.assets.search import search_index
from vectree.assets.resources import VectreeStore
from vectree.retrieval.search import SearchIndex, read_entries
from tests.test_search_corpus import PAPERS, make_store, papers_copy, write_catalog
from vectree.cli import main

PEM = "pem-platinum-aaaaaaaaa4"
CORAL = "coral-bleach-aaaaaaaaa5"


def _materialize(store):
    result = dg.materialize([search_index], resources={"vectree": VectreeStore(store_root=str(store.root))},
                            raise_on_error=True)
    assert result.success
    mat = result.asset_materializations_for_node("search_index")[0]
    checks = result.get_asset_check_evaluations()
    return {k: v.value for k, v in mat.metadata.items()}, checks


@pytest.fixture(scope="module")
def built_store(tmp_path_factory):
    store = make_store(tmp_path_factory.mktemp("pipeline") / "store")
    meta, checks = _materialize(store)
    return store, meta, checks


def test_asset_builds_the_index_and_reports_it(built_store):
    store, meta, checks = built_store
    entries = read_entries(store)
    assert meta["mode"] == "full"
    assert meta["entries"] == len(entries) and meta["papers"] == len(PAPERS)
    assert meta["section_entries"] == sum(e.kind == "section" for e in entries)
    assert meta["total_mib"] > 0 and meta["vector_index"] == "flat"
    assert meta["snapshot"] == SearchIndex.open(store).snapshot_id
    assert [(c.check_name, c.passed) for c in checks] == [("one_paper_entry_per_paper", True)]
    assert checks[0].metadata["ok_papers"].value == len(PAPERS)


def test_asset_rerun_is_incremental(built_store, tmp_path):
    store, first, _ = built_store
    meta, checks = _materialize(store)
    assert meta["mode"] == "unchanged" and meta["snapshot"] == first["snapshot"] and meta["embedded_now"] == 0
    papers = papers_copy()
    del papers[CORAL]
    write_catalog(store, papers)
    meta, checks = _materialize(store)
    assert meta["mode"] == "incremental" and meta["removed"] == [CORAL] and meta["embedded_now"] == 0
    assert all(c.passed for c in checks)
    write_catalog(store, PAPERS)  # restore for the CLI tests
    meta, _ = _materialize(store)
    assert meta["added"] == [CORAL]


def test_cli_search_prints_ranked_papers_with_sections_and_pages(built_store):
    store, _, _ = built_store
    runner = CliRunner()
    out = runner.invoke(main, ["search", "platinum catalyst layer", "-k", "2", "--store", str(store.root)])
    assert out.exit_code == 0, out.output
    assert "Platinum catalyst loading" in out.output
    assert "Catalyst layer fabrication" in out.output and "p. 2" in out.output

    out = runner.invoke(main, ["search", "platinum: (catalyst", "--json", "-k", "3", "--mode", "bm25",
                               "--store", str(store.root)])
    assert out.exit_code == 0, out.output
    results = json.loads(out.output)
    assert results[0]["doc_id"] == PEM and len(results) <= 3
    assert results[0]["matched_sections"][0]["pages"] == [2, 2]


def test_cli_search_without_an_index_says_what_to_do(tmp_path):
    out = CliRunner().invoke(main, ["search", "anything", "--store", str(tmp_path / "empty")])
    assert out.exit_code == 2
    text = " ".join(out.output.split())  # rich wraps long lines
    assert "no search index" in text and "vectree ingest" in text


@pytest.mark.slow
def test_demo_corpus_is_searchable_after_ingest(demo_store):
    """End to end: the demo corpus through the real pipeline, then `vectree search` by a title."""
    papers = demo_store.papers()
    assert papers
    entries = read_entries(demo_store)
    assert {e.doc_id for e in entries if e.kind == "paper"} == {p["doc_id"] for p in papers}
    runner = CliRunner()
    for paper in papers[:3]:
        out = runner.invoke(main, ["search", paper["title"], "--json", "-k", "3", "--store", str(demo_store.root)])
        assert out.exit_code == 0, out.output
        assert paper["doc_id"] in [r["doc_id"] for r in json.loads(out.output)]
