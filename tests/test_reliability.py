"""Reliability of the store under refreshes: one snapshot per request (the hammer), kill -9 during
the index build, SIGTERM, a second writer, truthful per-artefact status, stable ids.

Every test works on its own copy of one ingested store (ingesting is the slow part), with real
Dagster runs, real Tantivy/LanceDB, HTTP on 127.0.0.1 and the LLM scripted over loopback.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests import pdfmaker
from tests.fake_openai import Reply, fake_openai  # noqa: F401  (the fixture)
from tests.test_service import Served
from vectree.cli import run_ingest
from vectree.retrieval.search import read_entries
from vectree.retrieval.store import Store

REPO = Path(__file__).resolve().parents[1]
TITLES = {
    "glacier": "Glacier Melt Dynamics in Alpine Basins",
    "soil": "Soil Moisture Retrieval from Radar",
    "ice": "River Ice Break-up Forecasting",
    "coral": "Coral Reef Bleaching under Marine Heatwaves",
    "dune": "Sand Dune Migration in Coastal Deserts",
    "peat": "Peatland Carbon Fluxes after Drainage",
    "lake": "Lake Stratification and Oxygen Depletion",
}


def _write(corpus: Path, name: str) -> Path:
    return pdfmaker.write_paper(corpus / f"{name}.pdf", TITLES[name], pdfmaker.GOOD_SECTIONS)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A store with glacier, soil and ice ingested through the real pipeline (built once)."""
    root = tmp_path_factory.mktemp("reliability")
    corpus = root / "corpus"
    corpus.mkdir()
    for name in ("glacier", "soil", "ice"):
        _write(corpus, name)
    store, report, _ = run_ingest([str(corpus)], str(root / "store"), quiet=True)
    assert not report.failed_runs, report.failed_runs
    return root


@pytest.fixture()
def fresh(base, tmp_path):
    """A private copy of the base store and its corpus: ``(store, corpus)``."""
    return pdfmaker.private_store_copy(base, tmp_path)


def _ids(store: Store) -> dict[str, str]:
    """title word -> doc_id in the live snapshot."""
    return {r["doc_id"].split("-")[0]: r["doc_id"] for r in store.view().read_catalog()}


def _assert_consistent(view: Store) -> set[str]:
    """The snapshot's catalog, its index and its per-paper artefacts agree; returns its ok ids."""
    ok = {r["doc_id"] for r in view.read_catalog() if r["status"] == "ok"}
    indexed = {e.doc_id for e in read_entries(view) if e.kind == "paper"}
    assert indexed == ok, (indexed, ok)
    for doc_id in ok:
        assert view.read_page_texts(doc_id)
        assert view.tree_path(doc_id).exists() and view.passages_path(doc_id).exists()
    return ok


def test_store_files_follow_the_umask(base):
    mask = os.umask(0o022)
    os.umask(mask)
    store = base / "store"
    checked = 0
    for path in store.rglob("*"):
        rel = path.relative_to(store)
        if path.is_file() and rel.parts[0] in ("papers", "pages", "pdfs", "trees", "passages", "snapshots") \
                or rel.name in ("docs.parquet", "manifest.parquet", "sources.json", "layout.json"):
            if path.is_file():
                assert path.stat().st_mode & 0o777 == 0o666 & ~mask, (rel, oct(path.stat().st_mode))
                checked += 1
    assert checked > 20


