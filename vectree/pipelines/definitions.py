"""The Dagster code location: ``dagster dev -w workspace.yaml`` loads ``defs`` from here."""

import dagster as dg

from vectree import assets
from .automation import corpus_after_papers, corpus_sensor, daily_rebuild, daily_refresh
from .jobs import corpus_job, paper_job, scan_job
from .resources import VectreeStore

defs = dg.Definitions(
    assets=dg.load_assets_from_package_module(assets),
    asset_checks=dg.load_asset_checks_from_package_module(assets),
    jobs=[scan_job, paper_job, corpus_job],
    schedules=[daily_refresh, daily_rebuild],
    sensors=[corpus_sensor, corpus_after_papers],
    resources={"vectree": VectreeStore.from_env()},
)

PAPER_ASSET_KEYS = [k for k in defs.resolve_asset_graph().get_all_asset_keys()
                    if defs.resolve_asset_graph().get(k).partitions_def is not None]
