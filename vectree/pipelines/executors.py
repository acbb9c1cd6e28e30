"""The same asset graph on another Dagster executor: multiprocess on one machine, Celery across many.

``vectree ingest`` runs its jobs in-process by default (one process, one core, nothing to set up).
With ``VECTREE_EXECUTOR=multiprocess`` or ``celery`` the paper and corpus runs are launched with
:func:`dagster.execute_job` against the store's persistent instance (``<store>/dagster``), and
their steps run in other processes: Dagster's multiprocess executor starts a process per step,
the Celery executor (``dagster-celery``) sends each step to a worker over the broker.

Those processes rebuild the job from a *reconstructable* pointer, not from the objects of the
launching process: :func:`job_for_executor` is that pointer's target, called with the job name,
the store and the executor, so every worker builds the very same job bound to the very same
store.  The LLM endpoint is read from each worker's own environment (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``): a key passed as an argument would be written into the run's record in the
instance's database.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from vectree.assets.llm_resource import LLMResource
from vectree.assets.resources import VectreeStore
from vectree.retrieval.config import Settings, load_settings

from .jobs import corpus_job, paper_job, scan_job

EXECUTORS = ("in_process", "multiprocess", "celery")
_JOBS = {j.name: j for j in (scan_job, paper_job, corpus_job)}


def _executor_def(kind: str) -> dg.ExecutorDefinition:
    if kind == "in_process":
        return dg.in_process_executor
    if kind == "multiprocess":
        return dg.multiprocess_executor
    if kind == "celery":
        try:
            from dagster_celery import celery_executor
        except ImportError as exc:  # an optional dependency: say how to get it
            raise RuntimeError("VECTREE_EXECUTOR=celery needs dagster-celery: pip install 'vectree[cluster]' "
                               "and `pip install --no-deps dagster-celery==0.29.27` (README, \"Running on a "
                               "cluster\")") from exc
        return celery_executor
    raise ValueError(f"executor must be one of {EXECUTORS}, got {kind!r}")


def job_for_executor(job_name: str, store_root: str, executor: str = "in_process",
                     corpus_dirs: tuple[str, ...] = (), max_pages: int | None = None) -> dg.JobDefinition:
    """``job_name`` (``scan_job``, ``paper_job`` or ``corpus_job``) with ``executor``, its assets
    bound to the store at ``store_root``.

    Module-level and built from plain arguments so that :func:`reconstructable_job` can point at
    it: a step process (multiprocess) or a Celery worker calls it to get the same job back.
    """
    from vectree import assets

    settings = load_settings(store_root)
    resource = VectreeStore(store_root=str(store_root), corpus_dirs=[str(p) for p in corpus_dirs],
                            max_pages=max_pages or settings.max_pages)
    base = _JOBS[job_name]
    job = dg.define_asset_job(base.name, selection=base.selection, partitions_def=base.partitions_def,
                              description=base.description, executor_def=_executor_def(executor))
    defs = dg.Definitions(
        assets=dg.load_assets_from_package_module(assets),
        asset_checks=dg.load_asset_checks_from_package_module(assets),
        jobs=[job],
        resources={"vectree": resource, "llm": LLMResource.from_settings(settings)},
    )
    return defs.resolve_job_def(job_name)


def reconstructable_job(job_name: str, resource: VectreeStore, executor: str) -> dg.ReconstructableJob:
    """The pointer other processes rebuild ``job_name`` from (see :func:`job_for_executor`)."""
    return dg.build_reconstructable_job(
        "vectree.pipelines.executors", "job_for_executor",
        reconstructable_args=(job_name, str(resource.store_root), executor, tuple(resource.corpus_dirs),
                              resource.max_pages),
    )


def executor_run_config(settings: Settings, *, quiet: bool = True) -> dict[str, Any]:
    """Run config for ``settings.executor``: how many processes, or which broker."""
    config: dict[str, Any] = {}
    if settings.executor == "multiprocess":
        config = {"execution": {"config": {"max_concurrent": settings.workers}}}
    elif settings.executor == "celery":
        config = {"execution": {"config": {"broker": settings.celery_broker, "backend": settings.celery_backend}}}
    if quiet:
        config["loggers"] = {"console": {"config": {"log_level": "ERROR"}}}
    return config
