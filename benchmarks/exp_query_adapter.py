"""Does a query-side adapter over the frozen MiniLM help dense ranking?  (experiment, dev only)

The stored passage and entry vectors stay what the pipeline wrote; only the query vector is
mapped: ``q' = normalize(q + q @ D)`` with ``D`` (384 x 384) trained by InfoNCE over the reader's
training pairs (each question's positives against its mined hard negatives and the other
questions' texts in the batch).  Reports the dev MRR / P@1 within each question's candidates
(the reader's dev metric) for the base cosine and the adapted cosine, per source.

    .venv/bin/python benchmarks/exp_query_adapter.py [--data ../shared/data]

Measured 2026-12-05 (Adam lr 1e-3, L2 1e-3 on D, temperature .05, batch 64; 2,070 training
positives; dev MRR / P@1 within each question's candidates):

| epoch | all MRR | qasper | hotpotqa | pubmedqa | pagebench (20 groups) |
|---|---:|---:|---:|---:|---:|
| base MiniLM | .857 | .745 / .567 | .925 / .862 | 1.000 | .833 / .700 |
| 6 (best dev) | .897 | .837 / .730 | .928 / .862 | 1.000 | .783 / .600 |
| 14 | .875 | .797 / .645 | .928 / .862 | .994 | .750 / .550 |

The product's version is vectree/retrieval/rerank/qadapter*.py (`vectree reranker adapt`); on the
qasper evaluation it lost evidence-page precision (docs/eval/report.md), so it is not shipped.
"""

from __future__ import annotations

import argparse
import time

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--temp", type=float, default=0.05)
    ap.add_argument("--decay", type=float, default=1e-3)
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args()
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.rerank.data import build_reader_data
    from vectree.retrieval.rerank.qadapter_train import train_query_adapter
    from vectree.retrieval.rerank.train import resolve_data_dir

    t0 = time.perf_counter()
    data = build_reader_data(resolve_data_dir(args.data))
    train, dev = data.split("train"), data.split("dev")
    print(f"{len(train)} train / {len(dev)} dev pairs")

    def show(event):  # one line per epoch: dev MRR per source (the product's training loop)
        per = " | ".join(f"{k[8:]} {v:.4f}" for k, v in event.items() if k.startswith("dev_mrr_"))
        print(f"epoch {event['epoch']:>2}: loss {event['loss']:.3f} | {per}")

    _, info = train_query_adapter(train, dev, get_embedder(), epochs=args.epochs, lr=args.lr, decay=args.decay,
                                  temperature=args.temp, progress=show)
    print(f"base dev MRR {info['dev_mrr_before']}; chosen epoch {info['chosen_epoch']}: {info['dev_mrr_after']}")
    print(f"done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
