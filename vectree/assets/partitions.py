"""Partitions and tags shared by the asset modules."""

import warnings

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


# ---- batches of papers ------------------------------------------------------------------------
# A paper_job run covers a contiguous range of paper partitions (``vectree.pipelines.refresh``
# cuts the refresh into such batches), so every per-paper asset loops over
# ``context.partition_keys`` in one step: the process, the embedding model and the store handles
# are set up once per batch instead of once per paper.  Each paper is built inside its own
# try/except: a paper that breaks is reported (an observation with ``FAILED_KEY``, which the
# refresh collects) and the others go on.  A one-paper run (the sensor's, a test's) is the same
# loop over one key.
FAILED_KEY = "vectree/failed"


def batch_keys(context: dg.AssetExecutionContext) -> list[str]:
    """The paper partitions this step builds: one, or the batch's range."""
    return list(context.partition_keys)


def paper_check(asset: str, check: str, doc_id: str, *, passed: bool, severity=None, description: str = "",
                metadata: dict | None = None) -> dg.AssetCheckEvaluation:
    """One paper's result of a partitioned check, as an event of that partition (a check result
    returned from a range step has no partition of its own)."""
    return dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey(asset), check_name=check, passed=bool(passed), partition=doc_id,
        severity=severity or dg.AssetCheckSeverity.ERROR, description=description, metadata=metadata or {})


def failed_paper(context: dg.AssetExecutionContext, asset: str, doc_id: str, exc: BaseException) -> dg.AssetObservation:
    reason = f"{type(exc).__name__}: {exc}"
    context.log.warning(f"{doc_id}: {asset} failed: {reason}")
    return dg.AssetObservation(asset_key=asset, partition=doc_id, metadata={FAILED_KEY: reason})


def finish_batch(context: dg.AssetExecutionContext, per_paper: dict[str, dict], failed: dict[str, str] | None = None,
                 **extra):
    """The end of a batch step: the checks' outputs (their per-paper results were yielded as
    events, see :func:`paper_check`) and the asset's result (:func:`batch_result`)."""
    for output_name, spec in context.assets_def.node_check_specs_by_output_name.items():
        if spec.key in context.selected_asset_check_keys:
            yield dg.Output(None, output_name=output_name)
    yield batch_result(per_paper, failed, **extra)


def batch_result(per_paper: dict[str, dict], failed: dict[str, str] | None = None, **extra) -> dg.MaterializeResult:
    """The step's result: one paper's metadata as it was, or a batch summary (a table of papers)."""
    failed = failed or {}
    if len(per_paper) == 1 and not failed:
        return dg.MaterializeResult(metadata={**next(iter(per_paper.values())), **extra})
    columns = sorted({k for m in per_paper.values() for k, v in m.items() if isinstance(v, (str, int, float))})[:6]
    lines = ["| paper | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for doc, meta in per_paper.items():
        lines.append(f"| {doc} | " + " | ".join(str(meta.get(c, "")).replace("|", "/") for c in columns) + " |")
    for doc, why in failed.items():
        lines.append(f"| {doc} | failed: {why.replace('|', '/')} |")
    return dg.MaterializeResult(metadata={"papers": len(per_paper), "failed": dg.MetadataValue.json(failed),
                                          "batch": dg.MetadataValue.md("\n".join(lines)), **extra})


# a backfill from the UI runs the per-paper assets as the CLI does: ranges of papers per run
# backfill policies are "beta" in this Dagster release; the notice would print on every CLI run
# (stderr of `vectree ingest`), where it tells the user nothing they can act on
warnings.filterwarnings("ignore", category=dg.BetaWarning, message=r".*backfill_policy.*")
PAPER_BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=256)
