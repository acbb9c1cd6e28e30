"""SproutRAG stage: training set -> model -> per-paper trees (Lance tables of nodes).

Training is opt-in.  ``vectree ingest`` materialises every upstream asset that never ran, which
would otherwise mean minutes of MiniLM embedding and training on the first ingest of every store
(every CI run, every test that builds a store), and a failure wherever the external training data
is absent.  So by default ``sprout_training_set`` and ``sprout_model`` only *report* what the
store holds (a model trained earlier, or none), and ``sprout_tree`` is skipped with a metadata
note while no model exists.  Training happens when asked for: ``vectree sprout train [--quick]``,
or materialising these two assets with the config ``build: true`` / ``train: true`` from the
Dagster launchpad; a new model makes every ``sprout_tree`` partition stale, and the CLI rebuilds
them all.
"""


import logging
import time

import dagster as dg

from .ingest import paper_pages
from .partitions import (FAILED_KEY, MODEL, PAPER, PAPER_BACKFILL, batch_keys, finish_batch, failed_paper,
                         paper_check, paper_check_spec, papers_partitions)
from .resources import VectreeStore

GROUP = "sprout"


# long steps report here as well as to the run's log, so the CLI can show them while it waits
PROGRESS_LOGGER = "vectree.progress"


def _progress(context: dg.AssetExecutionContext):
    mirror = logging.getLogger(PROGRESS_LOGGER)

    def log(message: str) -> None:
        context.log.info(message)
        mirror.info(message)

    return log


def _events():
    """Structured progress (one dict per epoch, the data counts): the CLI draws its bars from these."""
    mirror = logging.getLogger(PROGRESS_LOGGER)

    def event(payload: dict) -> None:
        mirror.info("%s", payload.get("phase", ""), extra={"vectree_event": payload})

    return event


def _training_folder(store):
    return store.sprout_training_dir


class SproutTrainingSetConfig(dg.Config):
    build: bool = False  # False: report the stored training set (what `vectree ingest` does)
    quick: bool = False  # a small subset, for a training run of about a minute
    data_dir: str = ""  # default: $VECTREE_TRAINING_DATA, else ../shared/data next to the repo
    # hotpotqa, qasper (licence-compatible: the default) and dragonball (a benchmark model, never shipped)
    sources: list[str] = ["hotpotqa", "qasper"]


@dg.asset(
    group_name=GROUP,
    tags=MODEL,
    kinds={"python", "numpy"},
    description="SproutRAG training documents (HotpotQA supporting facts, QASPER dev evidence) chunked "
    "and embedded with MiniLM, split train/dev by a fixed hash of the item id. Built only with config "
    "build: true (`vectree sprout train`); reads $VECTREE_TRAINING_DATA (default ../shared/data).",
)
def sprout_training_set(context: dg.AssetExecutionContext, config: SproutTrainingSetConfig,
                        vectree: VectreeStore) -> dg.MaterializeResult:
    from vectree.retrieval.sprout.data import TrainingSet, build_training_set

    store = vectree.store
    folder = _training_folder(store)
    if not config.build:
        if (folder / "docs.json").exists():
            ts = TrainingSet.load(folder)
            return dg.MaterializeResult(metadata={
                "status": "stored", "summary": dg.MetadataValue.json(ts.summary()),
                "path": dg.MetadataValue.path(str(folder))})
        return dg.MaterializeResult(metadata={
            "status": "not built",
            "note": "run `vectree sprout train` (or materialise with config build: true) to build it",
        })
    started = time.perf_counter()
    ts = build_training_set(config.data_dir or None, quick=config.quick, cache_dir=store.sprout_cache_dir,
                            log=_progress(context), sources=config.sources)
    ts.save(folder)
    summary = ts.summary()
    _events()({"phase": "data", "summary": summary, "data_dir": ts.info["data_dir"],
               "benchmark_model": ts.info.get("benchmark_model", False)})
    table = "| source/split | docs | queries | chunks |\n|---|---|---|---|\n" + "\n".join(
        f"| {k} | {v['docs']} | {v['queries']} | {v['chunks']} |" for k, v in sorted(summary.items()))
    return dg.MaterializeResult(metadata={
        "status": "built", "quick": config.quick, "splits": dg.MetadataValue.md(table),
        "data_dir": ts.info["data_dir"], "files_sha256": dg.MetadataValue.json(ts.info["files"]),
        "split_rule": ts.info["split_rule"], "seconds": round(time.perf_counter() - started, 1),
        "sources": ", ".join(ts.info.get("sources", [])), "benchmark_model": bool(ts.info.get("benchmark_model")),
        "path": dg.MetadataValue.path(str(folder)),
    })


class SproutModelConfig(dg.Config):
    train: bool = False  # False: report the live model (what `vectree ingest` does)
    quick: bool = False  # fewer epochs
    epochs: int = 0  # 0: the default of the chosen mode
    seed: int = 13
    threads: int = 2
    make_live: bool = True  # False: write the model beside the others; `vectree sprout use ID` makes it live
    force_live: bool = False  # make it live even when its dev IE did not rise over the untrained model's
    lexical: bool = True  # False: the node scorer reads cosine features only (no query words in the nodes)


