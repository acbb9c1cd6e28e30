"""A store on object storage: ``--store s3://bucket/prefix`` against a real S3 server (moto in
server mode, its own process on 127.0.0.1), with endpoint and credentials from the standard AWS variables.

Ingest to S3 and serve from S3 in another process (its own empty cache, so everything it reads
came through the bucket): the same answers as a local store built from the same PDFs; a refresh
publishing to S3 while the service is queried never shows a torn snapshot; the model-free
commands read it; a writer on a fresh machine rebuilds nothing that is unchanged.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from tests import pdfmaker
from vectree.cli import run_ingest
from vectree.retrieval.store import ObjectStore, Store, is_store_uri

try:
    import moto.server  # noqa: F401  (run as `python -m moto.server`: S3 in its own process)
except ImportError:  # the dev extra installs it; CI must not skip silently
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise
    pytest.skip("needs moto[server] (pip install -e '.[dev]')", allow_module_level=True)

REPO = Path(__file__).resolve().parents[1]
BUCKET = "vectree-test"
TITLES = {
    "glacier": "Glacier Melt Dynamics in Alpine Basins",
    "soil": "Soil Moisture Retrieval from Radar",
    "ice": "River Ice Break-up Forecasting",
    "coral": "Coral Reef Bleaching under Marine Heatwaves",
    "dune": "Sand Dune Migration in Coastal Deserts",
}
QUERIES = ["glacier melt", "soil moisture radar", "river ice", "coral bleaching", "dune migration"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write(corpus: Path, name: str) -> Path:
    return pdfmaker.write_paper(corpus / f"{name}.pdf", TITLES[name], pdfmaker.GOOD_SECTIONS)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's S3 server on a free port, a bucket, and the AWS variables set for this process and
    the processes it starts; ``VECTREE_STORE_CACHE`` is this process's own ("the writer machine")."""
    port = _free_port()
    # its own process: in this one it would wait for the GIL behind the refreshes the tests run
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/moto-api/", timeout=5)
            break
        except httpx.HTTPError:
            assert server.poll() is None and time.monotonic() < deadline, "moto_server did not start"
            time.sleep(0.2)
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "test",
           "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
           "AWS_EC2_METADATA_DISABLED": "true",
           "VECTREE_STORE_CACHE": str(tmp_path_factory.mktemp("writer-cache"))}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        import boto3

        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        yield SimpleNamespace(client=client, env=env)
    server.terminate()
    server.wait(timeout=30)


def _keys(s3, prefix: str) -> list[str]:
    out = []
    for page in s3.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/"):
        out += [o["Key"][len(prefix) + 1:] for o in page.get("Contents", [])]
    return sorted(out)


@pytest.fixture(scope="module")
def built(s3, tmp_path_factory):
    """The same three PDFs ingested into a local store and into ``s3://vectree-test/stores/main``."""
    root = tmp_path_factory.mktemp("objstore")
    corpus = root / "corpus"
    corpus.mkdir()
    for name in ("glacier", "soil", "ice"):
        _write(corpus, name)
    local, report, _ = run_ingest([str(corpus)], str(root / "local"), quiet=True)
    assert not report.failed_runs, report.failed_runs
    uri = f"s3://{BUCKET}/stores/main"
    cwd = os.getcwd()
    os.chdir(root)  # where the old bug wrote a folder named "s3:"
    try:
        remote, report, _ = run_ingest([str(corpus)], uri, quiet=True)
    finally:
        os.chdir(cwd)
    assert not report.failed_runs, report.failed_runs
    assert not (root / "s3:").exists()
    return SimpleNamespace(root=root, corpus=corpus, local=local, remote=remote, uri=uri)


def _vectree(*args: str, cache: Path, log: Path | None = None, **env) -> subprocess.Popen:
    """``vectree ARGS`` in a new process; a long-lived one writes to ``log`` (an unread pipe fills
    up with the access log and stalls the server)."""
    full = dict(os.environ, PYTHONPATH=str(REPO), VECTREE_STORE_CACHE=str(cache), **env)
    out = open(log, "w") if log else subprocess.PIPE
    try:
        return subprocess.Popen([sys.executable, "-m", "vectree.cli", *args], stdout=out,
                                stderr=subprocess.STDOUT if log else subprocess.PIPE, text=True, env=full)
    finally:
        if log:
            out.close()


