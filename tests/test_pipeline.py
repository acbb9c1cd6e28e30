"""The Dagster definitions: graph shape, real in-process materialisation, sensor and schedule."""

from __future__ import annotations

import datetime

import dagster as dg
import pytest

from vectree.assets.llm_resource import LLMResource
from vectree.assets.partitions import papers_partitions
from vectree.pipelines.definitions import defs
from vectree.pipelines.refresh import QUIET_RUN_CONFIG, instance_for
from vectree.assets.resources import VectreeStore
from tests import pdfmaker
from vectree.cli import run_ingest


def test_definitions_load_with_the_asset_graph():
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"corpus_manifest", "paper_pages", "paper_catalog"} <= keys
    pages = graph.get(dg.AssetKey("paper_pages"))
    assert pages.partitions_def == papers_partitions
    assert isinstance(pages.partitions_def, dg.DynamicPartitionsDefinition)
    assert dg.AssetKey("corpus_manifest") in pages.parent_keys
    assert dg.AssetKey("paper_pages") in graph.get(dg.AssetKey("paper_catalog")).parent_keys
    checks = {c.name for c in graph.asset_check_keys}
    assert {"has_text_layer", "every_paper_parsed"} <= checks
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.group_name and node.group_name != "default", key
        assert node.kinds, key
        assert node.tags.get("vectree/scope") in {"paper", "corpus", "model"}, key
        assert (node.partitions_def is not None) == (node.tags["vectree/scope"] == "paper"), key
    schedule = defs.resolve_schedule_def("daily_refresh")
    assert schedule.cron_schedule == "0 3 * * *"
    assert schedule.job_name == "paper_job"
    assert defs.resolve_schedule_def("daily_rebuild").job_name == "corpus_job"
    assert {s.name for s in defs.sensors} >= {"corpus_sensor", "corpus_after_papers"}
    assert defs.resolve_job_def("paper_job").partitions_def == papers_partitions


def _evaluate(sensor, **context):
    """One sensor evaluation.  The store resource is a context manager (it holds the writer lock
    during a run: VectreeStore.yield_for_execution), so the context is opened as one."""
    with dg.build_sensor_context(**context) as ctx:
        return sensor(ctx)