def _loss_table(history: list) -> str:
    rows = ["| stage | fold | epoch | loss | parts | dev |", "|---|---|---|---|---|---|"]
    for h in history:
        if "loss" not in h:
            continue
        parts = " ".join(f"{k[2:]} {h[k]:.4f}" for k in ("l_leaf", "l_node", "l_attn", "l_rerank", "l_tau") if k in h)
        dev = (h.get("dev") or {}).get("mean_ie", (h.get("dev_r_precision") or {}).get("mean", ""))
        fold = "" if h.get("fold") is None else h["fold"]
        rows.append(f"| {h['stage']} | {fold} | {h['epoch']} | {h['loss']:.4f} | {parts} | {dev} |")
    return "\n".join(rows)


def _model_metadata(model) -> dict:
    tr = model.config.training or {}
    return {
        "model_id": model.config.model_id, "base_encoder": model.config.base_encoder,
        "parameters": model.n_parameters(), "training_seconds": tr.get("seconds"),
        "best_epoch": tr.get("best_epoch"), "best_rerank_epoch": tr.get("best_rerank_epoch"),
        "dev_ie_before": dg.MetadataValue.json(tr.get("dev_before", {})),
        "dev_ie_after": dg.MetadataValue.json(tr.get("dev_best", {})),
        "losses": dg.MetadataValue.md(_loss_table(tr.get("history", []))),
        "alpha_before": dg.MetadataValue.json(tr.get("alpha_before")),
        "alpha_after": dg.MetadataValue.json(tr.get("alpha_after")),
        "tau_before": tr.get("tau_before"), "tau": float(model.tau.detach()), "peak_rss_mb": tr.get("peak_rss_mb"),
    }


def _dev_mean_ie(model) -> tuple[float | None, float | None]:
    """Mean dev IE@1 of the untrained model and of the trained one (its best epoch)."""
    tr = model.config.training or {}
    return (tr.get("dev_before") or {}).get("mean_ie"), (tr.get("dev_best") or {}).get("mean_ie")


def _learned_check(model) -> dg.AssetCheckResult:
    import numpy as np

    tr = model.config.training or {}
    before, after = _dev_mean_ie(model)
    a0, a1 = tr.get("alpha_before"), tr.get("alpha_after")
    moved = float(np.abs(np.array(a1) - np.array(a0)).max()) if a0 and a1 else 0.0
    passed = before is not None and after is not None and after > before and moved > 0
    return dg.AssetCheckResult(check_name="learned", passed=bool(passed), severity=dg.AssetCheckSeverity.WARN,
                               metadata={"dev_ie_before": before, "dev_ie_after": after, "alpha_max_change": moved})


@dg.asset(
    group_name=GROUP,
    tags=MODEL,
    kinds={"pytorch", "safetensors"},
    deps=[sprout_training_set],
    check_specs=[dg.AssetCheckSpec("learned", asset="sprout_model",
                                   description="dev IE rose over the untrained model and alpha moved")],
    description="The SproutRAG model (sentence-level encoder, learned layer x head aggregation alpha, learned "
    "threshold tau), trained jointly on retrieval + attention + threshold losses with model selection on dev IE. "
    "Trains only with config train: true (`vectree sprout train`); otherwise reports the live model.",
)
def sprout_model(context: dg.AssetExecutionContext, config: SproutModelConfig, vectree: VectreeStore) -> dg.MaterializeResult:
    from vectree.retrieval.sprout.model import current_model_dir, load_model, publish_model, write_model_card

    store = vectree.store
    if not config.train:
        folder = current_model_dir(store)
        if folder is None:
            return dg.MaterializeResult(
                metadata={"status": "no model", "note": "run `vectree sprout train` (or materialise "
                          "sprout_training_set with build: true and this asset with train: true)"},
                check_results=[dg.AssetCheckResult(check_name="learned", passed=True,
                                                   metadata={"status": "no model trained yet"})])
        model = load_model(folder)
        return dg.MaterializeResult(metadata={"status": "live", **_model_metadata(model)},
                                    check_results=[_learned_check(model)])
    from vectree.retrieval.sprout.data import TrainingSet
    from vectree.retrieval.sprout.encoder import embed_texts
    from vectree.retrieval.sprout.train import TrainConfig, train

    ts = TrainingSet.load(_training_folder(store))
    cache = store.sprout_cache_dir
    ts.encode = lambda texts: embed_texts(texts, cache_dir=cache)  # text nodes, through the same cache
    tc = TrainConfig.quick(seed=config.seed, threads=config.threads) if config.quick else \
        TrainConfig(seed=config.seed, threads=config.threads)
    if config.epochs:
        tc.epochs = config.epochs
    tc.lexical = config.lexical
    dev = ts.split("dev")
    result = train(ts.split("train"), dev, tc, log=_progress(context), progress=_events())
    model = result.model
    _calibrate_within_paper(context, model, dev)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    bench = "-bench" if ts.info.get("benchmark_model") else ""
    model.config.model_id = f"sprout-{stamp}-s{config.seed}{'-quick' if config.quick else ''}{bench}"
    # a model that did not beat its own starting point on dev never replaces the live one on its own
    # (a --quick run on a small sample can end below it): it is written, and `vectree sprout use`
    # can still make it live
    before, after = _dev_mean_ie(model)
    improved = config.force_live or before is None or after is None or after > before
    folder = publish_model(store, model, make_live=config.make_live and improved)
    write_model_card(folder, model)
    live = "live" if config.make_live and improved else (
        "kept the live model: dev IE did not rise over the untrained model" if config.make_live else "not made live")
    return dg.MaterializeResult(
        metadata={"status": "trained", "live": live, **_model_metadata(model),
                  "path": dg.MetadataValue.path(str(folder))},
        check_results=[_learned_check(model)],
    )


