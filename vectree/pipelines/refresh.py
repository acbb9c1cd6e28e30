"""Corpus refresh: which partitions to add, remove and (re)materialise, shared by the sensor,
the schedule and the in-process ``vectree ingest``.

``vectree ingest`` runs the very same asset definitions with Dagster's ``materialize`` against an
instance that lives under the store (``<store>/dagster``), so the Dagster UI started with
``DAGSTER_HOME=<store>/dagster`` shows the runs that the CLI made.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable

import dagster as dg

from vectree.assets.partitions import FAILED_KEY, MODEL, SCOPE_TAG, papers_partitions
from vectree.assets.resources import VectreeStore, refresh_holder
from vectree.retrieval.config import Settings, load_settings, set_dagster_env
from vectree.retrieval.store import Store, StoreError

from .pulled import record_pulled_papers
from .jobs import REFRESH_TAG, corpus_job, paper_job, run_tags, scan_job

QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


@dataclass
class RefreshPlan:
    """What a refresh must do to bring the store in line with the corpus."""

    add: list[str] = field(default_factory=list)  # new partitions
    remove: list[str] = field(default_factory=list)  # partitions whose PDFs are gone
    run: list[str] = field(default_factory=list)  # partitions to materialise
    outdated: list[str] = field(default_factory=list)  # papers parsed by an older parser (run again)

    @property
    def changed(self) -> bool:
        return bool(self.add or self.remove or self.run)


def instance_for(store: Store) -> dg.DagsterInstance:
    """The persistent Dagster instance that belongs to ``store``."""
    home = store.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    yaml = home / "dagster.yaml"
    if not yaml.exists():
        # telemetry off: there is no network to send it to; one run at a time, because the store
        # has one writer (two corpus runs at once could publish the older catalog last)
        yaml.write_text("telemetry:\n  enabled: false\nconcurrency:\n  runs:\n    max_concurrent_runs: 1\n")
    return dg.DagsterInstance.from_config(str(home))


def per_paper_asset_keys(defs: dg.Definitions) -> list[dg.AssetKey]:
    return paper_asset_keys(defs.resolve_asset_graph())


def paper_asset_keys(graph) -> list[dg.AssetKey]:
    """The per-paper (``papers``-partitioned) asset keys of an asset graph, sorted."""
    return sorted(
        (k for k in graph.get_all_asset_keys() if graph.get(k).partitions_def == papers_partitions),
        key=lambda k: k.to_user_string(),
    )


def corpus_asset_keys(defs: dg.Definitions) -> tuple[list[dg.AssetKey], list[dg.AssetKey]]:
    """Unpartitioned assets split into those upstream of the per-paper assets (the manifest, a
    model) and those downstream of them (catalog, indexes), each in dependency order."""
    graph = defs.resolve_asset_graph()
    paper_keys = set(per_paper_asset_keys(defs))
    upstream_of_papers = set().union(*(graph.get_ancestor_asset_keys(k) for k in paper_keys)) if paper_keys else set()
    before, after = [], []
    for level in graph.toposorted_asset_keys_by_level:
        for k in sorted(level, key=lambda k: k.to_user_string()):
            node = graph.get(k)
            if node.partitions_def is not None or not node.is_materializable:
                continue
            (before if k in upstream_of_papers else after).append(k)
    return before, after


def plan_refresh(
    doc_ids: Iterable[str],
    existing_partitions: Iterable[str],
    materialized: dict[dg.AssetKey, set[str]],
    *,
    force: bool = False,
    failed: Iterable[str] = (),
    outdated: Iterable[str] = (),
) -> RefreshPlan:
    """Compare the corpus with the instance: new papers are added and run, vanished ones removed,
    papers with any per-paper asset not yet materialised are run again, and so are the ``failed``
    ones (a paper that failed inside a batch run: the batch's range is materialised as a whole)
    and the ``outdated`` ones (parsed by an older parser: :func:`outdated_papers`)."""
    wanted = set(doc_ids)
    existing = set(existing_partitions)
    failed = set(failed)
    plan = RefreshPlan(add=sorted(wanted - existing), remove=sorted(existing - wanted),
                       outdated=sorted(set(outdated) & wanted))
    for doc_id in sorted(wanted):
        # a new partition always runs: a paper removed and then restored (or a PDF put back) still
        # has the materialisations of its old partition, but its artefacts were deleted with it
        if (force or doc_id in plan.add or doc_id in failed or doc_id in plan.outdated
                or any(doc_id not in keys for keys in materialized.values())):
            plan.run.append(doc_id)
    return plan


def outdated_papers(store: Store, doc_ids: Iterable[str]) -> list[str]:
    """Papers whose record says another parser version than this one (``retrieval.pdf.PARSER_VERSION``):
    a parser fix (``pdf-2`` expands ligatures, so words with ff/fi/fl become searchable) reaches
    papers ingested before it on the next refresh, without ``--force``."""
    from vectree.retrieval.pdf import PARSER_VERSION

    out = []
    for doc_id in doc_ids:
        try:
            version = store.read_record(doc_id).get("parser_version")
        except StoreError:  # no record yet: a new paper, which runs anyway
            continue
        if version != PARSER_VERSION:
            out.append(doc_id)
    return out


def materialized_partitions(instance: dg.DagsterInstance, keys: list[dg.AssetKey]) -> dict[dg.AssetKey, set[str]]:
    return {k: set(instance.get_materialized_partitions(k)) for k in keys}


def _root_cause(error) -> str:
    """The innermost error of a Dagster step failure (the wrapper only names the step)."""
    step = error.message.strip().rstrip(":")
    while error.cause is not None:
        error = error.cause
    return f"{step}: {error.message.strip()}"


@dataclass
class RefreshReport:
    plan: RefreshPlan
    failed_runs: dict[str, str] = field(default_factory=dict)  # doc_id -> error


def bind_jobs(defs: dg.Definitions, resource: VectreeStore, llm=None) -> dg.Definitions:
    """``defs``' assets and jobs bound to ``resource`` (a job's resources cannot be swapped per run,
    and the CLI's store is not the environment's)."""
    return dg.Definitions(assets=list(defs.assets or []), asset_checks=list(defs.asset_checks or []),
                          jobs=[scan_job, paper_job, corpus_job], resources={"vectree": resource, "llm": llm})


def _execute(defs: dg.Definitions, job, keys, **kwargs) -> dg.ExecuteInProcessResult:
    """Run ``keys`` (a subset of ``job``'s assets) in-process as a run of the named job."""
    return defs.resolve_job_def(job.name).execute_in_process(
        asset_selection=keys, run_config=QUIET_RUN_CONFIG, **kwargs)


def refresh(
    defs: dg.Definitions,
    resource: VectreeStore,
    *,
    llm: "LLMResource | None" = None,
    instance: dg.DagsterInstance | None = None,
    force: bool = False,
    on_paper: Callable[[str, int, int], None] | None = None,
    tags: dict[str, str] | None = None,
    settings: Settings | None = None,
) -> RefreshReport:
    """Run the pipeline in-process: scan, sync partitions, materialise per-paper assets for new or
    stale papers, then the corpus-level assets (catalog, indexes).

    The runs are the named jobs of ``vectree.pipelines.jobs`` (``scan_job``, one ``paper_job`` run
    a paper, ``corpus_job``), tagged with ``tags`` (default: trigger ``cli`` and the source folders)
    and one refresh id, so the Dagster UI shows what started them and which belong together.

    A paper whose run fails is reported and skipped; the others go on.  The last corpus-level
    asset publishes one store snapshot atomically, so an interrupted refresh leaves the previous
    catalog, trees and indexes serving together.  One refresh per store at a time: a second one
    raises :class:`~vectree.retrieval.store.StoreBusyError` ("another refresh is running, pid N").
    The lock is taken in the name of the refresh id (``refresh:<id>``); the runs tagged with it
    share it wherever they execute, and any other Dagster run fails at once while it is held
    (``VectreeStore.yield_for_execution``).
    ``llm`` defaults to the environment's endpoint (``LLMResource.from_settings``).

    Papers run in batches: one ``paper_job`` run per contiguous range of at most
    ``settings.batch_size`` paper partitions.  ``settings.executor`` says where the steps run: in
    this process (the default), in ``settings.workers`` processes (Dagster's multiprocess
    executor) or on Celery workers; with either of the last two, ``settings.workers`` batch runs go
    at once (:mod:`vectree.pipelines.executors`).
    """
    from vectree.assets.llm_resource import LLMResource

    set_dagster_env()
    store = resource.store
    settings = settings or load_settings(resource.store_root)
    # the refresh id first: the lock is taken in its name, and this refresh's runs (tagged with
    # it) go on under the lock wherever they run (VectreeStore.yield_for_execution)
    tags = {**(tags or run_tags("cli", sources=resource.sources())),
            REFRESH_TAG: (tags or {}).get(REFRESH_TAG) or uuid.uuid4().hex[:12]}
    with store.writer_lock(holder=refresh_holder(tags[REFRESH_TAG])), _stop_on_signals() as stop:
        return _refresh_locked(defs, resource, store, llm=llm, instance=instance, force=force, on_paper=on_paper,
                               stop=stop, tags=tags, settings=settings)


class RefreshInterrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT stopped a refresh; nothing was published, the previous snapshot serves.
    A ``BaseException`` (like ``KeyboardInterrupt``) so that no ``except Exception`` swallows it."""

    def __str__(self) -> str:
        return "refresh interrupted: nothing was published, the previous snapshot keeps serving"


def _interrupted(error) -> bool:
    while error is not None:
        if error.cls_name in ("DagsterExecutionInterruptedError", "KeyboardInterrupt", "RefreshInterrupted"):
            return True
        error = error.cause
    return False


# after a stop signal: how often the main thread is interrupted again until it has stopped,
# and how long before the process exits hard (nothing is half-published: every write is atomic)
_REINTERRUPT_S = 0.5
_HARD_EXIT_S = 15.0


@contextmanager
def _stop_on_signals():
    """SIGTERM and SIGINT stop the refresh within seconds.

    Dagster swaps the SIGINT/SIGTERM handlers while it runs: a signal that lands inside a step
    fails that step (and the loop would go on with the next paper), one that lands between steps
    is swallowed.  So the signal is noticed below the handlers: the C-level handler writes every
    signal number to a wakeup fd whatever Python handler is installed, a watcher thread reads it,
    sets ``stop`` and interrupts the main thread every half second until it has left the
    refresh (a step then fails as interrupted, or our handler raises); as a last resort it exits
    the process.  Nothing is lost either way: the previous snapshot was never touched.
    """
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    import _thread
    import socket

    done = threading.Event()
    rsock, wsock = socket.socketpair()
    wsock.setblocking(False)

    def handler(signum, _frame):
        stop.set()
        raise RefreshInterrupted(signal.Signals(signum).name)

    def watch():
        while not done.is_set():
            try:
                data = rsock.recv(64)
            except OSError:
                return
            if done.is_set() or not data:
                return
            if not {signal.SIGTERM, signal.SIGINT} & set(data):
                continue
            stop.set()
            deadline = time.monotonic() + _HARD_EXIT_S
            while not done.wait(_REINTERRUPT_S):
                if time.monotonic() > deadline:
                    os._exit(143)
                _thread.interrupt_main(signal.SIGINT)
            return

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    old_fd = signal.set_wakeup_fd(wsock.fileno(), warn_on_full_buffer=False)
    watcher = threading.Thread(target=watch, name="vectree-stop-watcher", daemon=True)
    watcher.start()
    try:
        yield stop
    finally:
        done.set()
        signal.set_wakeup_fd(old_fd)
        for s, h in old.items():
            signal.signal(s, h)
        wsock.close()
        rsock.close()
        if stop.is_set():
            raise RefreshInterrupted("interrupted")


# the run tags Dagster reads a partition range from (a backfill's range run carries the same)
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def paper_batches(run: list[str], partitions: list[str], batch_size: int, min_batches: int = 1) -> list[list[str]]:
    """``run`` cut into batches a range run can cover: each a contiguous slice of ``partitions``
    (their order in the instance) holding only papers to run, at most ``batch_size`` long, and
    at least ``min_batches`` of them when there are enough papers (so every worker gets one)."""
    wanted = set(run)
    order = [p for p in partitions if p in wanted] + sorted(wanted - set(partitions))
    position = {p: i for i, p in enumerate(partitions)}
    size = max(1, min(batch_size, -(-len(order) // max(1, min_batches)))) if order else 1
    batches: list[list[str]] = []
    for doc in order:
        last = batches[-1] if batches else None
        contiguous = (last is not None and doc in position and last[-1] in position
                      and position[doc] == position[last[-1]] + 1)
        if last is not None and contiguous and len(last) < size:
            last.append(doc)
        else:
            batches.append([doc])
    return batches


def batch_tags(batch: list[str]) -> dict[str, str]:
    """A single paper's partition tag, or the range tags of a batch."""
    if len(batch) == 1:
        return {"dagster/partition": batch[0]}
    return {RANGE_START_TAG: batch[0], RANGE_END_TAG: batch[-1]}


def _run_failures(events, batch: list[str], success: bool) -> tuple[dict[str, str], list]:
    """Why papers of a batch run failed: the papers a batch asset reported as failed (the others
    were built), or every paper of the batch when the run itself failed."""
    failures: dict[str, str] = {}
    step_errors = []
    for event in events:
        if event.is_step_failure and event.event_specific_data and event.event_specific_data.error:
            step_errors.append(event.event_specific_data.error)
        elif event.event_type_value == "ASSET_OBSERVATION":
            obs = event.event_specific_data.asset_observation
            reason = obs.metadata.get(FAILED_KEY)
            if reason is not None and obs.partition:
                failures.setdefault(obs.partition, f"{obs.asset_key.to_user_string()}: {reason.value}")
    if not success:
        why = _root_cause(step_errors[0]) if step_errors else "run failed"
        for doc in batch:
            failures.setdefault(doc, why)
    return failures, step_errors


def execute_batch(*, store_root: str, corpus_dirs: tuple[str, ...], max_pages: int, executor: str,
                  run_config: dict, asset_keys: list[str], batch: list[str], tags: dict[str, str]):
    """One ``paper_job`` run over ``batch`` on ``executor``, launched with :func:`dagster.execute_job`
    against the store's instance; runs in a process of its own (see ``_refresh_locked``).
    Returns (failures, interrupted)."""
    from .executors import reconstructable_job

    set_dagster_env()
    resource = VectreeStore(store_root=store_root, corpus_dirs=list(corpus_dirs), max_pages=max_pages)
    instance = instance_for(resource.store)
    with dg.execute_job(reconstructable_job(paper_job.name, resource, executor), instance=instance,
                        run_config=run_config, tags=tags,
                        asset_selection=[dg.AssetKey.from_user_string(k) for k in asset_keys],
                        raise_on_error=False) as result:
        failures, errors = _run_failures(result.all_events, batch, result.success)
    return failures, any(_interrupted(err) for err in errors)


def _refresh_locked(defs, resource, store, *, llm, instance, force, on_paper, stop, tags, settings) -> RefreshReport:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from vectree.assets.llm_resource import LLMResource

    from .executors import executor_run_config, reconstructable_job

    instance = instance or instance_for(store)
    record_pulled_papers(instance, store, per_paper_asset_keys(defs))  # a store on object storage: see pulled.py
    bound = bind_jobs(defs, resource, llm or LLMResource.from_settings(settings))
    scan_key = dg.AssetKey("corpus_manifest")
    before, after = corpus_asset_keys(defs)
    # the scan always runs; other upstream assets (a trained model) only when they never ran
    first = [scan_key] + [k for k in before if k != scan_key and instance.get_latest_materialization_event(k) is None]
    # so does a model downstream (the reranker): reporting it loads it, a second a refresh for nothing
    graph = defs.resolve_asset_graph()
    after = [k for k in after if graph.get(k).tags.get(SCOPE_TAG) != MODEL[SCOPE_TAG]
             or instance.get_latest_materialization_event(k) is None]
    _execute(bound, scan_job, first, instance=instance, tags=tags)
    doc_ids = sorted({r["doc_id"] for r in store.read_manifest()})
    paper_keys = per_paper_asset_keys(defs)
    earlier_failures = store.read_run_failures()
    plan = plan_refresh(
        doc_ids,
        instance.get_dynamic_partitions(papers_partitions.name),
        materialized_partitions(instance, paper_keys),
        force=force,
        failed=[d for d in earlier_failures if d in doc_ids],
        outdated=outdated_papers(store, doc_ids),
    )
    if plan.add:
        instance.add_dynamic_partitions(papers_partitions.name, plan.add)
    report = RefreshReport(plan=plan)
    parallel = settings.executor != "in_process"
    batches = paper_batches(plan.run, instance.get_dynamic_partitions(papers_partitions.name), settings.batch_size,
                            min_batches=settings.workers if parallel else 1)
    done = 0

    def run_batch(batch: list[str]):
        """One in-process ``paper_job`` run over ``batch``: (failures, interrupted)."""
        result = bound.resolve_job_def(paper_job.name).execute_in_process(
            asset_selection=paper_keys, run_config=QUIET_RUN_CONFIG, instance=instance, raise_on_error=False,
            tags={**tags, **batch_tags(batch)})
        failures, errors = _run_failures(result.all_events, batch, result.success)
        return failures, any(_interrupted(err) for err in errors)

    launch = dict(store_root=str(resource.store_root), corpus_dirs=tuple(resource.corpus_dirs),
                  max_pages=resource.max_pages, executor=settings.executor,
                  run_config=executor_run_config(settings), asset_keys=[k.to_user_string() for k in paper_keys])

    def settle(batch: list[str], outcome) -> None:
        nonlocal done
        if isinstance(outcome, BaseException):
            failures, interrupted = {d: f"{type(outcome).__name__}: {outcome}" for d in batch}, False
        else:
            failures, interrupted = outcome
        if stop.is_set() or interrupted:
            raise RefreshInterrupted("interrupted")
        report.failed_runs.update(failures)  # a broken paper never stops the others
        done += len(batch)

    if parallel:
        # each batch run is orchestrated from its own process: Dagster's run set-up reconfigures
        # logging (logging.config.dictConfig), and two runs started from threads of one process
        # deadlocked on the logging locks
        ctx = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=min(settings.workers, len(batches)) or 1, mp_context=ctx)
        try:
            futures = [(b, pool.submit(execute_batch, batch=b, tags={**tags, **batch_tags(b)}, **launch))
                       for b in batches]
            for batch, future in futures:
                if on_paper:
                    on_paper(batch[0], done, len(plan.run))
                try:
                    outcome = future.result()
                except Exception as exc:
                    outcome = exc
                settle(batch, outcome)
        except BaseException:
            # interrupted (or a batch's step waits for a worker that died): the batch processes
            # must not outlive the refresh, which publishes nothing
            pool.shutdown(wait=False, cancel_futures=True)
            for child in multiprocessing.active_children():
                child.kill()
            raise
        pool.shutdown(wait=True)
    else:
        for batch in batches:
            if on_paper:
                on_paper(batch[0], done, len(plan.run))
            try:
                outcome = run_batch(batch)
            except Exception as exc:  # a broken batch must never stop the others
                outcome = exc
            settle(batch, outcome)
            if stop.is_set():
                raise RefreshInterrupted("interrupted")
    # why runs failed, for the published status (earlier failures of papers not rerun stand)
    failures = {d: e for d, e in earlier_failures.items() if d in doc_ids and d not in plan.run}
    store.write_run_failures({**failures, **report.failed_runs})
    if after:
        if parallel:
            with dg.execute_job(reconstructable_job(corpus_job.name, resource, settings.executor),
                                instance=instance, run_config=executor_run_config(settings), tags=tags,
                                asset_selection=after, raise_on_error=True):
                pass
        else:
            _execute(bound, corpus_job, after, instance=instance, tags=tags)
    for doc_id in plan.remove:
        instance.delete_dynamic_partition(papers_partitions.name, doc_id)
    return report
