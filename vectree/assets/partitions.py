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
