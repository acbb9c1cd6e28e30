"""Papers a store on object storage pulled into a fresh working copy, recorded in Dagster.

When a writer's working copy is rebuilt from the published snapshot (a new machine, or another
machine published since: :meth:`vectree.retrieval.store.ObjectStore.sync_working_copy`), its
Dagster instance starts empty, so every paper would look unbuilt and be parsed again.  Each pulled
paper that was built (any status but ``degraded``) gets its partition and a runless
materialisation of every per-paper asset, tagged with where it came from; the refresh plan then
runs only what changed, as it would on the machine that built them.
"""

from __future__ import annotations

import dagster as dg

from vectree.assets.partitions import papers_partitions
from vectree.retrieval.store import Store


def record_pulled_papers(instance: dg.DagsterInstance, store: Store, paper_keys: list[dg.AssetKey]) -> int:
    """Record the papers ``store`` pulled as built; returns how many."""
    pulled = store.pulled_papers()
    if not pulled:
        return 0
    known = set(instance.get_dynamic_partitions(papers_partitions.name))
    new = sorted(set(pulled) - known)
    if new:
        instance.add_dynamic_partitions(papers_partitions.name, new)
    for doc_id, status in sorted(pulled.items()):
        for key in paper_keys:
            instance.report_runless_asset_event(dg.AssetMaterialization(
                asset_key=key, partition=doc_id,
                metadata={"pulled_from": store.location, "status": status}))
    store.forget_pulled_papers()
    return len(pulled)