def _calibrate_within_paper(context, model, dev) -> None:
    """Set the model's weight in within-paper passage search from its QASPER dev documents."""
    from vectree.retrieval.passages import calibrate_sprout_weight

    cal = calibrate_sprout_weight(model, dev.docs, dev.x, dev.xq, dev.encode)
    if not cal["queries"]:
        context.log.info("no QASPER dev questions: within-paper vote weight left at 1.0")
        return
    model.config.within_paper_weight = float(cal["weight"])
    model.config.within_paper_per_node = cal["per_node"]
    model.config.within_paper_calibration = cal
    context.log.info(f"within-paper vote weight {cal['weight']}, per node {cal['per_node'] or 'all'} (QASPER dev, {cal['queries']} questions: "
                     + ", ".join(f"{w}: {s['score']}" for w, s in cal["scores"].items()) + ")")


@dg.asset(
    group_name=GROUP,
    tags=PAPER,
    kinds={"lancedb"},
    partitions_def=papers_partitions,
    deps=[paper_pages, "paper_passages", sprout_model],  # after the passages: their vectors are reused
    backfill_policy=PAPER_BACKFILL,
    check_specs=[paper_check_spec("tree_complete", "sprout_tree", "a binary tree over every chunk: 2n - 1 nodes")],
    description="The paper's SproutRAG tree: a Lance table of nodes (node_id, parent, children, depth, chunk ids, "
    "pages, text, node vector: progressive, or its own text's for small nodes of a text-node model) under "
    "sprout/trees/. Skipped while no model is trained.",
)
def sprout_tree(context: dg.AssetExecutionContext, vectree: VectreeStore):
    from vectree.retrieval.sprout.model import current_model_dir
    from vectree.retrieval.sprout.papers import model_for

    store = vectree.store
    docs = batch_keys(context)
    if current_model_dir(store) is None:
        for doc_id in docs:
            yield paper_check("sprout_tree", "tree_complete", doc_id, passed=True,
                              metadata={"paper": doc_id, "status": "skipped: no model"})
        yield from finish_batch(context, {d: {} for d in docs}, status="skipped",
                                reason="no trained SproutRAG model; run `vectree sprout train`")
        return
    model = model_for(store)  # loaded once for the batch
    per_paper, failed = {}, {}
    for doc_id in docs:
        try:
            metadata, check = _one_sprout_tree(store, doc_id, model)
        except Exception as exc:  # one broken paper never stops the batch
            event = failed_paper(context, "sprout_tree", doc_id, exc)
            failed[doc_id] = event.metadata[FAILED_KEY].value
            yield event
            continue
        per_paper[doc_id] = metadata
        yield check
    yield from finish_batch(context, per_paper, failed)


def _one_sprout_tree(store, doc_id: str, model):
    from vectree.retrieval.sprout.papers import build_paper_tree, tree_table_path, write_tree_table

    try:
        record = store.read_record(doc_id)
    except Exception as exc:  # a paper without a record must not fail the run
        record = {"status": "failed", "error": str(exc)}
    if record.get("status") != "ok":
        path = write_tree_table(store, doc_id, [], model.config.base_dim)
        return ({"status": record.get("status", "failed"), "reason": record.get("error") or "",
                 "path": dg.MetadataValue.path(str(path))},
                paper_check("sprout_tree", "tree_complete", doc_id, passed=True,
                            metadata={"paper": doc_id, "status": "empty: paper not parsed"}))
    from vectree.retrieval.passages import passage_vectors_by_text

    # the passages asset ran MiniLM over most of these texts already (most chunks are one
    # passage): reuse its vectors, so ingest embeds a sentence once, not twice
    rows, stats = build_paper_tree(store, doc_id, model, known=passage_vectors_by_text(store, doc_id))
    write_tree_table(store, doc_id, rows, model.config.base_dim)
    n = stats["chunks"]
    complete = stats["nodes"] == (2 * n - 1 if n else 0)
    return ({"status": "built", "model_id": model.config.model_id, **stats,
             "path": dg.MetadataValue.path(str(tree_table_path(store, doc_id)))},
            paper_check("sprout_tree", "tree_complete", doc_id, passed=bool(complete),
                        description=f"{doc_id}: {stats['nodes']} nodes over {n} chunks",
                        metadata={"paper": doc_id, "chunks": n, "nodes": stats["nodes"]}))
