"""Sensor and schedule that keep the store in line with the corpus folders."""


import hashlib
import json

import dagster as dg

from vectree.assets.partitions import papers_partitions
from vectree.assets.resources import VectreeStore
from vectree.retrieval.store import StoreBusyError

from .jobs import TRIGGER_TAG, corpus_job, paper_job, run_tags
from .refresh import RefreshPlan, outdated_papers, paper_asset_keys, plan_refresh


# Runs the daemon launches execute their steps one after the other in the run's own process, as
# `vectree ingest` does.  Dagster's default executor starts a process per step, and each of them
# imports Dagster, torch and vectree and loads the embedding model again: a two-page paper's run
# took 116 s that way under the daemon on a busy 2-core machine.
IN_PROCESS_RUN_CONFIG = {"execution": {"config": {"in_process": {}}}}
IN_FLIGHT = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
             dg.DagsterRunStatus.STARTED]


def _paper_plan(context, vectree: VectreeStore) -> tuple[list[str], RefreshPlan, bool]:
    """Scan the corpus, record the scan as the store's manifest, and plan the partitions.

    The manifest is written here, under the store's writer lock, because the paper runs requested
    from this plan read their source files from it (``paper_pages``) and ``paper_job`` does not
    rescan: without it, a PDF added after the last corpus run failed under the daemon with
    "paper ... is not in the corpus manifest".  While ``vectree ingest`` holds the lock this raises
    :class:`StoreBusyError` (the CLI's refresh does the same work itself).  Returns the paper ids,
    the plan, and whether the manifest changed.
    """
    # the per-paper asset keys come from the repository being evaluated, not from
    # ``definitions`` (which imports this module: reading them there made an import cycle)
    if context.repository_def is None:
        raise dg.DagsterInvariantViolationError(
            "the corpus sensor and schedule need their repository: pass definitions= "
            "(build_sensor_context) or repository_def= (build_schedule_context)")
    keys = paper_asset_keys(context.repository_def.asset_graph)
    store = vectree.store
    with store.writer_lock():
        files = vectree.scan()
        rows = [f.as_row() for f in files]
        changed = rows != store.read_manifest()
        if changed:
            store.write_manifest(rows)
    doc_ids = sorted({f.doc_id for f in files})
    existing = context.instance.get_dynamic_partitions(papers_partitions.name)
    materialized = {k: set(context.instance.get_materialized_partitions(k)) for k in keys}
    # papers read by an older parser run again too (once per run key: a failing one is not retried each tick)
    return doc_ids, plan_refresh(doc_ids, existing, materialized, outdated=outdated_papers(store, doc_ids)), changed


def _read_cursor(cursor: str | None) -> tuple[int, str | None]:
    """``generation:fingerprint`` (a bare fingerprint is the cursor of earlier versions)."""
    if not cursor:
        return 0, None
    generation, _, fingerprint = cursor.rpartition(":")
    return (int(generation) if generation.isdigit() else 0), fingerprint


def _manifest_event(vectree: VectreeStore, doc_ids: list[str], trigger: str) -> dg.AssetMaterialization:
    """The sensor's manifest write, recorded as a materialisation of ``corpus_manifest``."""
    return dg.AssetMaterialization(
        asset_key="corpus_manifest",
        description=f"written by the {trigger} from its corpus scan",
        metadata={"papers": len(doc_ids), "sources": dg.MetadataValue.json(vectree.sources()),
                  "path": dg.MetadataValue.path(str(vectree.store.manifest_path))},
    )


# Dagster's own interval for run-status sensors; corpus_after_papers never looks less often
RUN_STATUS_INTERVAL = 30


