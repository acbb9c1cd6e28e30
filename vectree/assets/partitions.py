"""Partitions and tags shared by the asset modules."""

import dagster as dg

# One partition per paper; keys are store doc ids (``<slug>-<sha256[:10]>``).
papers_partitions = dg.DynamicPartitionsDefinition(name="papers")

# Every asset says which job it belongs to:
#   paper  - partitioned by paper, built by paper_job
#   corpus - the whole corpus (scan, catalog, indexes), built by corpus_job
#   model  - trained once, rebuilt on demand (SproutRAG), no job of its own
SCOPE_TAG = "vectree/scope"
PAPER = {SCOPE_TAG: "paper"}
CORPUS = {SCOPE_TAG: "corpus"}
MODEL = {SCOPE_TAG: "model"}


def paper_check_spec(name: str, asset: str, description: str) -> dg.AssetCheckSpec:
    """A check evaluated once per paper partition, so the UI lists its results by paper.

    Partitioned check specs are a Dagster preview feature (1.13); its warning is silenced here,
    in the one place that uses it, rather than printed on every import of the definitions.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=dg.PreviewWarning)
        return dg.AssetCheckSpec(name, asset=asset, partitions_def=papers_partitions, description=description)
