"""The reader with int8 dynamic quantization: how much faster, how much do its outputs move?

    .venv/bin/python benchmarks/exp_reader_int8.py --store DIR [--papers 6] [--repeat 5]

The reader (MiniLM cross-encoder with LoRA adapters and answer heads) reads every candidate
sentence of a within-paper search; on 2 cores that is a large share of `vectree ask`'s time.
``torch.ao.quantization.quantize_dynamic`` turns its ``nn.Linear`` layers into int8 ones without
training.  For the first ``--papers`` papers of a store, one question each (the paper's title as a
question: no benchmark text), the paper's first 24 sentences at the product's reading length
(``rerank.apply.PASSAGE_MAX_LEN``) are read by the shipped reader in fp32 and in int8, and this
prints the median time of one read of 24 sentences, the largest relevance-logit change, the rank
correlation of the two relevance orders, and how many answer spans stay the same.

Measured 7 December (session 15), 2 idle cores, a store of the shared PDFs (first six papers):

| paper | fp32 ms | int8 ms | speed-up | max logit change | rank correlation | same spans |
|---|---:|---:|---:|---:|---:|---:|
| 1801-05147 | 442 | 244 | 1.81x | .218 | .750 | 15 / 24 |
| 2001-03131 | 248 | 114 | 2.18x | .246 | .946 | 17 / 24 |
| 2020-acl-main-447 | 419 | 297 | 1.41x | .410 | .756 | 13 / 24 |
| 2023-eacl-main-121 | 477 | 272 | 1.75x | .263 | .863 | 12 / 24 |
| 2203-00130v1 | 429 | 221 | 1.94x | .272 | .743 | 13 / 24 |
| 2206-10883v3 | 484 | 231 | 2.10x | .413 | .530 | 12 / 24 |

Median speed-up 1.88x, but int8 is no drop-in: the relevance order of the 24 sentences changes
(rank correlation .53-.95) and about half the answer spans change.  Its calibration (relevance,
page selection, abstention, answer confidence) would have to be refitted and the dev checks
re-run before it could be used.  Not built.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import numpy as np

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--papers", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import torch

    from vectree.agent.tools import Toolbox
    from vectree.retrieval.rerank.apply import PASSAGE_MAX_LEN
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.store import Store

    reader = get_reader()
    if reader is None:
        raise SystemExit("no reader: the shipped model is missing")
    tb = Toolbox(Store(args.store), reranker=reader)
    fp32 = reader.net
    int8 = torch.ao.quantization.quantize_dynamic(copy.deepcopy(fp32), {torch.nn.Linear}, dtype=torch.qint8)

    def timed(net, question, texts):
        reader.net = net
        out, times = None, []
        for _ in range(args.repeat):
            t = time.perf_counter()
            out = reader.read(question, texts, max_len=PASSAGE_MAX_LEN)
            times.append(time.perf_counter() - t)
        return out, float(np.median(times))

    print("| paper | fp32 ms | int8 ms | speed-up | max logit change | rank correlation | same spans |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    ratios = []
    for row in tb.store.papers()[: args.papers]:
        texts = tb.passages(row["doc_id"]).texts[:24]
        title = (row.get("title") or "").strip()
        if len(texts) < 8 or not title:
            continue
        question = f"What does {title} show?"
        a, ta = timed(fp32, question, texts)
        b, tb_ = timed(int8, question, texts)
        la, lb = np.array([r.relevance for r in a]), np.array([r.relevance for r in b])
        ranks = np.corrcoef(np.argsort(np.argsort(-la)), np.argsort(np.argsort(-lb)))[0, 1]
        same = sum(x.span == y.span for x, y in zip(a, b))
        ratios.append(ta / tb_)
        print(f"| {row['doc_id'][:28]} | {1000 * ta:.0f} | {1000 * tb_:.0f} | {ta / tb_:.2f}x | "
              f"{np.abs(la - lb).max():.3f} | {ranks:.3f} | {same} / {len(a)} |", flush=True)
    reader.net = fp32
    if ratios:
        print(f"\nmedian speed-up {np.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
