"""The asset graph on real engines: Dagster's multiprocess executor, and the Celery executor
(dagster-celery) with a real Redis broker and two worker processes.

Each store built through another executor must answer exactly as one built in-process: the same
catalog rows, the same section trees, the same search results.  Killing a Celery worker in the
middle of a refresh leaves the previous snapshot serving, and the re-run completes.

Everything here is bounded: every wait has a deadline, and every process this file starts is
killed with its whole process group in ``finally`` (an earlier version of the kill test waited for
the lost step until the suite's timeout).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vectree.retrieval.store import Store
from vectree.retrieval.trees.schema import read_tree

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]

REPO = Path(__file__).resolve().parents[1]
VECTREE = [sys.executable, "-m", "vectree.cli"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1",
       "PYTHONWARNINGS": "ignore", "OPENAI_BASE_URL": "", "PYTHONFAULTHANDLER": "1"}
QUERIES = ["neural network training", "evaluation dataset results", "graph", "language model", "table extraction"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd, log: Path, env=None) -> subprocess.Popen:
    """A process in its own group (so its children die with it), output to ``log``."""
    return subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=env or ENV,
                            cwd=REPO, start_new_session=True)


def _kill(proc: subprocess.Popen | None, sig=signal.SIGKILL) -> None:
    """``proc``'s whole group, even when its leader has exited (its children may not have)."""
    if proc is None:
        return
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        proc.poll()
        return
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)


def _wait_for(predicate, timeout: float, what: str, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _ingest(paths, store: Path, env: dict, timeout: float, log: Path) -> subprocess.Popen:
    return _start([*VECTREE, "ingest", *map(str, paths), "--store", str(store)], log, env)


def _finish(proc: subprocess.Popen, timeout: float, log: Path) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # faulthandler writes every thread's stack to the log
        time.sleep(3)
        _kill(proc)
        raise AssertionError(f"ingest did not finish in {timeout:.0f} s:\n{log.read_text()[-3000:]}")


# ---- what "answers exactly as" means ------------------------------------------------------------
VOLATILE = {"parsed_at", "source_path", "source_paths"}  # when and from where: not what the store answers


def answers(root: Path) -> dict:
    """Catalog rows, trees and search results of the published snapshot at ``root``."""
    from vectree.retrieval.search.query import SearchIndex

    reader = Store(root).reader()
    rows = sorted(({k: v for k, v in r.items() if k not in VOLATILE} for r in reader.read_catalog()),
                  key=lambda r: r["doc_id"])
    trees = {r["doc_id"]: [{k: v for k, v in n.items()} for n in read_tree(reader, r["doc_id"])]
             for r in rows if r["status"] == "ok"}
    index = SearchIndex.open(reader)
    titles = [r["title"] for r in rows if r["title"]][:3]
    results = {q: [(h["doc_id"], round(float(h["score"]), 4)) for h in index.search(q, 10)]
               for q in QUERIES + titles}
    return {"catalog": rows, "trees": trees, "search": results}


# ---- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_pdfs(shared_pdfs) -> list[Path]:
    """The 6 shared PDFs with the fewest pages (the refresh is real, the test must stay short)."""
    import pymupdf

    def pages(p):
        try:
            with pymupdf.open(p) as doc:
                return doc.page_count
        except Exception:
            return 10**6

    return sorted(shared_pdfs, key=lambda p: (pages(p), p.name))[:6]


@pytest.fixture(scope="module")
def reference(small_pdfs, tmp_path_factory) -> dict:
    """The same PDFs ingested in-process: what every other executor must match."""
    tmp = tmp_path_factory.mktemp("reference")
    proc = _ingest(small_pdfs, tmp / "store", ENV, 300, tmp / "ingest.log")
    assert _finish(proc, 300, tmp / "ingest.log") == 0, (tmp / "ingest.log").read_text()[-3000:]
    return answers(tmp / "store")


@pytest.fixture
def redis_url(tmp_path):
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("redis-server is missing (.ci/run installs Debian's redis-server)")
        pytest.skip("needs redis-server (Debian: apt-get install redis-server)")
    port = _free_port()
    proc = _start([server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
                   "--dir", str(tmp_path)], tmp_path / "redis.log")
    try:
        def up():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    return s.recv(16).startswith(b"+PONG")
            except OSError:
                return False

        _wait_for(up, 30, "redis-server")
        yield f"redis://127.0.0.1:{port}"
    finally:
        _kill(proc)


class Workers:
    """Celery workers of dagster-celery, each one process group, logging to a file."""

    def __init__(self, broker: str, tmp: Path):
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen] = {}
        conf = tmp / "celeryconf"
        conf.mkdir(exist_ok=True)
        # dagster_celery.app reads its broker from a module of this name (make_app); the run's
        # executor config names the same broker and backend
        (conf / "dagster_celery_config.py").write_text(
            f"broker_url = {broker + '/0'!r}\nresult_backend = {broker + '/1'!r}\n")
        self.env = {**ENV, "PYTHONPATH": os.pathsep.join([str(conf), str(REPO)])}

    def start(self, name: str) -> None:
        log = self.tmp / f"worker-{name}.log"
        self.procs[name] = _start([sys.executable, "-m", "celery", "-A", "dagster_celery.app", "worker",
                                   "-n", f"{name}@%h", "-Q", "dagster", "--concurrency", "1", "--pool", "prefork",
                                   "--prefetch-multiplier", "1", "--without-gossip", "--without-mingle",
                                   "--loglevel", "INFO"], log, self.env)
        _wait_for(lambda: "ready." in log.read_text(errors="replace") or self.procs[name].poll() is not None,
                  120, f"celery worker {name}")
        assert self.procs[name].poll() is None, log.read_text()[-3000:]

    def log(self, name: str) -> str:
        return (self.tmp / f"worker-{name}.log").read_text(errors="replace")

    def kill(self, name: str) -> None:
        _kill(self.procs.pop(name))

    def close(self) -> None:
        for name in list(self.procs):
            self.kill(name)


