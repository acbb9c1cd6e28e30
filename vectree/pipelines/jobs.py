"""Jobs, selected by the ``vectree/scope`` tag every asset carries (see ``vectree.assets.partitions``)."""

import dagster as dg

from vectree.assets.partitions import SCOPE_TAG, papers_partitions

paper_job = dg.define_asset_job(
    "paper_job",
    selection=dg.AssetSelection.tag(SCOPE_TAG, "paper"),
    partitions_def=papers_partitions,
    description="Parse one paper and build its per-paper artefacts (pages, section tree, ...).",
)

corpus_job = dg.define_asset_job(
    "corpus_job",
    selection=dg.AssetSelection.tag(SCOPE_TAG, "corpus"),
    description="Rescan the corpus, rebuild the catalog and the search indexes.",
)
