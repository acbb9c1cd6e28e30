"""One writer for every Dagster run (issue 18, finding 4): a run launched from the Dagster UI, a
sensor or a schedule takes the store's writer lock as ``vectree ingest`` does, and fails at once,
with one line naming the holder, while another process holds it; the runs of one refresh (in its
process, in the batch processes it spawns, in multiprocess step processes) go on under their
refresh's lock.

Real Dagster materialisations on temporary stores, real lock-holding processes, the real
``dagster`` command line (what the UI's "Materialize" launches: the code location's definitions).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import pytest

from tests import pdfmaker
from vectree.retrieval.store import Store, StoreBusyError

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

HOLD = """
import sys
from vectree.retrieval.store import Store
with Store(sys.argv[1]).writer_lock(holder=sys.argv[2] or None):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes our stdin
"""


class Holder:
    """Another process holding the store's writer lock (as a running ``vectree ingest`` does)."""

    def __init__(self, root: Path, holder: str = ""):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD, str(root), holder], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))

    def __enter__(self) -> int:
        assert self.proc.stdout.readline().strip() == "held"
        return self.proc.pid

    def __exit__(self, *exc):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """One paper ingested through the real pipeline (built once; tests work on copies)."""
    from vectree.cli import run_ingest

    root = tmp_path_factory.mktemp("runlock")
    (root / "corpus").mkdir()
    pdfmaker.write_paper(root / "corpus" / "glacier.pdf", "Glacier Melt Dynamics in Alpine Basins",
                         pdfmaker.GOOD_SECTIONS)
    _, report, _ = run_ingest([str(root / "corpus")], str(root / "store"), quiet=True)
    assert not report.failed_runs, report.failed_runs
    return root


@pytest.fixture()
def fresh(base, tmp_path):
    """A private copy of the store and its corpus, with a second PDF added to the corpus."""
    store, corpus = pdfmaker.private_store_copy(base, tmp_path)
    pdfmaker.write_paper(corpus / "soil.pdf", "Soil Moisture Retrieval from Radar", pdfmaker.GOOD_SECTIONS)
    return store, corpus


def _state(store: Store) -> dict:
    """Everything a writer would change: the scan, the catalog, the records, the live snapshot."""
    return {"manifest": store.manifest_path.read_bytes(), "catalog": store.catalog_path.read_bytes(),
            "records": sorted(store.record_ids()), "snapshot": store.current_snapshot_id()}