# ---- one snapshot per request --------------------------------------------------------------------
def test_hammer_search_then_tree_through_a_refresh_that_adds_and_removes_papers(fresh):
    """8 clients search and open the tree of every hit, each pair pinned to the snapshot the search
    named, while a refresh removes a paper and adds two: no 404, no 5xx."""
    from vectree.service.http import create_app

    store, corpus = fresh
    before = _ids(store)
    old_snapshot = store.current_snapshot_id()
    queries = ["glacier melt", "soil moisture radar", "river ice", "coral bleaching", "dune migration", "discharge"]
    stats = {"requests": 0, "failures": [], "snapshots": set()}
    lock = threading.Lock()
    refreshed = threading.Event()
    deadline = time.monotonic() + 600
    max_requests = 4000

    def client(n: int) -> None:
        rounds_after = 0
        with httpx.Client(base_url=base_url, timeout=60) as http:
            i = n
            while time.monotonic() < deadline and rounds_after < 3:
                with lock:
                    if stats["requests"] >= max_requests:
                        return
                if refreshed.is_set():
                    rounds_after += 1
                i += 1
                r = http.get("/search", params={"q": queries[i % len(queries)], "k": 3})
                snap = r.headers.get("x-vectree-snapshot")
                calls = [("search", r)]
                if r.status_code == 200:
                    for hit in r.json()["results"]:
                        t = http.get(f"/papers/{hit['doc_id']}/tree", headers={"X-Vectree-Snapshot": snap})
                        calls.append((f"tree {hit['doc_id']}", t))
                        if t.headers.get("x-vectree-snapshot") != snap:
                            calls.append(("snapshot changed", t))
                with lock:
                    stats["requests"] += len(calls)
                    stats["snapshots"].add(snap)
                    stats["failures"] += [(what, c.status_code, c.text[:200]) for what, c in calls
                                          if c.status_code != 200 or what == "snapshot changed"]

    with Served(create_app(store.root, token="")) as http:
        base_url = str(http.base_url)
        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        time.sleep(2)
        (corpus / "glacier.pdf").unlink()
        _write(corpus, "coral")
        _write(corpus, "dune")
        started = time.monotonic()
        _, report, _ = run_ingest([str(corpus)], str(store.root), quiet=True)
        refresh_seconds = time.monotonic() - started
        refreshed.set()
        for t in threads:
            t.join()
    assert not report.failed_runs
    after = _ids(store)
    new_snapshot = store.current_snapshot_id()
    figures = (f"{stats['requests']} requests, {len(stats['failures'])} failures, refresh {refresh_seconds:.1f}s, "
               f"snapshots {sorted(s for s in stats['snapshots'] if s)}")
    print("hammer:", figures)
    assert stats["failures"] == [], figures + f": {stats['failures'][:5]}"
    assert {old_snapshot, new_snapshot} <= stats["snapshots"], figures
    assert "glacier" in before and "glacier" not in after and {"coral", "dune"} <= set(after)
    _assert_consistent(store.view())