@pytest.fixture()
def two_paper_store(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfmaker.write_paper(corpus / "glacier.pdf", "Glacier Melt Dynamics in Alpine Basins", pdfmaker.GOOD_SECTIONS)
    pdfmaker.write_paper(corpus / "soil.pdf", "Soil Moisture Retrieval from Radar", pdfmaker.GOOD_SECTIONS)
    store, report, _ = run_ingest([str(corpus)], str(tmp_path / "store"), quiet=True)
    assert not report.failed_runs and len(report.plan.run) == 2
    resource = VectreeStore(store_root=str(store.root))
    return corpus, store, resource


def test_materialised_partitions_then_sensor_removes_a_deleted_pdf(two_paper_store):
    corpus, store, resource = two_paper_store
    instance = instance_for(store)
    doc_ids = sorted(r["doc_id"] for r in store.read_catalog())
    assert sorted(instance.get_dynamic_partitions("papers")) == doc_ids
    assert set(instance.get_materialized_partitions(dg.AssetKey("paper_pages"))) == set(doc_ids)
    soil = next(d for d in doc_ids if d.startswith("soil-"))

    sensor = defs.resolve_sensor_def("corpus_sensor")
    first = _evaluate(sensor, instance=instance, resources={"vectree": resource}, definitions=defs)
    assert not first.run_requests or all(r.job_name == "corpus_job" for r in first.run_requests)

    (corpus / "soil.pdf").unlink()
    result = _evaluate(sensor, instance=instance, resources={"vectree": resource}, cursor=first.cursor,
                       definitions=defs)
    deletes = [r for r in result.dynamic_partitions_requests if isinstance(r, dg.DeleteDynamicPartitionsRequest)]
    assert [list(r.partition_keys) for r in deletes] == [[soil]]
    assert [r.job_name for r in result.run_requests] == ["corpus_job"]

    # carry the sensor's requests out as the daemon would: apply partitions, run the corpus job
    instance.delete_dynamic_partition("papers", soil)
    job = defs.resolve_job_def("corpus_job")
    run = job.execute_in_process(instance=instance, resources={"vectree": resource}, run_config=QUIET_RUN_CONFIG)
    assert run.success
    assert [r["doc_id"] for r in store.read_catalog()] == [d for d in doc_ids if d != soil]
    assert not store.pages_path(soil).exists() and not store.pdf_path(soil).exists()
    assert not store.record_path(soil).exists()


def test_sensor_requests_runs_for_added_and_changed_pdfs(two_paper_store):
    corpus, store, resource = two_paper_store
    instance = instance_for(store)
    sensor = defs.resolve_sensor_def("corpus_sensor")
    cursor = _evaluate(sensor, instance=instance, resources={"vectree": resource}, definitions=defs).cursor
    pdfmaker.write_paper(corpus / "ice.pdf", "River Ice Break-up Forecasting", pdfmaker.GOOD_SECTIONS)
    # a changed file has new bytes, so a new id; the old id leaves
    pdfmaker.write_paper(corpus / "glacier.pdf", "Glacier Melt Dynamics, Revised", pdfmaker.GOOD_SECTIONS)
    result = _evaluate(sensor, instance=instance, resources={"vectree": resource}, cursor=cursor, definitions=defs)
    adds = [k for r in result.dynamic_partitions_requests if isinstance(r, dg.AddDynamicPartitionsRequest)
            for k in r.partition_keys]
    deletes = [k for r in result.dynamic_partitions_requests if isinstance(r, dg.DeleteDynamicPartitionsRequest)
               for k in r.partition_keys]
    assert sorted(k.split("-")[0] for k in adds) == ["glacier", "ice"]
    assert [k.split("-")[0] for k in deletes] == ["glacier"]
    assert sorted(r.partition_key for r in result.run_requests if r.partition_key) == sorted(adds)
    # the UI tells a sensor's runs from the CLI's and a schedule's, and names the folders they read
    assert all(r.tags["vectree/trigger"] == "sensor" for r in result.run_requests)
    assert all(r.tags["vectree/sources"] == str(corpus.resolve()) for r in result.run_requests)


def _daily_refresh_tick(instance, resource, when: datetime.datetime) -> list:
    """The run requests of one ``daily_refresh`` tick at ``when``.  (The context is a context
    manager: the store resource is one, it holds the writer lock during a run.)"""
    schedule = defs.resolve_schedule_def("daily_refresh")
    with dg.build_schedule_context(instance=instance, resources={"vectree": resource},
                                   repository_def=defs.get_repository_def(), scheduled_execution_time=when) as ctx:
        return list(schedule.evaluate_tick(ctx).run_requests)


def test_schedule_adds_partitions_and_requests_runs(two_paper_store):
    corpus, store, resource = two_paper_store
    instance = instance_for(store)
    pdfmaker.write_paper(corpus / "ice.pdf", "River Ice Break-up Forecasting", pdfmaker.GOOD_SECTIONS)
    requests = _daily_refresh_tick(instance, resource, datetime.datetime(2026, 12, 2, 3, 0, tzinfo=datetime.timezone.utc))
    new = [r.partition_key for r in requests if r.partition_key]
    assert len(new) == 1 and new[0].startswith("ice-")
    assert all(r.tags["vectree/trigger"] == "schedule" for r in requests)
    assert defs.resolve_schedule_def("daily_rebuild").tags["vectree/trigger"] == "schedule"
    assert new[0] in instance.get_dynamic_partitions("papers")


def test_schedule_parses_again_a_paper_read_by_an_older_parser(two_paper_store):
    """The daily refresh brings papers parsed before a parser fix up to date: only the paper whose
    record names another parser version is requested."""
    import json

    corpus, store, resource = two_paper_store
    instance = instance_for(store)
    old = sorted(r["doc_id"] for r in store.read_catalog())[0]
    store.record_path(old).write_text(json.dumps({**store.read_record(old), "parser_version": "pdf-0"}))
    requests = _daily_refresh_tick(instance, resource, datetime.datetime(2026, 12, 5, 3, 0, tzinfo=datetime.timezone.utc))
    assert [r.partition_key for r in requests] == [old]


def test_text_layer_check_flags_a_scanned_pdf(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfmaker.write_scanned(corpus / "scan.pdf")
    store, _, _ = run_ingest([str(corpus)], str(tmp_path / "store"), quiet=True)
    doc_id = store.read_catalog()[0]["doc_id"]
    instance = instance_for(store)
    result = dg.materialize(
        list(defs.assets), selection=["paper_pages"], partition_key=doc_id, instance=instance,
        resources={"vectree": VectreeStore(store_root=str(store.root)), "llm": LLMResource()},
        run_config=QUIET_RUN_CONFIG,
    )
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == "has_text_layer" and not check.passed
    assert check.severity == dg.AssetCheckSeverity.WARN
    assert "no extractable text" in check.metadata["reason"].value


@pytest.fixture(scope="module")
def read_only_store(tmp_path_factory):
    """Two ingested papers, for tests that only read the store and its Dagster instance."""
    tmp = tmp_path_factory.mktemp("ro")
    corpus = tmp / "corpus"
    corpus.mkdir()
    pdfmaker.write_paper(corpus / "glacier.pdf", "Glacier Melt Dynamics in Alpine Basins", pdfmaker.GOOD_SECTIONS)
    pdfmaker.write_paper(corpus / "soil.pdf", "Soil Moisture Retrieval from Radar", pdfmaker.GOOD_SECTIONS)
    store, report, _ = run_ingest([str(corpus)], str(tmp / "store"), quiet=True)
    assert not report.failed_runs
    return corpus, store


def test_cli_refresh_runs_named_jobs_tagged_with_trigger_sources_and_one_refresh_id(read_only_store):
    """The UI must tell a scan from an ingest from a rebuild: no ``__ephemeral_asset_job__``."""
    corpus, store = read_only_store
    runs = instance_for(store).get_runs()
    assert {r.job_name for r in runs} == {"scan_job", "paper_job", "corpus_job"}
    # one batch: both papers in one run over a range of paper partitions, not a run per paper
    assert sorted(r.job_name for r in runs).count("paper_job") == 1
    for r in runs:
        assert r.tags["vectree/trigger"] == "cli", r.tags
        assert r.tags["vectree/command"] == "ingest"
        assert r.tags["vectree/sources"] == str(corpus.resolve())
    assert len({r.tags["vectree/refresh"] for r in runs}) == 1
    [paper_run] = [r for r in runs if r.job_name == "paper_job"]
    papers = {paper_run.tags["dagster/asset_partition_range_start"], paper_run.tags["dagster/asset_partition_range_end"]}
    assert papers == {row["doc_id"] for row in store.read_catalog()}


def test_per_paper_checks_are_partitioned_and_name_their_paper(read_only_store):
    _, store = read_only_store
    instance = instance_for(store)
    titles = {r["doc_id"]: r["title"] for r in store.read_catalog()}
    for asset, check in (("paper_pages", "has_text_layer"), ("section_tree", "tree_invariants"),
                         ("section_tree", "tree_verified"), ("sprout_tree", "tree_complete")):
        key = dg.AssetCheckKey(dg.AssetKey(asset), check)
        [spec] = [s for a in defs.assets for s in getattr(a, "check_specs", ()) if s.key == key]
        assert spec.partitions_def == papers_partitions, key
        records = instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
        assert sorted(r.partition for r in records) == sorted(titles), (key, [r.partition for r in records])
        for rec in records:
            evaluation = rec.event.dagster_event.event_specific_data
            assert evaluation.metadata["paper"].value == rec.partition
            if asset != "sprout_tree":  # the sprout check names the id only (no model: skipped)
                assert evaluation.metadata["title"].value == titles[rec.partition]
                assert evaluation.description.startswith(f"{rec.partition} ({titles[rec.partition]})")


def test_corpus_after_papers_ignores_cli_runs_and_follows_sensor_runs(read_only_store):
    _, store = read_only_store
    instance = instance_for(store)
    sensor = defs.resolve_sensor_def("corpus_after_papers")
    cli_run = next(r for r in instance.get_runs() if r.job_name == "paper_job")
    from vectree.pipelines.automation import corpus_after_papers

    def evaluate(run):
        context = dg.build_run_status_sensor_context(
            sensor_name="corpus_after_papers", dagster_instance=instance, dagster_run=run,
            dagster_event=next(iter(instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_SUCCESS))).dagster_event,
        )
        return corpus_after_papers(context)

    assert isinstance(evaluate(cli_run), dg.SkipReason)
    instance.add_run_tags(cli_run.run_id, {"vectree/trigger": "sensor"})  # as if the sensor had launched it
    sensor_run = instance.get_run_by_id(cli_run.run_id)
    request = evaluate(sensor_run)
    instance.add_run_tags(cli_run.run_id, {"vectree/trigger": "cli"})  # the store is shared: put it back
    assert isinstance(request, dg.RunRequest) and request.tags["vectree/trigger"] == "sensor"
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
