"""Daemon-driven refresh: the corpus sensor under the real ``dagster-daemon``, end to end.

The slow test starts ``dagster-daemon run`` and ``vectree serve`` as their own processes on a
temporary store whose Dagster home is the store's own (``<store>/dagster``, made by
``instance_for`` as for ``make ui``), switches the sensor on with ``dagster sensor start``, drops a
PDF into the watched folder, and waits until the running service answers a search from it (the
sensor's paper run, then the corpus run that ``corpus_after_papers`` requests, which publishes a
snapshot); then it removes the PDF and waits until the paper has left the service's answers.
The fast tests below it pin the sensor bugs that only showed under the daemon.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import dagster as dg
import pytest

from tests import pdfmaker
from vectree.assets.resources import VectreeStore
from vectree.pipelines.automation import corpus_sensors
from vectree.pipelines.definitions import defs
from vectree.pipelines.jobs import run_tags
from vectree.pipelines.refresh import instance_for
from vectree.retrieval.config import SettingsError, load_settings
from vectree.retrieval.corpus import scan
from vectree.retrieval.store import Store

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the environment's console scripts: dagster, dagster-daemon
GLACIER = [
    ("1 Introduction", "Alpine glaciers lose mass every summer because air temperatures rise and snowfall declines."),
    ("2 Methods", "Ablation stakes were drilled into the ice of the Rhone glacier and read every two weeks."),
    ("3 Results", "The glacier surface lowered by 1.4 metres of ice per year between 2010 and 2020."),
]
QUERY = "how fast does the Rhone glacier lose ice"
# bounded waits, sized for a loaded 2-core machine (each run imports Dagster, torch and the model)
APPEAR_S = 240
LEAVE_S = 150


# ---- processes ------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session(sid: int) -> list[int]:
    """Every live process of session ``sid``: the daemon's code servers and run workers stay in the
    daemon's session even when their parent died first and they were re-parented."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) == sid:
                    pids.append(int(entry.name))
            except OSError:  # gone meanwhile
                pass
    return pids


def _stop(proc: subprocess.Popen) -> list[int]:
    """Stop ``proc`` and everything it started (it leads its own session); returns the pids left."""
    sid = proc.pid
    for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        for pid in _session(sid):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()  # reap our own child, or it stays a zombie in the session
            if not _session(sid):
                return []
            time.sleep(0.2)
    proc.poll()
    return _session(sid)


