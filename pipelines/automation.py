"""Sensor and schedule that keep the store in line with the corpus folders."""


import json

import dagster as dg

from assets.partitions import papers_partitions

from .jobs import corpus_job, paper_job
from .refresh import plan_refresh
from .resources import VectreeStore


def _paper_plan(context, vectree: VectreeStore, paper_asset_keys):
    files = vectree.scan()
    doc_ids = sorted({f.doc_id for f in files})
    existing = context.instance.get_dynamic_partitions(papers_partitions.name)
    materialized = {k: set(context.instance.get_materialized_partitions(k)) for k in paper_asset_keys}
    return doc_ids, plan_refresh(doc_ids, existing, materialized)


@dg.sensor(
    job=paper_job,
    minimum_interval_seconds=60,
    description="Notices added, changed and removed PDFs in the corpus folders: adds or removes "
    "paper partitions, requests a run per new paper, then a corpus run for catalog and indexes.",
)
def corpus_sensor(context: dg.SensorEvaluationContext, vectree: VectreeStore) -> dg.SensorResult:
    from .definitions import PAPER_ASSET_KEYS

    doc_ids, plan = _paper_plan(context, vectree, PAPER_ASSET_KEYS)
    fingerprint = json.dumps(doc_ids)
    if not plan.changed and context.cursor == fingerprint:
        return dg.SensorResult(skip_reason="corpus unchanged", cursor=fingerprint)
    runs = [dg.RunRequest(run_key=f"{doc}:{fingerprint.__hash__()}", partition_key=doc) for doc in plan.run]
    if plan.remove or not plan.run:
        # nothing new to parse, but the catalog must drop what left the corpus
        runs.append(dg.RunRequest(job_name=corpus_job.name, run_key=f"corpus:{hash(fingerprint)}"))
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
    description="After papers are parsed, rebuild the catalog and the indexes once.",
)
def corpus_after_papers(context: dg.RunStatusSensorContext):
    return dg.RunRequest(run_key=f"after:{context.dagster_run.run_id}")


@dg.schedule(job=corpus_job, cron_schedule="0 3 * * *", execution_timezone="UTC",
             description="Daily corpus refresh: rescan, parse what is new, rebuild catalog and indexes.")
def daily_refresh(context: dg.ScheduleEvaluationContext, vectree: VectreeStore):
    from .definitions import PAPER_ASSET_KEYS

    _, plan = _paper_plan(context, vectree, PAPER_ASSET_KEYS)
    # schedules cannot return partition requests, so they are applied here directly
    if plan.add:
        context.instance.add_dynamic_partitions(papers_partitions.name, plan.add)
    for doc in plan.remove:
        context.instance.delete_dynamic_partition(papers_partitions.name, doc)
    stamp = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else "now"
    requests = [dg.RunRequest(run_key=f"{stamp}:corpus")]
    requests += [dg.RunRequest(run_key=f"{stamp}:{doc}", job_name=paper_job.name, partition_key=doc) for doc in plan.run]
    return requests