# ---- kills, signals and a second writer -----------------------------------------------------------
def _vectree(*args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "vectree.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


KILL_IN_INDEX_BUILD = """
import os, signal, sys
import vectree.retrieval.search.build as build
real = build.finish_snapshot
def finish_then_die(*a, **kw):
    real(*a, **kw)
    os.kill(os.getpid(), signal.SIGKILL)  # the new index snapshot is written, not yet published
build.finish_snapshot = finish_then_die
from vectree.cli import run_ingest
run_ingest([sys.argv[1]], sys.argv[2], quiet=True)
"""


def test_kill_during_the_index_build_leaves_the_previous_snapshot_consistent(fresh):
    store, corpus = fresh
    old = store.current_snapshot_id()
    old_ok = _assert_consistent(store.view())
    _write(corpus, "coral")
    proc = subprocess.run([sys.executable, "-c", KILL_IN_INDEX_BUILD, str(corpus), str(store.root)],
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    # the working catalog already lists the new paper; what is served does not
    assert any(r["doc_id"].startswith("coral-") for r in store.read_catalog())
    assert store.current_snapshot_id() == old
    assert _assert_consistent(store.view()) == old_ok
    # the next refresh completes and publishes catalog and index together
    _, report, _ = run_ingest([str(corpus)], str(store.root), quiet=True)
    assert not report.failed_runs and store.current_snapshot_id() != old
    assert {d.split("-")[0] for d in _assert_consistent(store.view())} == {"glacier", "soil", "ice", "coral"}


def test_sigterm_stops_an_ingest_within_seconds_and_the_previous_snapshot_serves(fresh):
    store, corpus = fresh
    old = store.current_snapshot_id()
    old_ok = _assert_consistent(store.view())
    for name in ("coral", "dune", "peat", "lake"):
        _write(corpus, name)
    proc = _vectree("ingest", str(corpus), "--store", str(store.root))
    deadline = time.monotonic() + 300
    # running: the first new paper's record is written
    while not any(p.name.startswith(("coral", "dune", "peat", "lake")) for p in (store.root / "papers").iterdir()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the ingest never started"
        time.sleep(0.1)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("vectree ingest ignored SIGTERM for 60 s")
    stopped = time.monotonic() - sent
    print(f"sigterm: stopped in {stopped:.1f}s")
    assert stopped < 20, stopped
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert err.strip().splitlines()[-1] == ("refresh interrupted: nothing was published, the previous snapshot "
                                           "keeps serving")
    assert store.current_snapshot_id() == old
    assert _assert_consistent(store.view()) == old_ok
    with Store(store.root).writer_lock():  # the lock died with the refresh
        pass


def test_a_second_ingest_exits_with_one_clear_line(fresh):
    store, corpus = fresh
    with store.writer_lock():
        proc = _vectree("ingest", str(corpus), "--store", str(store.root))
        out, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, (out, err)
    assert err.strip().splitlines() == [f"Error: another refresh is running, pid {os.getpid()}"]


# ---- truthful status, LLM failures, stable ids -----------------------------------------------------
def test_status_is_truthful_per_artefact_and_llm_failures_fall_back(fresh, fake_openai, monkeypatch):
    import vectree.assets.passages as passages_asset

    store, corpus = fresh
    soil = _ids(store)["soil"]
    # a copy of soil under a name that sorts first: an alias, not a new id
    shutil.copy(corpus / "soil.pdf", corpus / "aaa-copy-of-soil.pdf")
    _write(corpus, "coral")  # its tree meets an LLM that answers HTTP 500
    _write(corpus, "dune")  # its passages step crashes
    fake_openai.script(*[Reply.error(500, "the model server is on fire")] * 20)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("VECTREE_LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("VECTREE_LLM_TIMEOUT", "5")
    real = passages_asset.build_passages

    def crash_for_dune(pages, nodes, embedder):
        if pages and "Sand Dune" in pages[0]["text"]:
            raise RuntimeError("simulated passages crash")
        return real(pages, nodes, embedder)

    real_batch = passages_asset.build_passages_batch

    def batch_crash_for_dune(papers, embedder):
        # a batch that holds the broken paper fails as a whole; the asset then embeds paper by
        # paper, so that only dune fails
        if any(pages and "Sand Dune" in pages[0]["text"] for pages, _ in papers):
            raise RuntimeError("simulated passages crash")
        return real_batch(papers, embedder)

    monkeypatch.setattr(passages_asset, "build_passages", crash_for_dune)
    monkeypatch.setattr(passages_asset, "build_passages_batch", batch_crash_for_dune)
    _, report, _ = run_ingest([str(corpus)], str(store.root), quiet=True)
    rows = {r["doc_id"].split("-")[0]: r for r in store.view().read_catalog()}

    # stable id: the copy that sorts first did not rename the paper; both names are remembered
    assert rows["soil"]["doc_id"] == soil and "aaa" not in rows
    assert sorted(Path(p).name for p in rows["soil"]["source_paths"]) == ["aaa-copy-of-soil.pdf", "soil.pdf"]

    # the LLM failed: the tree came from the offline extractor, recorded as such; the paper is whole
    coral = rows["coral"]
    assert coral["status"] == "ok", coral["error"]
    tree = {a["artefact"]: a for a in coral["artefacts"]}["tree"]
    assert tree["ok"] and "offline fallback" in tree["detail"] and "HTTP 500" in tree["detail"], tree
    assert fake_openai.chat_requests  # the LLM was really asked

    # the crashed step: degraded, naming the artefact and the reason; still findable, no paths leak
    dune = rows["dune"]
    assert [r for r in report.failed_runs if r.startswith("dune-")]
    assert dune["status"] == "degraded"
    assert dune["error"].startswith("passages: missing (last run failed:") and "simulated passages crash" in dune["error"]
    assert {a["artefact"]: a["ok"] for a in dune["artefacts"]} == {"pages": True, "tree": True, "passages": False,
                                                                 "index": True}
    assert str(store.root) not in dune["error"]
    from vectree.agent.tools import Toolbox, ToolError

    toolbox = Toolbox(store)
    assert dune["doc_id"] in {h["doc_id"] for h in toolbox.search_papers(TITLES["dune"], k=3).data["results"]}
    with pytest.raises(ToolError) as exc:
        toolbox.search_within_paper(dune["doc_id"], "dune migration")
    assert str(store.root) not in str(exc.value)
    assert all(r["status"] == "ok" for k, r in rows.items() if k != "dune")