class Processes:
    def __init__(self, logs: Path):
        self.logs = logs
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")
        # a session of its own, so that teardown finds its children and grandchildren
        proc = subprocess.Popen(args, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def tail(self, name: str, n: int = 4000) -> str:
        path = self.logs / f"{name}.log"
        return path.read_bytes()[-n:].decode(errors="replace") if path.exists() else ""

    def stop_all(self) -> dict[str, list[int]]:
        return {name: left for name, proc in self.procs.items() if (left := _stop(proc))}


def _get(url: str, timeout: float = 60.0) -> tuple[int, dict, dict]:
    """Status, headers (lower-case names) and JSON body; status 0 when nothing answered (not
    listening yet, or too slow on a loaded machine: the waits below just look again)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, json.loads(exc.read() or b"{}")
    except OSError:  # refused, reset, timed out
        return 0, {}, {}


def _wait(condition, timeout: float, what: str, explain) -> float:
    """Poll ``condition`` until it holds; returns the seconds it took, or fails saying why."""
    started = time.monotonic()
    while True:
        if condition():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            pytest.fail(f"{what}: not within {timeout:.0f} s\n{explain()}")
        time.sleep(1.0)


def _runs(home: Path) -> list[dg.DagsterRun]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return list(reversed(instance.get_runs()))


def _describe(home: Path, procs: Processes) -> str:
    runs = "\n".join(f"  {r.job_name} {r.status.value} partition={r.tags.get('dagster/partition')} "
                     f"sensor={r.tags.get('dagster/sensor_name')}" for r in _runs(home))
    return f"runs:\n{runs}\n--- daemon log (tail) ---\n{procs.tail('daemon')}\n--- serve log ---\n{procs.tail('serve', 1500)}"


# ---- the end-to-end test --------------------------------------------------------------------------
@pytest.mark.slow
def test_the_daemon_ingests_a_dropped_pdf_into_the_running_service_and_drops_a_removed_one(tmp_path):
    corpus, outside, logs = tmp_path / "corpus", tmp_path / "outside", tmp_path / "logs"
    for d in (corpus, outside, logs):
        d.mkdir()
    store = Store(tmp_path / "store")
    # the store's own Dagster home, made as `vectree ingest` and `make ui` make it (its dagster.yaml
    # is what is tested); made before the daemon and the CLI start, which would both create its
    # SQLite tables at once otherwise
    instance_for(store).dispose()
    home = store.dagster_home
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text("load_from:\n  - python_module:\n      module_name: vectree.pipelines.definitions\n"
                         f"      attribute: defs\n      working_directory: {REPO}\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "DAGSTER_HOME": str(home), "VECTREE_STORE": str(store.root),
           "VECTREE_CORPUS": str(corpus), "VECTREE_SENSOR_INTERVAL": "1"}
    for name in ("VECTREE_CONFIG", "VECTREE_SERVICE_URL", "VECTREE_API_TOKEN", "OPENAI_BASE_URL"):
        env.pop(name, None)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    procs = Processes(logs)
    started = time.monotonic()
    try:
        daemon = procs.start("daemon", [str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], env)
        serve = procs.start("serve", [sys.executable, "-m", "vectree.cli", "serve", "--port", str(port),
                                      "--store", str(store.root)], env)
        # sensors start stopped (as Dagster's do); this is how a user switches one on without the UI
        # (it loads the code location itself: tens of seconds on a busy machine, so it runs meanwhile)
        switch = procs.start("switch", [str(BIN / "dagster"), "sensor", "start", "corpus_sensor",
                                        "-w", str(workspace)], env)
        # drop a PDF: written elsewhere and moved in, as a finished download lands
        pdf = pdfmaker.write_paper(outside / "rhone-glacier.pdf", "Mass Loss of the Rhone Glacier", GLACIER)
        [doc_id] = {f.doc_id for f in scan([outside])}
        dropped = time.monotonic()
        os.replace(pdf, corpus / pdf.name)

        _wait(lambda: _get(url + "/health", timeout=10)[0] == 200 if serve.poll() is None else pytest.fail(
            f"vectree serve exited\n{procs.tail('serve')}"), 120, "vectree serve answers /health",
            lambda: procs.tail("serve"))
        # the service is up before anything is published, so what it answers later it did not start with
        health_before = _get(url + "/health")[2]
        assert (health_before["snapshot"], health_before["papers_total"]) == (None, 0), health_before
        assert switch.wait(timeout=180) == 0 and "Started sensor corpus_sensor" in procs.tail("switch"), \
            procs.tail("switch")

        def served() -> bool:
            status, _, body = _get(f"{url}/search?q={urllib.request.quote(QUERY)}&k=3")
            return status == 200 and [hit["doc_id"] for hit in body["results"]][:1] == [doc_id]

        _wait(served, APPEAR_S, f"the service answers from {doc_id}", lambda: _describe(home, procs))
        appear_s = time.monotonic() - dropped
        status, headers, body = _get(f"{url}/search?q={urllib.request.quote(QUERY)}&k=3")
        first_snapshot = headers["x-vectree-snapshot"]
        assert body["results"][0]["title"] == "Mass Loss of the Rhone Glacier"
        assert _get(f"{url}/papers/{doc_id}/pages/1")[2]["pages"][0]["text"].count("Rhone") >= 1
        assert serve.poll() is None and daemon.poll() is None  # no restart: the same processes throughout

        runs = _runs(home)
        papers = [r for r in runs if r.job_name == "paper_job"]
        assert [(r.tags["dagster/partition"], r.status) for r in papers] == [(doc_id, dg.DagsterRunStatus.SUCCESS)]
        assert papers[0].tags["dagster/sensor_name"] == "corpus_sensor"
        assert papers[0].tags["vectree/trigger"] == "sensor"
        after = [r for r in runs if r.tags.get("dagster/sensor_name") == "corpus_after_papers"]
        assert after and after[-1].job_name == "corpus_job" and after[-1].status == dg.DagsterRunStatus.SUCCESS
        assert all(r.tags.get("vectree/trigger") != "cli" for r in runs)  # nobody ran `vectree ingest`

        # remove it: the sensor drops the partition and requests the corpus run that republishes
        (corpus / pdf.name).unlink()

        def gone() -> bool:
            status, _, papers_body = _get(url + "/papers")
            hits = _get(f"{url}/search?q={urllib.request.quote(QUERY)}&k=3")
            return (status == 200 and doc_id not in {p["doc_id"] for p in papers_body["papers"]}
                    and hits[0] == 200 and doc_id not in {h["doc_id"] for h in hits[2]["results"]})

        leave_s = _wait(gone, LEAVE_S, f"{doc_id} leaves the service's answers", lambda: _describe(home, procs))
        print(f"\ndaemon test: start to drop {dropped - started:.0f} s, served after {appear_s:.0f} s, "
              f"gone after {leave_s:.0f} s")
        status, headers, _ = _get(url + "/papers")
        assert headers["x-vectree-snapshot"] != first_snapshot
        assert _get(f"{url}/papers/{doc_id}/pages/1")[0] == 404
        health = _get(url + "/health")[2]
        assert (health["papers"], health["papers_total"]) == (0, 0)
        assert health["snapshot"] != health_before["snapshot"]
        assert serve.poll() is None and daemon.poll() is None

        # the service switched at the publish, the corpus run's last step: let the run finish
        _wait(lambda: all(r.is_finished for r in _runs(home)), 60, "the removal's corpus run finishes",
              lambda: _describe(home, procs))
        runs = _runs(home)
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), _describe(home, procs)
        assert [r.tags.get("dagster/sensor_name") for r in runs if r.job_name == "corpus_job"][-1] == "corpus_sensor"
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert doc_id not in instance.get_dynamic_partitions("papers")
    finally:
        stopping = time.monotonic()
        left = procs.stop_all()
        print(f"daemon test: teardown {time.monotonic() - stopping:.0f} s")
    assert not left, f"processes left after teardown: {left}"


# ---- what the daemon showed, pinned without it -----------------------------------------------------
@pytest.fixture()
def watched(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    store = Store(tmp_path / "store")
    instance = instance_for(store)
    resource = VectreeStore(store_root=str(store.root), corpus_dirs=[str(corpus)])
    yield corpus, store, instance, resource
    instance.dispose()


def _tick(instance, resource, cursor=None) -> dg.SensorResult:
    """One evaluation of the corpus sensor, its partition requests applied as the daemon does."""
    sensor = defs.resolve_sensor_def("corpus_sensor")
    # (a context manager: the store resource is one, it holds the writer lock during a run)
    with dg.build_sensor_context(instance=instance, resources={"vectree": resource}, cursor=cursor,
                                 definitions=defs) as context:
        result = sensor(context)
    for request in result.dynamic_partitions_requests or []:
        if isinstance(request, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
    return result


def test_the_sensor_writes_the_manifest_its_paper_runs_read(watched):
    # under the daemon, a PDF added after the last corpus run failed its paper run with "not in the
    # corpus manifest": paper_job does not rescan, and the sensor had not recorded its scan
    corpus, store, instance, resource = watched
    pdfmaker.write_paper(corpus / "glacier.pdf", "Mass Loss of the Rhone Glacier", GLACIER)
    result = _tick(instance, resource)
    [request] = result.run_requests
    assert request.job_name == "paper_job"
    assert [r["doc_id"] for r in store.read_manifest()] == [request.partition_key]
    assert [e.asset_key for e in result.asset_events] == [dg.AssetKey("corpus_manifest")]
    # the runs it requests execute in one process, as `vectree ingest` does
    assert request.run_config == {"execution": {"config": {"in_process": {}}}}
    # an unchanged corpus: no write, no event
    again = _tick(instance, resource, result.cursor)
    assert not again.asset_events


def test_the_first_look_at_an_unchanged_corpus_requests_nothing(watched):
    corpus, store, instance, resource = watched
    result = _tick(instance, resource)
    assert not result.run_requests and result.cursor
    pdfmaker.write_paper(corpus / "glacier.pdf", "Mass Loss of the Rhone Glacier", GLACIER)
    assert [r.job_name for r in _tick(instance, resource, result.cursor).run_requests] == ["paper_job"]


def test_a_corpus_that_returns_to_an_earlier_state_gets_new_run_keys(watched):
    # Dagster never launches a run key twice: keyed by the set of papers alone, removing the only
    # paper reused the key of an earlier empty corpus, and the paper never left the service
    corpus, store, instance, resource = watched
    pdfmaker.write_paper(corpus / "dune.pdf", "Dune Migration on Mars", pdfmaker.GOOD_SECTIONS)
    one = _tick(instance, resource)
    assert [r.job_name for r in one.run_requests] == ["paper_job"]
    os.replace(corpus / "dune.pdf", corpus.parent / "dune.pdf")
    none = _tick(instance, resource, one.cursor)
    [first] = none.run_requests
    assert first.job_name == "corpus_job"
    pdfmaker.write_paper(corpus / "glacier.pdf", "Mass Loss of the Rhone Glacier", GLACIER)
    added = _tick(instance, resource, none.cursor)
    [paper] = added.run_requests
    aside = corpus.parent / "glacier.pdf"
    os.replace(corpus / "glacier.pdf", aside)
    back = _tick(instance, resource, added.cursor)
    [again] = back.run_requests
    assert again.job_name == "corpus_job" and again.run_key != first.run_key
    # the same PDF put back runs again too
    os.replace(aside, corpus / "glacier.pdf")
    restored = _tick(instance, resource, back.cursor)
    assert [r.partition_key for r in restored.run_requests] == [paper.partition_key]
    assert restored.run_requests[0].run_key != paper.run_key
    # while the corpus stays as it is, the key stays too: a run in flight is not requested twice
    assert _tick(instance, resource, restored.cursor).run_requests[0].run_key == restored.run_requests[0].run_key


def test_a_paper_run_in_flight_is_not_requested_again_when_the_corpus_changes(watched):
    corpus, store, instance, resource = watched
    pdfmaker.write_paper(corpus / "glacier.pdf", "Mass Loss of the Rhone Glacier", GLACIER)
    first = _tick(instance, resource)
    [glacier] = [r.partition_key for r in first.run_requests]
    # the daemon has started that run; meanwhile another PDF lands
    instance.add_run(dg.DagsterRun(job_name="paper_job", status=dg.DagsterRunStatus.STARTED,
                                   tags={"dagster/partition": glacier}))
    pdfmaker.write_paper(corpus / "dune.pdf", "Dune Migration on Mars", pdfmaker.GOOD_SECTIONS)
    second = _tick(instance, resource, first.cursor)
    assert [r.partition_key.split("-")[0] for r in second.run_requests] == ["dune"]


def test_the_sensor_waits_while_a_cli_refresh_holds_the_store(watched):
    corpus, store, instance, resource = watched
    pdfmaker.write_paper(corpus / "glacier.pdf", "Mass Loss of the Rhone Glacier", GLACIER)
    with store.writer_lock():
        result = _tick(instance, resource)
    assert not result.run_requests and "another refresh is running" in result.skip_reason.skip_message
    assert result.cursor is None  # nothing was seen: the next tick looks again
    assert not store.read_manifest()
    assert len(_tick(instance, resource).run_requests) == 1


def test_the_sensor_interval_is_a_setting(monkeypatch):
    monkeypatch.setenv("VECTREE_SENSOR_INTERVAL", "5")
    assert load_settings().sensor_interval == 5
    assert [s.minimum_interval_seconds for s in corpus_sensors(load_settings().sensor_interval)] == [5, 5, 5]
    # the run-status sensors never look less often than Dagster's default for them
    assert [s.minimum_interval_seconds for s in corpus_sensors(600)] == [600, 30, 30]
    monkeypatch.setenv("VECTREE_SENSOR_INTERVAL", "0")
    with pytest.raises(SettingsError, match="VECTREE_SENSOR_INTERVAL"):
        load_settings()


def test_a_failed_paper_run_still_leads_to_the_rebuild(watched):
    # only a successful paper run used to trigger the corpus run: a batch whose last run failed
    # published none of the papers that had not
    corpus, store, instance, resource = watched
    # a paper run that failed as a run (its worker died, say), reported the way a run worker does
    run = instance.add_run(dg.DagsterRun(job_name="paper_job", status=dg.DagsterRunStatus.STARTED,
                                         tags={**run_tags("sensor"), "dagster/partition": "ghost-0123456789"}))
    instance.report_run_failed(run)
    failed = instance.get_run_by_id(run.run_id)
    assert failed.status == dg.DagsterRunStatus.FAILURE
    sensor = defs.resolve_sensor_def("corpus_after_failed_papers")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING

    def evaluate(run):
        event = next(iter(instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)))
        return sensor(dg.build_run_status_sensor_context(
            sensor_name=sensor.name, dagster_instance=instance, dagster_run=run, dagster_event=event.dagster_event))

    request = evaluate(failed)
    assert isinstance(request, dg.RunRequest) and request.tags["vectree/trigger"] == "sensor"
    assert defs.resolve_sensor_def("corpus_after_failed_papers").job_name == "corpus_job"
    instance.add_run_tags(failed.run_id, {"vectree/trigger": "cli"})  # the CLI's runs rebuild themselves
    assert isinstance(evaluate(instance.get_run_by_id(failed.run_id)), dg.SkipReason)
