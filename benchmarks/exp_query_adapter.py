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

Not yet wired into the product: the reader's calibration fuses the base cosine and would need to
be refitted on adapted cosines, and the eval runs (qasper, qasper_pdf) are still to be made.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--temp", type=float, default=0.05)
    ap.add_argument("--decay", type=float, default=1e-3)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--ict", type=int, default=300)
    ap.add_argument("--cache", default=None, help="an .npz file for the base vectors (re-runs skip embedding)")
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--opt", choices=["adam", "sgd"], default="sgd")
    args = ap.parse_args()
    import torch

    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.rerank.calibrate import group_metrics
    from vectree.retrieval.rerank.data import build_reader_data
    from vectree.retrieval.rerank.train import resolve_data_dir

    torch.manual_seed(13)
    t0 = time.perf_counter()
    data = build_reader_data(resolve_data_dir(args.data), ict=args.ict)
    train, dev = data.split("train"), data.split("dev")
    emb = get_embedder()
    qs = sorted({e.question for e in data.examples if e.split in ("train", "dev")})
    ts = sorted({e.text for e in data.examples if e.split in ("train", "dev")})
    from pathlib import Path

    if args.cache and Path(args.cache).exists():
        z = np.load(args.cache)
        qv, tv = z["qv"], z["tv"]
    else:
        qv = emb.encode_queries(qs)
        tv = emb.encode_documents(ts)
        if args.cache:
            np.savez(args.cache, qv=qv, tv=tv)
    qi = {q: i for i, q in enumerate(qs)}
    ti = {t: i for i, t in enumerate(ts)}
    print(f"{len(train)} train / {len(dev)} dev pairs, {len(qs)} questions, {len(ts)} texts, "
          f"embedded in {time.perf_counter() - t0:.0f} s")

    Q = torch.tensor(qv)
    T = torch.tensor(tv)
    groups = defaultdict(lambda: {"q": None, "pos": [], "neg": []})
    for e in train:
        g = groups[e.group]
        g["q"] = qi[e.question]
        (g["pos"] if e.rel else g["neg"]).append(ti[e.text])
    items = [(g["q"], p, g["neg"]) for g in groups.values() for p in g["pos"]]
    print(f"{len(items)} training positives")
    D = torch.zeros(384, 384, requires_grad=True)
    # SGD: the gradient of D is a sum of outer products (query x direction); Adam's per-element
    # normalisation turns them into a large coherent shift of every query (measured: dev falls)
    opt = (torch.optim.Adam([D], lr=args.lr) if args.opt == "adam"
           else torch.optim.SGD([D], lr=args.lr, momentum=0.9))

    def adapt(q):
        out = q + q @ D
        return out / out.norm(dim=-1, keepdim=True)

    def dev_scores(matrix=True):
        with torch.no_grad():
            qa = adapt(Q) if matrix else Q
            return np.asarray([float(qa[qi[e.question]] @ T[ti[e.text]]) for e in dev])

    def report(tag, scores):
        by = defaultdict(list)
        for e, s in zip(dev, scores):
            by[e.source].append((e, s))
        parts = [f"all MRR {group_metrics(dev, scores)['mrr']:.4f}"]
        for src, rows in sorted(by.items()):
            m = group_metrics([r[0] for r in rows], np.asarray([r[1] for r in rows]))
            parts.append(f"{src} {m['mrr']:.4f}/{m['p_at_1']:.3f} ({m['groups']})")
        print(f"{tag:>10}: " + " | ".join(parts))

    report("base", dev_scores(False))
    rng = np.random.default_rng(13)
    batch = 64
    for epoch in range(args.epochs):
        order = rng.permutation(len(items))
        total = 0.0
        for s in range(0, len(order), batch):
            chunk = [items[j] for j in order[s:s + batch]]
            q = adapt(Q[[c[0] for c in chunk]])
            pos = T[[c[1] for c in chunk]]
            negs = sorted({n for c in chunk for n in c[2]})
            cand = torch.cat([pos, T[negs]]) if negs else pos
            logits = q @ cand.T / args.temp
            # a batch's other positives count as negatives unless they belong to the same question
            same_q = torch.tensor([[chunk[a][0] == chunk[b][0] and a != b for b in range(len(chunk))]
                                   for a in range(len(chunk))])
            mask = torch.zeros_like(logits, dtype=torch.bool)
            mask[:, :len(chunk)] = same_q
            logits = logits.masked_fill(mask, -1e4)
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(chunk))) + args.decay * (D ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        if (epoch + 1) % args.every == 0:
            report(f"epoch {epoch + 1}", dev_scores())
    print(f"done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
