"""Train the reader with a changed recipe (more adapted layers, more steps) and compare its dev
figures with the shipped model's card: the experiment behind a recipe change.

    python benchmarks/exp_reader_recipe.py --out /tmp/reader-l6 --lora-layers 6 --max-steps 1280 --max-epochs 4

Training data, splits, seed, calibration and the model card are the ones of ``vectree reranker
train`` (retrieval.rerank.train.fit_and_save); only the named settings change.  Everything is
selected and calibrated on the dev split; nothing here reads an evaluation question.  The new
folder is a complete model: ``VECTREE_RERANKER=<out>`` makes it live for a `vectree eval` run.

Measured 2026-12-06 (2 CPU cores): ``--lora-layers 6 --max-steps 1280 --max-epochs 4`` trained in
752 s (936 s with calibration), best dev-sample MRR at step 640.  Dev: reader-logit MRR / P@1 .841 /
.728 (shipped .793 / .639), fused .864 / .771 (.860 / .757), span F1 .415 (.341), type accuracy
.609 (.635), answer ECE .029 (.043), page selection mean F1 .464 at 1.10 pages (.450 at 1.91); but
answer F1 on the dev papers (``dev_answer_holder.py``) .111 (.120), and on the qasper evaluation
vectree .347 / .424 / F1 .109 against the shipped .344 / .497 / .167: not adopted
(docs/eval/report.md, 6 December night).

Measured 7 December (session 11), 2 CPU cores, shipped recipe otherwise (2 adapted layers):

| recipe | train s | dev logit MRR / P@1 | dev fused MRR / P@1 | page sel. mean F1 | within-paper P@1: RRF order / logit |
|---|---:|---:|---:|---:|---:|
| shipped (pointwise BCE) | 244 | .793 / .639 | .860 / .757 | .450 | .496 / .418 |
| ``--listwise 1 --groups-per-batch 4`` | 326 | **.835 / .721** | .855 / .748 | .456 | .482 / .411 |
| ... ``--paper-negatives 6`` | 430 | (dev changed) | (dev changed) | .444 | .475 / .397 |

``--listwise``: a groupwise softmax loss over each question's candidates beside the BCE (batches
of whole questions).  ``--paper-negatives``: each QASPER train question asked of a whole dev-built
paper (:func:`vectree.retrieval.rerank.pages.paper_examples`), the first stage's best non-evidence
sentences its negatives (3,977 train and 1,148 dev pairs; dev then holds these harder groups, so
its MRR is not comparable).  The last column is ``benchmarks/diag_page_ranking.py`` (dev, 141
questions; the first stage alone: .511).  The groupwise loss lifts the logit's ranking of each
question's own candidates as much as six adapted layers did, yet fused with the cosine it ranks
no better than the cosine; trained on the navigator's own candidates neither the logit (.418 ->
.397) nor the fused order (.496 -> .475) gains within a paper.  Neither was adopted: within a
paper, with this data and these weights, nothing trained here beats the first stage's order.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default="")
    ap.add_argument("--lora-layers", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=640)
    ap.add_argument("--max-epochs", type=int, default=2)
    ap.add_argument("--eval-every", type=int, default=160)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--listwise", type=float, default=0.0, help="weight of the groupwise softmax loss")
    ap.add_argument("--groups-per-batch", type=int, default=3)
    ap.add_argument("--paper-negatives", type=int, default=0,
                    help="first-stage negatives per QASPER question asked of a whole (dev-built) paper")
    args = ap.parse_args()

    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.rerank.data import build_reader_data
    from vectree.retrieval.rerank.model import SHIPPED_DIR, Reader
    from vectree.retrieval.rerank.train import TrainSettings, fit_and_save, resolve_data_dir

    path = resolve_data_dir(args.data or None)
    from vectree.evaluation.embedcache import cached_embedder
    from vectree.retrieval.rerank.pages import paper_examples

    extra = paper_examples(path, cached_embedder(), negatives=args.paper_negatives) if args.paper_negatives else ()
    data = build_reader_data(path, seed=args.seed, extra=extra)
    print("data", json.dumps(data.counts()))
    settings = TrainSettings(seed=args.seed, threads=args.threads, lora_layers=args.lora_layers,
                             max_steps=args.max_steps, max_epochs=args.max_epochs, eval_every=args.eval_every,
                             listwise=args.listwise, groups_per_batch=args.groups_per_batch,
                             time_budget_s=60 * 60)
    started = time.perf_counter()

    def progress(e):
        if e["event"] == "eval":
            print(f"step {e['step']}/{e['total_steps']}: dev MRR {e['dev_mrr']} type {e['dev_type_acc']} "
                  f"span {e['dev_span_f1']} ({e['seconds']} s)", flush=True)
        elif e["event"] not in ("step",):
            print(e["event"], {k: v for k, v in e.items() if k != "event"} if len(str(e)) < 300 else "", flush=True)

    summary = fit_and_save(data, Path(args.out), settings, progress=progress, embedder=get_embedder(),
                           data_dir=str(path))
    print(f"trained and calibrated in {time.perf_counter() - started:.0f} s")
    new, old = Reader.load(Path(args.out)).config, Reader.load(SHIPPED_DIR).config
    rows = [("dev MRR (reader logit)", "after", "mrr"), ("dev P@1 (reader logit)", "after", "p_at_1"),
            ("type accuracy", "after", "type_accuracy"), ("span F1", "after", "span_f1")]
    print(f"\n| figure | shipped ({old.lora_layers} layers, {old.training.get('steps')} steps) "
          f"| new ({args.lora_layers} layers, {summary['steps']} steps) |\n|---|---:|---:|")
    for label, block, key in rows:
        print(f"| {label} | {old.training.get(block, {}).get(key, float('nan')):.4f} "
              f"| {new.training.get(block, {}).get(key, float('nan')):.4f} |")
    for key in ("fused_mrr", "fused_p_at_1", "selection_f1", "answer_ece"):
        o = (old.training.get("dev_figures") or {}).get(key)
        n = (new.training.get("dev_figures") or {}).get(key)
        if o is not None or n is not None:
            print(f"| {key} | {o} | {n} |")
    po = (old.calibration.get("page_selection") or {})
    pn = (new.calibration.get("page_selection") or {})
    for key in ("precision", "recall", "mean_f1", "pages"):
        print(f"| page selection {key} | {po.get(key)} | {pn.get(key)} |")


if __name__ == "__main__":
    main()
