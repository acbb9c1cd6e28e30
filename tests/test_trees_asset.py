"""The ``section_tree`` Dagster asset, its checks, and ``vectree tree`` (real Dagster, real PDFs,
the LLM only as a loopback server)."""

from __future__ import annotations

import socket

import dagster as dg
import pytest
from click.testing import CliRunner

from vectree.assets.ingest import corpus_manifest, paper_pages
from vectree.assets.llm_resource import LLMResource
from vectree.assets.partitions import papers_partitions
from vectree.assets.trees import section_tree
from vectree.pipelines.refresh import QUIET_RUN_CONFIG
from vectree.assets.resources import VectreeStore
from vectree.retrieval.trees.schema import TreeNode, check_invariants, indexable_nodes, read_tree
from tests import pdfmaker
from tests.fake_openai import Reply, fake_openai  # noqa: F401  (the fixture)

ASSETS = [corpus_manifest, paper_pages, section_tree]


def materialize(resource, instance, doc_id, *, selection=("paper_pages", "section_tree"), run_config=None):
    config = {**QUIET_RUN_CONFIG, **(run_config or {})}
    return dg.materialize(
        ASSETS, selection=list(selection), partition_key=doc_id, instance=instance,
        # the LLM resource from the settings now (tests set OPENAI_BASE_URL with monkeypatch)
        resources={"vectree": resource, "llm": LLMResource.from_settings()}, run_config=config,
        raise_on_error=False,
    )


def checks_of(result):
    return {c.check_name: c for c in result.get_asset_check_evaluations()}


