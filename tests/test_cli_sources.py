"""`vectree sources list|add|remove`, `papers remove|restore`, `page`, and doc-id prefixes on every
command that takes one, against a real store built through the Dagster pipeline.

The tests share one store and run in file order: the read-only ones first, then the removals.
"""

from __future__ import annotations

import contextlib
import json

import pytest
from click.testing import CliRunner

from tests import pdfmaker
from vectree.cli import main
from vectree.pipelines.refresh import instance_for
from vectree.retrieval.search import read_entries
from vectree.retrieval.store import Store


def run(*args, ok=True):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sources")
    a, b = tmp / "folder-a", tmp / "folder-b"
    a.mkdir()
    b.mkdir()
    pdfmaker.write_paper(a / "soil-moisture.pdf", "Soil Moisture Retrieval from Radar", pdfmaker.GOOD_SECTIONS)
    pdfmaker.write_paper(a / "soil-texture.pdf", "Soil Texture Mapping with Spectroscopy", pdfmaker.GOOD_SECTIONS)
    pdfmaker.write_paper(b / "glacier.pdf", "Glacier Melt Dynamics in Alpine Basins", pdfmaker.GOOD_SECTIONS)
    store_root = tmp / "store"
    out = run("sources", "add", a, b, "--store", store_root)
    assert "3 new papers" in out.output
    return a, b, Store(store_root)


def ids(store, prefix):
    return [r["doc_id"] for r in store.read_catalog() if r["doc_id"].startswith(prefix)]


def test_sources_list_shows_each_folder_with_its_paper_count(corpus_store):
    a, b, store = corpus_store
    out = run("sources", "--store", store.root).output  # `list` is the default
    assert str(a.resolve()) in out and str(b.resolve()) in out
    lines = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.splitlines()
             if line.startswith("│") and "folder-" in line}
    assert lines == {str(a.resolve()): "2", str(b.resolve()): "1"}
    assert run("sources", "list", "--store", store.root).output == out


def test_every_doc_id_command_takes_a_unique_prefix(corpus_store):
    _, _, store = corpus_store
    [glacier] = ids(store, "glacier")
    out = run("tree", "glac", "--store", store.root).output
    assert f"{glacier}:" in out and "Introduction" in out
    out = run("page", "glac", "1", "--store", store.root).output
    assert f"{glacier} p.1" in out and "Glacier Melt Dynamics" in out
    out = run("ask", "How fast do alpine glaciers melt?", "--paper", "glac", "--json", "--store", store.root).output
    assert json.loads(out)["trace"]["steps"][0]["arguments"]["doc_id"] == glacier


@pytest.mark.parametrize("command", [["tree", "soil"], ["page", "soil", "1"], ["papers", "remove", "soil"],
                                     ["ask", "anything", "--paper", "soil"]])
def test_an_ambiguous_prefix_lists_the_candidates(corpus_store, command):
    _, _, store = corpus_store
    out = run(*command, "--store", store.root, ok=False)
    assert out.exit_code != 0
    assert "ambiguous" in out.output
    for doc_id in ids(store, "soil"):
        assert doc_id in out.output
    assert len(store.read_catalog()) == 3  # nothing was removed


def test_an_unknown_id_suggests_close_titles(corpus_store):
    _, _, store = corpus_store
    [glacier] = ids(store, "glacier")
    out = run("tree", "glaciers", "--store", store.root, ok=False)
    assert out.exit_code != 0 and "did you mean" in out.output and glacier in out.output
    out = run("page", "alpine basins", "1", "--store", store.root, ok=False)
    assert "did you mean" in out.output and glacier in out.output
    out = run("page", "glac", "99", "--store", store.root, ok=False)
    assert out.exit_code != 0 and "no page 99" in out.output


@contextlib.contextmanager
def running_service(store):
    """``vectree serve`` on a free loopback port over ``store``: yields its URL, stops it after."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    server = subprocess.Popen([sys.executable, "-m", "vectree.cli", "serve", "--port", str(port), "--store",
                               str(store.root)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=5)
                break
            except OSError:
                assert time.time() < deadline, "vectree serve did not start"
                time.sleep(1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def cli_through_service(url: str, *args: str) -> tuple[str, list[str]]:
    """``vectree ARGS`` in a fresh process with ``VECTREE_SERVICE_URL=url``: its stdout, and which
    of torch, sentence_transformers, lancedb and tantivy it imported (none, when the service did
    the work)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    probe = ("import json, sys\nfrom vectree.cli import main\n"
             "main(sys.argv[1:], standalone_mode=False)\n"
             "print('MODELS=' + json.dumps(sorted(m for m in ('torch', 'sentence_transformers', 'lancedb', "
             "'tantivy') if m in sys.modules)))")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "VECTREE_SERVICE_URL": url}
    proc = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    body, models = proc.stdout.rsplit("MODELS=", 1)
    return body, json.loads(models)


