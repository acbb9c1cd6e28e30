"""The Dagster code location: ``dagster dev -w workspace.yaml`` loads ``defs`` from here."""

import dagster as dg

from vectree import assets
from vectree.assets.llm_resource import LLMResource
from vectree.assets.resources import VectreeStore
from vectree.retrieval.config import load_settings

from .automation import corpus_sensors, daily_rebuild, daily_refresh
from .jobs import corpus_job, paper_job, scan_job

_settings = load_settings()
defs = dg.Definitions(
    assets=dg.load_assets_from_package_module(assets),
    asset_checks=dg.load_asset_checks_from_package_module(assets),
    jobs=[scan_job, paper_job, corpus_job],
    schedules=[daily_refresh, daily_rebuild],
    # the sensors look as often as the settings say (VECTREE_SENSOR_INTERVAL)
    sensors=list(corpus_sensors(_settings.sensor_interval)),
    # the settings object, built once for the code location
    resources={"vectree": VectreeStore.from_settings(_settings), "llm": LLMResource.from_settings(_settings)},
)