@pytest.fixture(scope="module")
def served(built):
    """``vectree serve --store s3://...`` in another process with an empty cache of its own."""
    port = _free_port()
    cache = built.root / "service-cache"
    log = built.root / "serve.log"
    proc = _vectree("serve", "--store", built.uri, "--port", str(port), cache=cache, log=log,
                    VECTREE_STORE_POLL_SECONDS="0.2")
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            if httpx.get(base + "/health", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "vectree serve --store s3://... did not start"
        time.sleep(0.3)
    yield SimpleNamespace(url=base, cache=cache)
    proc.terminate()
    proc.wait(timeout=30)


def _answers(http, doc_ids: list[str]) -> dict:
    """What a client sees: search, papers, tree, a page, within-paper search, ask (snapshot ids and
    timings left out, they differ by design)."""
    out = {"papers": http.get("/papers").json()}
    for q in QUERIES[:3]:
        out[f"search {q}"] = http.get("/search", params={"q": q, "k": 3}).json()
    for doc in doc_ids:
        out[f"tree {doc}"] = http.get(f"/papers/{doc}/tree").json()
        out[f"page {doc}"] = http.get(f"/papers/{doc}/pages/1").json()
        out[f"within {doc}"] = http.get(f"/papers/{doc}/search", params={"q": "melt rates"}).json()
    ask = http.post("/ask", json={"question": "How is river ice break-up forecast?", "agent": "offline"}).json()
    out["ask"] = {k: ask.get(k) for k in ("answer", "citations")}
    return out


def test_ingest_to_s3_and_serve_from_s3_in_another_process_answers_like_a_local_store(s3, built, served):
    from fastapi.testclient import TestClient

    from vectree.service.http import create_app

    # the bucket holds the published store: pointer, one file list, content-addressed blobs
    keys = _keys(s3, "stores/main")
    live = s3.client.get_object(Bucket=BUCKET, Key="stores/main/CURRENT")["Body"].read().decode()
    assert f"snapshots/{live}.json" in keys and "layout.json" in keys
    assert sum(k.startswith("blobs/") for k in keys) >= 10
    doc_ids = sorted(r["doc_id"] for r in built.local.view().read_catalog())
    assert len(doc_ids) == 3
    with httpx.Client(base_url=served.url, timeout=120) as http:
        health = http.get("/health").json()
        assert health["papers"] == 3 and health["snapshot"]
        from_s3 = _answers(http, doc_ids)
        assert http.get("/papers").headers["x-vectree-snapshot"] == live
    with TestClient(create_app(built.local.root, token="")) as http:
        from_local = _answers(http, doc_ids)
    for key in from_local:
        assert from_s3[key] == from_local[key], key
    assert from_local["ask"]["citations"], from_local["ask"]
    # the service pulled the live snapshot into its own cache (nothing came from the writer's)
    copy = ObjectStore(built.uri, cache_dir=served.cache, check_layout=False)
    assert (copy.snapshots_dir / live / "snapshot.json").exists()


def test_papers_and_status_read_an_s3_store_on_a_machine_that_never_wrote_it(built, tmp_path):
    want = sorted(r["doc_id"] for r in built.local.view().read_catalog())
    papers = _vectree("papers", "--store", built.uri, cache=tmp_path / "cache-papers")
    out, err = papers.communicate(timeout=120)
    assert papers.returncode == 0, err
    assert all(d in out for d in want), out
    status = _vectree("status", "--store", built.uri, cache=tmp_path / "cache-status")
    out, err = status.communicate(timeout=120)
    assert status.returncode == 0, err
    assert built.uri in out and "3 papers" in out and "3 ok" in out, out


def test_bad_store_uris_fail_with_one_line(s3, tmp_path):
    proc = _vectree("papers", "--store", "s3://no-such-bucket-here/x", cache=tmp_path / "c1")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert "s3://no-such-bucket-here/x" in err and len(err.strip().splitlines()) == 1, err
    proc = _vectree("papers", "--store", "nosuchscheme://b/p", cache=tmp_path / "c2")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "Traceback" not in err and "nosuchscheme://b/p" in err, err


def test_settings_keep_a_store_uri_as_written(monkeypatch):
    from vectree.retrieval.config import load_settings

    monkeypatch.setenv("VECTREE_STORE", "s3://bucket/some/prefix/")
    assert load_settings().store_root == "s3://bucket/some/prefix" and is_store_uri(load_settings().store_root)
    assert load_settings("gs://b/p").store_root == "gs://b/p"
    assert load_settings("plain/folder").store_root == Path("plain/folder")
    assert type(Store("s3://bucket/p", check_layout=False)) is ObjectStore  # (no request made)
    assert type(Store(Path("plain"), check_layout=False)) is Store


def _catalog(uri: str, snap: str, cache: Path) -> set[str]:
    """The doc ids of a published snapshot, read through a cache of its own."""
    view = ObjectStore(uri, cache_dir=cache, check_layout=False).view(snap)
    return {r["doc_id"] for r in view.read_catalog()}


def test_a_refresh_publishing_to_s3_never_shows_the_service_a_torn_snapshot(s3, built, served):
    """4 clients list the papers, search, and open the tree of every hit pinned to the snapshot the
    search named, while a refresh removes a paper and adds two and publishes to S3.  Every
    response's content must be that of the snapshot its header names; no failures; the service
    switches to the new snapshot without a restart."""
    old = ObjectStore(built.uri, check_layout=False).current_snapshot_id()
    stats = {"requests": 0, "failures": [], "seen": []}
    lock = threading.Lock()
    refreshed = threading.Event()
    deadline = time.monotonic() + 300

    def client(n: int) -> None:
        try:
            rounds(n)
        except Exception as exc:  # a dead client thread must show as a failure, not vanish
            with lock:
                stats["failures"].append(("client", type(exc).__name__, str(exc)[:200]))

    def rounds(n: int) -> None:
        rounds_after, i = 0, n
        with httpx.Client(base_url=served.url, timeout=180) as http:
            while time.monotonic() < deadline and rounds_after < 3:
                if refreshed.is_set():
                    rounds_after += 1
                i += 1
                seen, bad = [], []
                p = http.get("/papers")
                if p.status_code == 200:
                    seen.append((p.headers["x-vectree-snapshot"], "papers", [r["doc_id"] for r in p.json()["papers"]]))
                else:
                    bad.append(("papers", p.status_code, p.text[:200]))
                r = http.get("/search", params={"q": QUERIES[i % len(QUERIES)], "k": 3})
                if r.status_code != 200:
                    bad.append(("search", r.status_code, r.text[:200]))
                else:
                    snap = r.headers["x-vectree-snapshot"]
                    hits = [h["doc_id"] for h in r.json()["results"]]
                    seen.append((snap, "search", hits))
                    for doc in hits:
                        t = http.get(f"/papers/{doc}/tree", headers={"X-Vectree-Snapshot": snap})
                        if t.status_code != 200 or t.headers.get("x-vectree-snapshot") != snap:
                            bad.append((f"tree {doc}", t.status_code, t.text[:200]))
                with lock:
                    stats["requests"] += 2 + len(seen[-1][2]) if seen else 2
                    stats["seen"] += seen
                    stats["failures"] += bad

    threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    time.sleep(1)
    (built.corpus / "glacier.pdf").unlink()
    _write(built.corpus, "coral")
    _write(built.corpus, "dune")
    started = time.monotonic()
    _, report, _ = run_ingest([str(built.corpus)], built.uri, quiet=True)
    refresh_s = time.monotonic() - started
    new = ObjectStore(built.uri, check_layout=False).current_snapshot_id()
    # let the clients see the new snapshot (the service polls the pointer every 0.2 s)
    published = time.monotonic()
    while time.monotonic() < deadline:
        try:
            if httpx.get(served.url + "/papers", timeout=60).headers["x-vectree-snapshot"] == new:
                break
        except httpx.TimeoutException:  # a busy machine: the clients' own requests say whether any failed
            pass
        time.sleep(0.2)
    switch_s = time.monotonic() - published
    refreshed.set()
    for t in threads:
        t.join()
    after_s = time.monotonic() - published - switch_s
    assert not report.failed_runs and new != old
    catalogs: dict[str, set[str]] = {}
    torn = []
    for snap, what, docs in stats["seen"]:
        if snap not in catalogs:
            catalogs[snap] = _catalog(built.uri, snap, built.root / "check-cache")
        if (what == "papers" and set(docs) != catalogs[snap]) or not set(docs) <= catalogs[snap]:
            torn.append((snap, what, docs))
    figures = (f"{stats['requests']} requests, {len(stats['failures'])} failures, {len(torn)} torn, "
               f"refresh {refresh_s:.1f}s, served {switch_s:.1f}s after the publish, clients done {after_s:.1f}s "
               f"later, snapshots {sorted(catalogs)}")
    print("s3 hammer:", figures)
    assert stats["failures"] == [], figures + f": {stats['failures'][:5]}"
    assert torn == [], figures + f": {torn[:5]}"
    assert {old, new} <= set(catalogs), figures
    names = {d.split("-")[0] for d in catalogs[new]}
    assert names == {"soil", "ice", "coral", "dune"}, names
    assert {d.split("-")[0] for d in catalogs[old]} == {"glacier", "soil", "ice"}
    # the bucket keeps the last three snapshots' file lists and only the blobs they name
    lists = [k for k in _keys(s3, "stores/main") if k.startswith("snapshots/")]
    assert 1 <= len(lists) <= 3 and f"snapshots/{new}.json" in lists


def test_a_writer_on_a_fresh_machine_rebuilds_nothing_that_is_unchanged(s3, built, tmp_path, monkeypatch):
    """A refresh from an empty cache pulls the live snapshot and the writer's state: no paper is
    parsed again, the catalog is the same; a new PDF is the only paper processed."""
    store = ObjectStore(built.uri, check_layout=False)
    before = {r["doc_id"]: r["status"] for r in store.view(store.current_snapshot_id()).read_catalog()}
    monkeypatch.setenv("VECTREE_STORE_CACHE", str(tmp_path / "fresh-machine"))
    fresh, report, _ = run_ingest([], built.uri, quiet=True)  # the sources come from the bucket
    assert not report.failed_runs
    assert report.plan.run == [] and report.plan.add == [] and report.plan.remove == []
    assert fresh.root.is_relative_to(tmp_path / "fresh-machine")
    live = ObjectStore(built.uri, check_layout=False).current_snapshot_id()
    assert {r["doc_id"]: r["status"] for r in fresh.view(live).read_catalog()} == before
    pdfmaker.write_paper(built.corpus / "extra.pdf", "Permafrost Thaw Subsidence", pdfmaker.GOOD_SECTIONS)
    _, report, _ = run_ingest([], built.uri, quiet=True)
    assert [d.split("-")[0] for d in report.plan.run] == ["extra"], report.plan


def test_snapshots_go_through_a_file_uri_whole_and_old_ones_are_collected(tmp_path):
    """Without S3 or a model: publish through a ``file://`` store, pull into another cache; only
    new content is uploaded; the bucket keeps the last three snapshots and the blobs they name."""
    from vectree.retrieval.store import KEEP_SNAPSHOTS

    uri = f"file://{tmp_path / 'bucket'}"
    writer = ObjectStore(uri, cache_dir=tmp_path / "writer", poll_seconds=0)

    def page(text: str) -> dict:
        return {"page_no": 1, "width": 612.0, "height": 792.0, "text": text, "lines": []}

    published, rows = [], []
    for i in range(KEEP_SNAPSHOTS + 2):
        doc = f"paper{i}-{i:010x}"
        writer.write_record(doc, {"status": "ok", "title": f"Paper {i}"})
        writer.write_pages(doc, [page(f"text of paper {i}")])
        rows.append({"doc_id": doc, "title": f"Paper {i}", "status": "ok", "n_pages": 1})
        writer.write_catalog(rows)
        blobs_before = set((tmp_path / "bucket" / "blobs").glob("*"))
        published.append(writer.publish_snapshot(rows, index_snapshot=None, sprout_model=None))
        new_blobs = set((tmp_path / "bucket" / "blobs").glob("*")) - blobs_before
        if i:  # the earlier papers' files are there already: a record, pages, catalog, manifest, lists
            assert 0 < len(new_blobs) <= 5, sorted(b.name for b in new_blobs)
    assert (tmp_path / "bucket" / "CURRENT").read_text() == published[-1]
    lists = sorted(p.stem for p in (tmp_path / "bucket" / "snapshots").glob("*.json"))
    assert lists == published[-KEEP_SNAPSHOTS:]
    named = set()
    for sid in lists:
        m = json.loads((tmp_path / "bucket" / "snapshots" / f"{sid}.json").read_text())
        named |= {sha for files in m["folders"].values() for sha, _ in files.values()}
        named |= {sha for sha, _ in m["writer"].values()}
    assert {p.name for p in (tmp_path / "bucket" / "blobs").iterdir()} == named
    # a reader elsewhere pulls the live snapshot whole and reads it like a local one
    reader = ObjectStore(uri, cache_dir=tmp_path / "reader", poll_seconds=0)
    view = reader.view()
    assert view.snapshot_id == published[-1]
    assert [r["doc_id"] for r in view.read_catalog()] == [r["doc_id"] for r in rows]
    assert view.read_page_texts(rows[-1]["doc_id"]) == [f"text of paper {len(rows) - 1}"]
    # a collected snapshot is gone for good: pinning it says so
    with pytest.raises(Exception, match="not published"):
        reader.view(published[0])
    # the reader's working copy is empty until it writes: then it is the live snapshot's
    assert reader.read_catalog() == []
    reader.sync_working_copy()
    assert [r["doc_id"] for r in reader.read_catalog()] == [r["doc_id"] for r in rows]
    assert reader.pulled_papers() == {r["doc_id"]: "ok" for r in rows}