def corpus_sensors(interval: int = 60) -> tuple[dg.SensorDefinition, ...]:
    """The corpus sensor and the two run-status sensors that rebuild after paper runs, looking every
    ``interval`` seconds (``Settings.sensor_interval``; ``definitions`` passes the setting, the module-level
    pair below has the default): a test or an impatient user sets it to a few seconds."""
    if interval < 1:
        raise ValueError(f"the sensor interval must be at least 1 second, got {interval}")

    @dg.sensor(
        jobs=[paper_job, corpus_job],
        minimum_interval_seconds=interval,
        description="Notices added, changed and removed PDFs in the corpus folders: adds or removes "
        "paper partitions, requests a run per new paper, and a corpus run when papers only left.",
    )
    def corpus_sensor(context: dg.SensorEvaluationContext, vectree: VectreeStore) -> dg.SensorResult:
        try:
            doc_ids, plan, manifest_changed = _paper_plan(context, vectree)
        except StoreBusyError as exc:
            # `vectree ingest` is refreshing the store: it parses and publishes what it finds itself
            return dg.SensorResult(skip_reason=f"{exc}; looking again in {interval} s")
        fingerprint = hashlib.sha256(json.dumps(doc_ids).encode()).hexdigest()[:16]
        generation, seen = _read_cursor(context.cursor)
        if fingerprint != seen:
            generation += 1
        cursor = f"{generation}:{fingerprint}"
        events = [_manifest_event(vectree, doc_ids, "corpus_sensor")] if manifest_changed else []
        if not plan.changed and seen in (fingerprint, None):
            # on its first look too: the partitions already match the corpus and every paper is
            # materialised (by `vectree ingest`, or nothing to do in an empty folder)
            return dg.SensorResult(skip_reason="corpus unchanged", cursor=cursor, asset_events=events)
        tags = run_tags("sensor", sources=vectree.sources())
        # The run key names the corpus state (so a run still in flight is not requested twice) and
        # its generation: a corpus that comes back to an earlier set of papers (a PDF added, then
        # removed; a PDF removed, then put back) must run again, and Dagster never launches a run
        # key it has launched before.  Keyed by the set alone, the removal of the only paper found
        # the key of the first, empty tick and nothing left the service.
        key = f"{generation}-{fingerprint}"
        # a paper whose run is still queued or running looks unmaterialised: not again under a new key
        busy = {r.tags.get("dagster/partition") for r in context.instance.get_runs(
            filters=dg.RunsFilter(job_name=paper_job.name, statuses=IN_FLIGHT))}
        runs = [dg.RunRequest(run_key=f"{doc}:{key}", job_name=paper_job.name, partition_key=doc, tags=tags,
                              run_config=IN_PROCESS_RUN_CONFIG)
                for doc in plan.run if doc not in busy]
        if not plan.run:
            # nothing to parse, but the catalog and indexes must drop what left the corpus
            runs.append(dg.RunRequest(run_key=f"corpus:{key}", job_name=corpus_job.name, tags=tags,
                                      run_config=IN_PROCESS_RUN_CONFIG))
        return dg.SensorResult(
            run_requests=runs,
            dynamic_partitions_requests=[
                *([papers_partitions.build_add_request(plan.add)] if plan.add else []),
                *([papers_partitions.build_delete_request(plan.remove)] if plan.remove else []),
            ],
            asset_events=events,
            cursor=cursor,
        )

    after = dict(
        monitored_jobs=[paper_job],
        request_job=corpus_job,
        minimum_interval_seconds=min(interval, RUN_STATUS_INTERVAL),
        # on by default, unlike the others: they only follow paper runs that the sensor, a schedule or
        # the UI started, so they do nothing until one of those is switched on (README, "The Dagster UI")
        default_status=dg.DefaultSensorStatus.RUNNING,
    )

    @dg.run_status_sensor(
        run_status=dg.DagsterRunStatus.SUCCESS,
        description="Once the last queued paper run has finished, rebuild the catalog and the indexes "
        "(on by default; ignores the CLI's runs, which rebuild themselves).",
        **after,
    )
    def corpus_after_papers(context: dg.RunStatusSensorContext):
        return _rebuild_after(context)

    @dg.run_status_sensor(
        run_status=dg.DagsterRunStatus.FAILURE,
        description="The same after a paper run that failed: the papers that did not fail are published "
        "(on by default; ignores the CLI's runs).",
        **after,
    )
    def corpus_after_failed_papers(context: dg.RunStatusSensorContext):
        # without it, a batch whose last paper run failed published none of the others: only a
        # successful run triggered the rebuild (`vectree ingest` goes on past a broken paper too)
        return _rebuild_after(context)

    return corpus_sensor, corpus_after_papers, corpus_after_failed_papers


def _rebuild_after(context: dg.RunStatusSensorContext):
    """A corpus run once no paper run is in flight any more, for runs the CLI did not start."""
    if context.dagster_run.tags.get(TRIGGER_TAG) == "cli":
        return dg.SkipReason("a CLI run: `vectree ingest` rebuilds the catalog and indexes itself")
    in_flight = context.instance.get_runs(filters=dg.RunsFilter(job_name=paper_job.name, statuses=IN_FLIGHT), limit=1)
    if in_flight:
        return dg.SkipReason("paper runs still in flight; the last one triggers the rebuild")
    trigger = context.dagster_run.tags.get(TRIGGER_TAG)
    return dg.RunRequest(run_key=f"after:{context.dagster_run.run_id}", run_config=IN_PROCESS_RUN_CONFIG,
                         tags=run_tags("sensor" if trigger != "schedule" else "schedule"))


corpus_sensor, corpus_after_papers, corpus_after_failed_papers = corpus_sensors()


@dg.schedule(job=paper_job, cron_schedule="0 3 * * *", execution_timezone="UTC",
             description="Daily corpus refresh: rescan the folders, parse new and changed papers "
             "(the corpus rebuild follows through corpus_after_papers).")
def daily_refresh(context: dg.ScheduleEvaluationContext, vectree: VectreeStore):
    try:
        _, plan, _ = _paper_plan(context, vectree)
    except StoreBusyError as exc:
        return dg.SkipReason(f"{exc}; the next daily refresh or the corpus sensor picks the changes up")
    # schedules cannot return partition requests, so they are applied here directly
    if plan.add:
        context.instance.add_dynamic_partitions(papers_partitions.name, plan.add)
    for doc in plan.remove:
        context.instance.delete_dynamic_partition(papers_partitions.name, doc)
    if not plan.run:
        return dg.SkipReason("no new or changed papers")
    stamp = context.scheduled_execution_time.isoformat()
    tags = run_tags("schedule", sources=vectree.sources())
    return [dg.RunRequest(run_key=f"{stamp}:{doc}", partition_key=doc, tags=tags, run_config=IN_PROCESS_RUN_CONFIG)
            for doc in plan.run]


daily_rebuild = dg.ScheduleDefinition(
    name="daily_rebuild", job=corpus_job, cron_schedule="30 3 * * *", execution_timezone="UTC",
    description="Daily rebuild of the catalog and indexes: drops papers whose PDFs were removed.",
    tags=run_tags("schedule"), run_config=IN_PROCESS_RUN_CONFIG,
)