@pytest.fixture
def workers(redis_url, tmp_path):
    pool = Workers(redis_url, tmp_path)
    try:
        yield pool
    finally:
        pool.close()


def _celery_env(redis_url: str) -> dict:
    return {**ENV, "VECTREE_EXECUTOR": "celery", "VECTREE_WORKERS": "2", "VECTREE_BATCH_SIZE": "3",
            "VECTREE_CELERY_BROKER": redis_url + "/0", "VECTREE_CELERY_BACKEND": redis_url + "/1"}


# ---- tests ------------------------------------------------------------------------------------
def test_celery_workers_build_the_same_store_as_in_process(small_pdfs, reference, workers, redis_url, tmp_path):
    workers.start("w1")
    workers.start("w2")
    log = tmp_path / "ingest.log"
    proc = _ingest(small_pdfs, tmp_path / "store", _celery_env(redis_url), 300, log)
    assert _finish(proc, 300, log) == 0, log.read_text()[-3000:]
    # both workers ran steps: the work really went over the broker to two processes
    for name in ("w1", "w2"):
        assert "Task execute_plan" in workers.log(name) and "succeeded" in workers.log(name), workers.log(name)[-2000:]
    from vectree.pipelines.refresh import instance_for

    runs = [r for r in instance_for(Store(tmp_path / "store")).get_runs() if r.job_name == "paper_job"]
    assert len(runs) == 2 and all("dagster/asset_partition_range_start" in r.tags for r in runs)
    got = answers(tmp_path / "store")
    assert len(got["catalog"]) == len(small_pdfs)
    assert got == reference


def test_killing_a_celery_worker_leaves_the_previous_snapshot_and_the_rerun_completes(
        small_pdfs, reference, workers, redis_url, tmp_path):
    store = tmp_path / "store"
    first, rest = small_pdfs[:2], small_pdfs[2:]
    log = tmp_path / "first.log"
    assert _finish(_ingest(first, store, ENV, 240, log), 240, log) == 0, log.read_text()[-3000:]
    before_id = Store(store).current_snapshot_id()
    before = answers(store)
    assert before_id and len(before["catalog"]) == 2

    workers.start("w1")
    workers.start("w2")
    env = _celery_env(redis_url)
    log = tmp_path / "killed.log"
    proc = _ingest(rest, store, env, 300, log)
    try:
        # kill w1 as soon as it has a step in hand (SIGKILL to its whole group: main process and pool)
        _wait_for(lambda: "Task execute_plan" in workers.log("w1") or proc.poll() is not None, 240,
                  "a step on worker w1")
        assert proc.poll() is None, "the refresh ended before a worker could be killed"
        workers.kill("w1")
        # the step w1 held is lost with it: the refresh cannot finish; stop it as a user would
        time.sleep(5)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    finally:
        _kill(proc)
    assert code != 0
    # nothing was published: the previous snapshot serves, answering as before
    assert Store(store).current_snapshot_id() == before_id
    assert answers(store) == before

    # the stopped refresh's processes let go of the store when they exit (on a loaded machine a
    # run process can outlive the command by seconds; the kernel drops its lock with it)
    _wait_for(lambda: Store(store).writer_lock_free(), 60, "the stopped refresh's processes to let go of the store")
    # a fresh worker replaces the dead one and the re-run completes
    workers.start("w3")
    log = tmp_path / "rerun.log"
    assert _finish(_ingest(rest, store, env, 200, log), 200, log) == 0, log.read_text()[-3000:]
    assert Store(store).current_snapshot_id() != before_id
    assert answers(store) == reference


def test_multiprocess_executor_builds_the_same_store(small_pdfs, tmp_path, tmp_path_factory):
    # smaller: a process per step imports Dagster, torch and the model again (README)
    pdfs = small_pdfs[:3]
    ref = tmp_path / "ref"
    log = tmp_path / "ref.log"
    assert _finish(_ingest(pdfs, ref, ENV, 240, log), 240, log) == 0, log.read_text()[-3000:]
    env = {**ENV, "VECTREE_EXECUTOR": "multiprocess", "VECTREE_WORKERS": "2"}
    log = tmp_path / "mp.log"
    assert _finish(_ingest(pdfs, tmp_path / "mp", env, 300, log), 300, log) == 0, log.read_text()[-3000:]
    assert answers(tmp_path / "mp") == answers(ref)