# ---- the lock itself ------------------------------------------------------------------------------
def test_a_lock_left_to_a_child_of_an_exited_refresh_says_so(tmp_path):
    """A refresh stopped mid-run can exit while a process it started still holds the store (the
    kernel drops the lock only when every holder is gone): the second writer is told that the
    named process has exited and the lock goes when the other one does."""
    store = Store(tmp_path / "s")
    script = """
import os, sys
from vectree.retrieval.store import Store
lock = Store(sys.argv[1]).writer_lock(holder="run:stopped")
lock.__enter__()
if os.fork() == 0:  # the child inherits the locked file: it holds the lock now
    print("held", flush=True)
    sys.stdin.read()
    os._exit(0)
os._exit(0)  # the process that took the lock exits at once
"""
    proc = subprocess.Popen([sys.executable, "-c", script, str(store.root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(StoreBusyError, match=rf"^another refresh is running, pid {proc.pid}: that process has "
                                                 "exited and one it started still holds the store"):
            with store.writer_lock():
                pass
    finally:
        proc.stdin.close()  # the child reads to the end and exits
    deadline = time.monotonic() + 30
    while not store.writer_lock_free():
        assert time.monotonic() < deadline, "the child's exit did not free the store"
        time.sleep(0.2)
    with store.writer_lock():
        pass


def test_the_lock_names_its_holder_and_the_steps_of_one_run_take_turns(tmp_path):
    store = Store(tmp_path / "s")
    assert store.writer_holder() is None
    assert store.writer_lock_free() and not store.lock_path.exists()  # the probe creates nothing
    with Holder(store.root, "run:a") as pid:
        assert store.writer_holder() == "run:a"
        assert not store.writer_lock_free()
        # anyone else: at once, one line naming the holding process
        with pytest.raises(StoreBusyError, match=rf"^another refresh is running, pid {pid}$"):
            with store.writer_lock(holder="run:b", turns_with="run:b"):
                pass
        # another step of the same run waits for its turn
        got = threading.Event()

        def step():
            with Store(store.root).writer_lock(holder="run:a", turns_with="run:a"):
                got.set()

        waiter = threading.Thread(target=step)
        waiter.start()
        assert not got.wait(1.0)  # still held by the other step
    waiter.join(timeout=30)
    assert got.is_set()
    assert store.writer_holder() is None  # released, and the text does not outlive it
    assert store.writer_lock_free()
    with store.writer_lock():
        assert store.writer_holder() is None  # taken without a holder name
        assert not store.writer_lock_free()  # ... but taken


# ---- runs that are not part of the holder's refresh fail fast -----------------------------------------
def _run(store: Store, job: str, tags: dict[str, str]) -> dg.ExecuteInProcessResult:
    """``job`` of the code location's definitions, bound to this store, run in-process."""
    from vectree.assets.llm_resource import LLMResource
    from vectree.assets.resources import VectreeStore
    from vectree.pipelines.definitions import defs
    from vectree.pipelines.refresh import QUIET_RUN_CONFIG, bind_jobs, instance_for

    bound = bind_jobs(defs, VectreeStore(store_root=str(store.root)), LLMResource())
    return bound.resolve_job_def(job).execute_in_process(instance=instance_for(store), tags=tags,
                                                         run_config=QUIET_RUN_CONFIG, raise_on_error=False)


@pytest.mark.parametrize("tags", [
    {"vectree/trigger": "sensor"},  # a sensor's or a schedule's run, or one launched from the UI
    {"vectree/trigger": "cli", "vectree/refresh": "another0refresh"},  # a run of some other refresh
    # a re-execution from the UI copies the refresh id of the run it repeats: it is not of that refresh
    {"vectree/trigger": "cli", "vectree/refresh": "abc123", "dagster/parent_run_id": "0" * 36},
], ids=["outside-a-refresh", "other-refresh", "re-execution"])
def test_a_run_fails_fast_while_another_process_holds_the_lock(fresh, tags):
    from vectree.pipelines.refresh import instance_for

    store, _ = fresh
    before = _state(store)
    with Holder(store.root, "refresh:abc123") as pid:
        result = _run(store, "scan_job", tags)
    assert not result.success
    line = f"another refresh is running, pid {pid}"
    # what the Dagster UI shows for the run: the error, and one log line that says what to do
    errors = [e for ev in result.all_events for e in _chain(getattr(ev.event_specific_data, "error", None))]
    assert f"vectree.retrieval.store.StoreBusyError: {line}" in errors, errors
    logs = [r.user_message for r in instance_for(store).all_logs(result.run_id)
            if r.level >= 40 and r.user_message.startswith("another refresh")]
    assert logs == [f"{line}: this run wrote nothing; launch it again when that refresh has finished"], logs
    assert not [e for e in result.all_events if e.is_step_start]  # no asset ran
    assert _state(store) == before  # the store untouched


def _chain(error) -> list[str]:
    out = []
    while error is not None:
        out.append(error.message.strip())
        error = error.cause
    return out


def test_the_code_locations_materialisation_waits_for_no_one_and_writes_nothing(fresh):
    """What the UI's "Materialize" runs: the code location's definitions (``dagster asset
    materialize``, default executor: a process per step).  While a refresh holds the lock it
    exits non-zero naming the holder, the store untouched; once the lock is free it succeeds."""
    store, corpus = fresh
    env = dict(os.environ, PYTHONPATH=str(REPO), VECTREE_STORE=str(store.root),
               DAGSTER_HOME=str(store.dagster_home), VECTREE_CORPUS=str(corpus))
    cmd = [str(BIN / "dagster"), "asset", "materialize", "-m", "vectree.pipelines.definitions",
           "--select", "corpus_manifest"]
    before = _state(store)
    with Holder(store.root, "refresh:abc123") as pid:
        busy = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert busy.returncode != 0
    assert f"another refresh is running, pid {pid}" in busy.stdout + busy.stderr, (busy.stdout + busy.stderr)[-3000:]
    assert _state(store) == before
    free = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert free.returncode == 0, (free.stdout + free.stderr)[-3000:]
    assert "using multiprocess executor" in free.stdout + free.stderr  # its step ran in a process of its own
    assert {r["doc_id"].split("-")[0] for r in store.read_manifest()} == {"glacier", "soil"}
    assert store.writer_holder() is None


# ---- a refresh's own runs go on under its lock -----------------------------------------------------
@pytest.mark.parametrize("executor", ["in_process", "multiprocess"])
def test_a_refresh_runs_its_jobs_under_its_own_lock(fresh, executor, monkeypatch):
    from vectree.cli import run_ingest
    from vectree.pipelines.refresh import instance_for

    store, corpus = fresh
    monkeypatch.setenv("VECTREE_EXECUTOR", executor)
    monkeypatch.setenv("VECTREE_WORKERS", "2")
    old = store.current_snapshot_id()
    _, report, _ = run_ingest([str(corpus)], str(store.root), quiet=True)
    assert not report.failed_runs, report.failed_runs
    assert {r["doc_id"].split("-")[0]: r["status"] for r in store.view().read_catalog()} == \
        {"glacier": "ok", "soil": "ok"}
    assert store.current_snapshot_id() != old
    runs = instance_for(store).get_runs()
    latest = runs[0].tags["vectree/refresh"]
    mine = [r for r in runs if r.tags.get("vectree/refresh") == latest]
    assert {r.job_name for r in mine} == {"scan_job", "paper_job", "corpus_job"}
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in mine)
    assert store.writer_holder() is None  # released with the refresh
