"""Quality stage: the trained reranker + reader (``reranker_model``).

Like SproutRAG's model, training is opt-in: by default the asset only reports the live model
(the one shipped in the package, or ``VECTREE_RERANKER``) with its dev figures as metadata, so
``vectree ingest`` never trains.  ``vectree reranker train`` (or config ``train: true`` in the
launchpad) builds the training set from ``$VECTREE_TRAINING_DATA``, trains, calibrates on dev and
writes the model under ``<store>/reranker/models/<id>/``; the metadata say how to make it live.
"""

import logging
import time
from pathlib import Path

import dagster as dg

from vectree.assets.resources import VectreeStore

from .partitions import MODEL

GROUP = "quality"
# every training event (steps, dev evaluations) is also logged here with the event dict in
# ``record.event``, so the CLI can draw its progress bar while the Dagster run works
PROGRESS_LOGGER = "vectree.progress.reranker"


class RerankerModelConfig(dg.Config):
    train: bool = False  # False: report the live model (what `vectree ingest` does)
    quick: bool = False  # a small sample and few steps (under 3 minutes on 2 cores)
    data_dir: str = ""  # default: $VECTREE_TRAINING_DATA, else ../shared/data next to the repo
    out_dir: str = ""  # default: <store>/reranker/models/<model id>
    seed: int = 13
    threads: int = 2
    max_steps: int = 0  # 0: the recipe's (a smaller number is for smoke tests)


def model_metadata(config, folder) -> dict:
    t = config.training or {}
    before, after, f = t.get("before", {}), t.get("after", {}), t.get("dev_figures", {})
    return {
        "model_id": config.model_id, "path": dg.MetadataValue.path(str(folder)),
        "dev_mrr_before_cosine": before.get("cosine_mrr"), "dev_mrr": after.get("mrr"),
        "dev_p_at_1": after.get("p_at_1"), "dev_type_accuracy": after.get("type_accuracy"),
        "dev_span_f1": after.get("span_f1"), "dev_answer_ece": f.get("answer_ece"),
        "dev_relevance_ece": f.get("relevance_ece"),
        "selection": dg.MetadataValue.json(config.calibration.get("selection", {})),
        "abstain_below": (config.calibration.get("answer") or {}).get("abstain_below"),
        "training_seconds": t.get("seconds"), "steps": t.get("steps"),
        "data": dg.MetadataValue.json(t.get("counts", {})),
    }


@dg.asset(
    group_name=GROUP,
    tags=MODEL,
    kinds={"python", "pytorch"},
    description="Cross-encoder reranker + reader (MiniLM + LoRA adapters + relevance / answer-type / span "
    "heads), trained on the training splits of QASPER dev questions, page-tagged QASPER rows, HotpotQA and "
    "PubMedQA plus inverse-cloze pairs; calibrated on dev. Trains only with config train: true "
    "(`vectree reranker train`).",
)
def reranker_model(context: dg.AssetExecutionContext, config: RerankerModelConfig,
                   vectree: VectreeStore) -> dg.MaterializeResult:
    from vectree.retrieval.rerank.model import Reader, RerankerError, SHIPPED_DIR, reranker_setting

    if not config.train:
        setting = reranker_setting()
        folder = SHIPPED_DIR if setting == "default" else Path(setting)
        try:
            reader = Reader.load(folder) if setting.lower() not in ("off", "none") else None
        except RerankerError as exc:
            return dg.MaterializeResult(metadata={"status": "no model", "note": str(exc)})
        if reader is None:
            return dg.MaterializeResult(metadata={"status": "switched off (VECTREE_RERANKER=off)"})
        return dg.MaterializeResult(metadata={"status": "live", **model_metadata(reader.config, folder)})
    from vectree.retrieval.rerank.train import train_from_data_dir

    out = Path(config.out_dir) if config.out_dir else \
        vectree.store.reranker_models_dir / time.strftime("reader-%Y%m%d-%H%M%S")

    mirror = logging.getLogger(PROGRESS_LOGGER)

    def progress(event):
        if event["event"] == "eval":
            context.log.info(f"step {event['step']}/{event['total_steps']}: dev MRR {event['dev_mrr']}")
        mirror.info(event["event"], extra={"event": event})

    summary = train_from_data_dir(config.data_dir or None, out, quick=config.quick, seed=config.seed,
                                  threads=config.threads, progress=progress, max_steps=config.max_steps)
    reader = Reader.load(out)
    return dg.MaterializeResult(metadata={
        "status": "trained", **model_metadata(reader.config, out),
        "make_live": f"export VECTREE_RERANKER={out}  (or copy its files into {SHIPPED_DIR} to ship it)",
        "seconds": round(summary["seconds"], 1)})