def tree_metadata(result):
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("section_tree")]
    return event.materialization.metadata


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two good papers, an encrypted one (status failed) and a scan (status no_text), ingested
    and given trees through Dagster, once."""
    folder = tmp_path_factory.mktemp("tree-corpus")
    pdfmaker.write_paper(folder / "glacier.pdf", "Glacier Melt and River Discharge", pdfmaker.GOOD_SECTIONS)
    pdfmaker.write_paper(
        folder / "ice.pdf", "Sea Ice Thickness from Sonar",
        [("1 Introduction", "Sea ice thins every decade."), ("2 Data", "Upward sonar on moorings."),
         ("2.1 Moorings", "Six moorings in the strait."), ("3 Conclusion", "The ice keeps thinning.")],
    )
    pdfmaker.write_encrypted(folder / "locked.pdf")
    pdfmaker.write_scanned(folder / "scan.pdf")
    resource = VectreeStore(store_root=str(tmp_path_factory.mktemp("tree-store")), corpus_dirs=[str(folder)])
    instance = dg.DagsterInstance.ephemeral()
    dg.materialize(ASSETS, selection=["corpus_manifest"], instance=instance,
                   resources={"vectree": resource, "llm": LLMResource()},
                   run_config=QUIET_RUN_CONFIG)
    doc_ids = sorted({r["doc_id"] for r in resource.store.read_manifest()})
    instance.add_dynamic_partitions(papers_partitions.name, doc_ids)
    results = {d: materialize(resource, instance, d) for d in doc_ids}
    by_name = {d.rsplit("-", 1)[0]: d for d in doc_ids}
    return resource, instance, results, by_name


def test_every_paper_gets_a_tree_and_no_run_fails(corpus):
    resource, _, results, by_name = corpus
    store = resource.store
    assert all(r.success for r in results.values())
    for doc_id, result in results.items():
        nodes = read_tree(store, doc_id)
        n_pages = store.read_record(doc_id)["n_pages"]
        assert check_invariants(nodes, n_pages) == []
        checks = checks_of(result)
        assert checks["tree_invariants"].passed and checks["tree_invariants"].severity == dg.AssetCheckSeverity.ERROR
    glacier = read_tree(store, by_name["glacier"])
    assert [n["title"] for n in glacier[1:]] == ["Abstract"] + [h for h, _ in pdfmaker.GOOD_SECTIONS]
    assert all(n["verified"] and n["source"] == "layout" for n in glacier)
    ice = {n["title"]: n for n in read_tree(store, by_name["ice"])}
    assert ice["2.1 Moorings"]["parent_id"] == ice["2 Data"]["node_id"]


def test_materialisation_metadata_says_what_was_built(corpus):
    resource, _, results, by_name = corpus
    meta = tree_metadata(results[by_name["glacier"]])
    assert meta["nodes"].value == 1 + 1 + len(pdfmaker.GOOD_SECTIONS)
    assert meta["verified_fraction"].value == 1.0
    assert meta["source"].value == "layout" and meta["repair_rounds"].value == 0
    assert "3 Results" in meta["tree"].value
    checks = checks_of(results[by_name["glacier"]])
    assert checks["tree_verified"].passed


def test_unreadable_papers_get_a_marker_not_a_failure(corpus):
    resource, _, results, by_name = corpus
    store = resource.store
    assert read_tree(store, by_name["locked"]) == []  # failed: no pages, empty marker file
    scan = read_tree(store, by_name["scan"])  # no_text: pages exist, root only
    assert len(scan) == 1 and not scan[0]["verified"] and "no_text" in scan[0]["verify_note"]
    assert indexable_nodes(scan) == []
    for name in ("locked", "scan"):
        checks = checks_of(results[by_name[name]])
        assert checks["tree_invariants"].passed and checks["tree_verified"].passed
        assert tree_metadata(results[by_name[name]])["paper_status"].value != "ok"


def test_invariant_check_fails_with_error_on_a_broken_tree(corpus, monkeypatch):
    resource, instance, _, by_name = corpus
    doc_id = by_name["glacier"]
    store = resource.store
    import vectree.assets.trees as trees_asset
    from vectree.retrieval.trees.build import build_tree as real_build
    from vectree.retrieval.trees.schema import write_tree

    def broken_build(store_, doc_id_, **kw):
        result = real_build(store_, doc_id_, **kw)
        nodes = [dict(n) for n in result.nodes]
        nodes[2]["page_end"] = 99  # beyond the paper
        write_tree(store_, doc_id_, [TreeNode(**n) for n in nodes])
        return result

    monkeypatch.setattr(trees_asset, "build_tree", broken_build)
    try:
        result = materialize(resource, instance, doc_id, selection=("section_tree",))
        check = checks_of(result)["tree_invariants"]
        assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
        assert "outside" in str(check.metadata["problems"].value)
    finally:
        monkeypatch.undo()
        materialize(resource, instance, doc_id, selection=("section_tree",))  # leave a sound tree behind
    assert check_invariants(read_tree(store, doc_id), store.read_record(doc_id)["n_pages"]) == []


def test_llm_is_used_when_configured_and_low_verification_warns(corpus, fake_openai, monkeypatch):
    resource, instance, _, by_name = corpus
    doc_id = by_name["glacier"]
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("VECTREE_LLM_MODEL", "fake-model")
    monkeypatch.setenv("VECTREE_LLM_TIMEOUT", "5")
    sections = [{"title": h, "level": 1, "page_start": 1, "page_end": 1, "summary": body} for h, body in pdfmaker.GOOD_SECTIONS]
    invented = [{"title": f"{i} Invented Heading {i}", "level": 1, "page_start": 1, "page_end": 1, "summary": "x"} for i in (4, 5)]
    fake_openai.script(Reply.json({"sections": sections + invented}))
    result = materialize(resource, instance, doc_id, selection=("section_tree",),
                         run_config={"ops": {"section_tree": {"config": {"repair_rounds": 0}}}})
    assert result.success
    meta = tree_metadata(result)
    assert meta["source"].value == "llm"
    assert meta["verified_fraction"].value == pytest.approx(len(sections) / (len(sections) + 2))
    checks = checks_of(result)
    assert checks["tree_invariants"].passed
    assert not checks["tree_verified"].passed and checks["tree_verified"].severity == dg.AssetCheckSeverity.WARN
    nodes = read_tree(resource.store, doc_id)
    assert {n["title"] for n in nodes if not n["verified"]} == {"4 Invented Heading 4", "5 Invented Heading 5"}
    (req,) = fake_openai.chat_requests
    assert req.body["model"] == "fake-model"


def test_unreachable_endpoint_fails_the_run_with_a_clear_message(corpus, monkeypatch):
    resource, instance, _, by_name = corpus
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("VECTREE_LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("VECTREE_LLM_TIMEOUT", "2")
    result = materialize(resource, instance, by_name["ice"], selection=("section_tree",))
    assert not result.success
    messages = [e.event_specific_data.error.message for e in result.all_events if e.is_step_failure]
    assert any("cannot reach the LLM endpoint" in m and "unset OPENAI_BASE_URL" in m for m in messages), messages


def test_cli_prints_the_tree_with_pages_and_marks(corpus):
    from vectree.cli import main

    resource, _, _, by_name = corpus
    runner = CliRunner()
    out = runner.invoke(main, ["tree", by_name["ice"], "--store", resource.store_root])
    assert out.exit_code == 0, out.output
    assert "Sea Ice Thickness from Sonar" in out.output and "2.1 Moorings" in out.output
    assert "✓" in out.output and "p. 1" in out.output
    prefix = runner.invoke(main, ["tree", "ice", "--store", resource.store_root])  # a unique prefix works
    assert prefix.exit_code == 0 and "2 Data" in prefix.output
    unknown = runner.invoke(main, ["tree", "no-such-paper", "--store", resource.store_root])
    assert unknown.exit_code != 0 and "unknown paper id 'no-such-paper'" in unknown.output
    empty = runner.invoke(main, ["tree", by_name["locked"], "--store", resource.store_root])
    assert empty.exit_code == 0 and "empty tree" in empty.output
