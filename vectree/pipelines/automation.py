"""Sensor and schedule that keep the store in line with the corpus folders."""


import hashlib
import json

import dagster as dg

from vectree.assets.partitions import papers_partitions
from vectree.assets.resources import VectreeStore

from .jobs import TRIGGER_TAG, corpus_job, paper_job, run_tags
from .refresh import paper_asset_keys, plan_refresh


def _paper_plan(context, vectree: VectreeStore):
    # the per-paper asset keys come from the repository being evaluated, not from
    # ``definitions`` (which imports this module: reading them there made an import cycle)
    if context.repository_def is None:
        raise dg.DagsterInvariantViolationError(
            "the corpus sensor and schedule need their repository: pass definitions= "
            "(build_sensor_context) or repository_def= (build_schedule_context)")
    keys = paper_asset_keys(context.repository_def.asset_graph)
    files = vectree.scan()
    doc_ids = sorted({f.doc_id for f in files})
    existing = context.instance.get_dynamic_partitions(papers_partitions.name)
    materialized = {k: set(context.instance.get_materialized_partitions(k)) for k in keys}
    return doc_ids, plan_refresh(doc_ids, existing, materialized)


@dg.sensor(
    jobs=[paper_job, corpus_job],
    minimum_interval_seconds=60,
    description="Notices added, changed and removed PDFs in the corpus folders: adds or removes "
    "paper partitions, requests a run per new paper, and a corpus run when papers only left.",
)
def corpus_sensor(context: dg.SensorEvaluationContext, vectree: VectreeStore) -> dg.SensorResult:
    doc_ids, plan = _paper_plan(context, vectree)
    fingerprint = hashlib.sha256(json.dumps(doc_ids).encode()).hexdigest()[:16]
    if not plan.changed and context.cursor == fingerprint:
        return dg.SensorResult(skip_reason="corpus unchanged", cursor=fingerprint)
    tags = run_tags("sensor", sources=vectree.sources())
    runs = [dg.RunRequest(run_key=f"{doc}:{fingerprint}", job_name=paper_job.name, partition_key=doc, tags=tags)
            for doc in plan.run]
    if not plan.run:
        # nothing to parse, but the catalog and indexes must drop what left the corpus
        runs.append(dg.RunRequest(run_key=f"corpus:{fingerprint}", job_name=corpus_job.name, tags=tags))
    return dg.SensorResult(
        run_requests=runs,
        dynamic_partitions_requests=[
            *([papers_partitions.build_add_request(plan.add)] if plan.add else []),
            *([papers_partitions.build_delete_request(plan.remove)] if plan.remove else []),
        ],
        cursor=fingerprint,
    )


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[paper_job],
    request_job=corpus_job,
    # on by default, unlike the others: it only follows paper runs that the sensor, a schedule or
    # the UI started, so it does nothing until one of those is switched on (README, "The Dagster UI")
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Once the last queued paper run has finished, rebuild the catalog and the indexes "
    "(on by default; ignores the CLI's runs, which rebuild themselves).",
)
def corpus_after_papers(context: dg.RunStatusSensorContext):
    if context.dagster_run.tags.get(TRIGGER_TAG) == "cli":
        return dg.SkipReason("a CLI run: `vectree ingest` rebuilds the catalog and indexes itself")
    in_flight = context.instance.get_runs(
        filters=dg.RunsFilter(job_name=paper_job.name, statuses=[
            dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
            dg.DagsterRunStatus.STARTED]),
        limit=1,
    )
    if in_flight:
        return dg.SkipReason("paper runs still in flight; the last one triggers the rebuild")
    trigger = context.dagster_run.tags.get(TRIGGER_TAG)
    return dg.RunRequest(run_key=f"after:{context.dagster_run.run_id}",
                         tags=run_tags("sensor" if trigger != "schedule" else "schedule"))


@dg.schedule(job=paper_job, cron_schedule="0 3 * * *", execution_timezone="UTC",
             description="Daily corpus refresh: rescan the folders, parse new and changed papers "
             "(the corpus rebuild follows through corpus_after_papers).")
def daily_refresh(context: dg.ScheduleEvaluationContext, vectree: VectreeStore):
    _, plan = _paper_plan(context, vectree)
    # schedules cannot return partition requests, so they are applied here directly
    if plan.add:
        context.instance.add_dynamic_partitions(papers_partitions.name, plan.add)
    for doc in plan.remove:
        context.instance.delete_dynamic_partition(papers_partitions.name, doc)
    if not plan.run:
        return dg.SkipReason("no new or changed papers")
    stamp = context.scheduled_execution_time.isoformat()
    tags = run_tags("schedule", sources=vectree.sources())
    return [dg.RunRequest(run_key=f"{stamp}:{doc}", partition_key=doc, tags=tags) for doc in plan.run]


daily_rebuild = dg.ScheduleDefinition(
    name="daily_rebuild", job=corpus_job, cron_schedule="30 3 * * *", execution_timezone="UTC",
    description="Daily rebuild of the catalog and indexes: drops papers whose PDFs were removed.",
    tags=run_tags("schedule"),
)