def test_ask_uses_a_running_service_and_loads_no_model_itself(corpus_store):
    _, _, store = corpus_store
    [glacier] = ids(store, "glacier")
    question = "How fast do alpine glaciers melt?"
    local = json.loads(run("ask", question, "--paper", glacier, "--json", "--store", store.root).output)
    with running_service(store) as url:
        body, models = cli_through_service(url, "ask", question, "--paper", glacier, "--json")
        assert models == []
        remote = json.loads(body)
        assert (remote["answer"], remote["citations"]) == (local["answer"], local["citations"])
        out = run("ask", question, "--paper", "glac", "--service", url + "/", "--store", store.root)
        assert "A:" in out.output and glacier in out.output
    out = run("ask", question, "--service", url, ok=False)
    assert out.exit_code != 0 and "no vectree service at" in out.output


def test_search_uses_a_running_service_with_the_same_output_and_loads_no_model_itself(corpus_store):
    _, _, store = corpus_store
    query = "soil moisture radar"
    local_json = json.loads(run("search", query, "--json", "--store", store.root).output)
    local_table = run("search", query, "--store", store.root).output
    with running_service(store) as url:
        body, models = cli_through_service(url, "search", query, "--json")
        assert models == []  # no model, no index opened in the command's process
        remote = json.loads(body)
        assert [r["doc_id"] for r in remote] == [r["doc_id"] for r in local_json]
        assert [r["matched_sections"] for r in remote] == [r["matched_sections"] for r in local_json]
        assert [r["score"] for r in remote] == pytest.approx([r["score"] for r in local_json], abs=1e-4)
        table = run("search", query, "--service", url, "--store", store.root).output

        def rows(out):  # the table without its caption (timing, snapshot id)
            return [line for line in out.splitlines() if line.startswith(("│", "┃"))]

        assert rows(table) == rows(local_table) and f"service {url}" in " ".join(table.split())  # caption may wrap
    out = run("search", query, "--service", url, ok=False)
    assert out.exit_code != 0 and "no vectree service at" in out.output
    assert len(out.output.strip().splitlines()) == 1


def _artefacts(store, doc_id):
    paths = store.per_paper_paths(doc_id)
    return [paths[name] for name in ("record", "pages", "pdf", "tree", "passages") if paths[name].exists()]


def test_papers_remove_drops_one_paper_from_every_artefact_and_restore_brings_it_back(corpus_store):
    a, _, store = corpus_store
    [moisture] = ids(store, "soil-moisture")
    assert len(_artefacts(store, moisture)) == 5  # record, pages, pdf, tree, passages
    out = run("papers", "remove", "soil-m", "--store", store.root).output
    assert f"removed {moisture}" in out
    assert moisture not in {r["doc_id"] for r in store.read_catalog()}
    assert _artefacts(store, moisture) == []
    assert moisture not in {e.doc_id for e in read_entries(store)}
    assert (a / "soil-moisture.pdf").exists()  # the PDF stays where it is
    assert moisture not in run("papers", "--store", store.root).output
    assert f"removed paper {moisture}" in run("sources", "--store", store.root).output
    # a later ingest of the folder leaves it out
    run("ingest", a, "--store", store.root)
    assert moisture not in {r["doc_id"] for r in store.read_catalog()}
    # the runs of the removal say what started them
    runs = instance_for(store).get_runs()
    assert {r.tags.get("vectree/command") for r in runs} >= {"sources add", "papers remove", "ingest"}
    run("papers", "restore", "soil-m", "--store", store.root)
    assert moisture in {r["doc_id"] for r in store.read_catalog()}
    assert len(_artefacts(store, moisture)) == 5
    assert moisture in {e.doc_id for e in read_entries(store)}


def test_sources_remove_drops_the_folders_papers_everywhere(corpus_store):
    a, b, store = corpus_store
    [glacier] = ids(store, "glacier")
    out = " ".join(run("sources", "remove", b, "--store", store.root).output.split())  # rich wraps lines
    assert "1 paper dropped" in out
    assert glacier not in {r["doc_id"] for r in store.read_catalog()}
    assert _artefacts(store, glacier) == []
    assert glacier not in {e.doc_id for e in read_entries(store)}
    assert str(b.resolve()) not in run("sources", "--store", store.root).output
    assert len(store.read_catalog()) == 2
    out = run("sources", "remove", b, "--store", store.root, ok=False)
    assert out.exit_code != 0 and "is not a source of this store" in out.output
