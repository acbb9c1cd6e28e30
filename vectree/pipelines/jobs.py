"""Jobs, selected by the ``vectree/scope`` tag every asset carries (see ``vectree.assets.partitions``).

A refresh of the store is three kinds of run, each a named job so the Dagster UI can tell them
apart (and never shows ``__ephemeral_asset_job__``): ``scan_job`` (rescan the corpus folders),
``paper_job`` (ingest one paper: its per-paper artefacts) and ``corpus_job`` (rebuild the catalog
and the indexes).  ``vectree ingest`` and the other CLI commands run the same jobs in-process;
the sensor and the schedules launch them through the daemon.  Every run carries the tags below.
"""

from __future__ import annotations

import dagster as dg

from vectree.assets.partitions import SCOPE_TAG, papers_partitions
from vectree.assets.resources import REFRESH_TAG  # one id shared by the scan, paper and corpus runs of one refresh

# run tags: who started the run, what for, and over which source folders
TRIGGER_TAG = "vectree/trigger"  # cli | sensor | schedule (the UI adds its own for manual launches)
COMMAND_TAG = "vectree/command"  # the CLI command behind a cli run: ingest, sources remove, ...
SOURCES_TAG = "vectree/sources"  # the corpus folders the run read, ", "-joined
TRIGGERS = ("cli", "sensor", "schedule")


def run_tags(trigger: str, *, sources: list[str] | None = None, command: str | None = None,
             refresh_id: str | None = None) -> dict[str, str]:
    """The tags of a run; ``trigger`` is one of :data:`TRIGGERS`."""
    if trigger not in TRIGGERS:
        raise ValueError(f"trigger must be one of {TRIGGERS}, got {trigger!r}")
    tags = {TRIGGER_TAG: trigger}
    if sources is not None:
        tags[SOURCES_TAG] = ", ".join(sources) or "(none)"
    if command:
        tags[COMMAND_TAG] = command
    if refresh_id:
        tags[REFRESH_TAG] = refresh_id
    return tags


scan_job = dg.define_asset_job(
    "scan_job",
    selection=dg.AssetSelection.assets("corpus_manifest") | dg.AssetSelection.tag(SCOPE_TAG, "model"),
    description="Refresh: rescan the corpus folders (corpus_manifest) and report the SproutRAG model, "
    "the first run of every `vectree ingest`.",
)

paper_job = dg.define_asset_job(
    "paper_job",
    selection=dg.AssetSelection.tag(SCOPE_TAG, "paper"),
    partitions_def=papers_partitions,
    description="Ingest one paper: parse it and build its per-paper artefacts (pages, section tree, "
    "passages, SproutRAG tree).",
)

corpus_job = dg.define_asset_job(
    "corpus_job",
    selection=dg.AssetSelection.tag(SCOPE_TAG, "corpus"),
    description="Rebuild: rescan the corpus, rebuild the catalog and the search indexes (drops papers "
    "whose PDFs left the corpus).",
)
