"""Publish stage: the working store becomes one immutable snapshot that readers switch to at once
(see ``vectree.retrieval.snapshot``)."""

import dagster as dg

from vectree.assets.resources import VectreeStore
from vectree.retrieval.snapshot import publish

from .partitions import CORPUS


@dg.asset(
    group_name="search",
    tags=CORPUS,
    kinds={"python", "json"},
    deps=["search_index", "paper_catalog", "paper_passages", "sprout_tree"],
    check_specs=[dg.AssetCheckSpec("every_paper_complete", asset="store_snapshot",
                                   description="Every parsed paper has all its artefacts (none degraded).")],
    description="One published snapshot of the catalog (with per-artefact status), every paper's pages, tree, "
    "passages and SproutRAG tree, and the search index: the service reads only this, switched in one rename.",
)
def store_snapshot(context: dg.AssetExecutionContext, vectree: VectreeStore) -> dg.MaterializeResult:
    summary = publish(vectree.store)
    if summary["degraded"]:
        for doc_id, why in summary["degraded"].items():
            context.log.warning(f"{doc_id}: degraded: {why}")
    return dg.MaterializeResult(
        metadata={
            "snapshot": summary["snapshot_id"] or "",
            "published": summary["published"],
            "index_snapshot": summary["index"] or "",
            "sprout_model": summary["sprout_model"] or "",
            "by_status": dg.MetadataValue.json(summary["by_status"]),
            "degraded": dg.MetadataValue.json(summary["degraded"]),
        },
        check_results=[dg.AssetCheckResult(
            check_name="every_paper_complete", passed=not summary["degraded"], severity=dg.AssetCheckSeverity.WARN,
            metadata={"degraded": dg.MetadataValue.json(summary["degraded"])})],
    )
