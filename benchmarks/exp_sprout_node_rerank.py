"""Experiment: does the trained cross-encoder (the packaged reader) order SproutRAG's nodes better
than the node scorer?  Dev split only (HotpotQA + QASPER dev documents of the SproutRAG model).

    .venv/bin/python benchmarks/exp_sprout_node_rerank.py [--model FOLDER] [--depth 10]

For each dev query the model's own search returns ``--depth`` distinct nodes (its shipped order);
the reader scores each node's text and the nodes are re-ordered:

* ``shipped``: the search's order;
* ``reader``: by the reader's calibrated probability (logit fused with the node's cosine);
* ``rrf``: reciprocal-rank fusion of both orders (as the within-paper reranker does);
* ``reader-ie``: the expected-IE greedy of the search re-run over the same nodes with the reader's
  probability as the node's precision (``min(sum p*w, G)^2 / sum w``).

IE@1/3/5 per source (single-document search, as :func:`vectree.retrieval.sprout.train.dev_metrics`),
and the reader's scoring time per query; ``oracle-order`` is the best reordering of the same nodes
at k = 1 (a bound, not a system).

Measured 7 December (session 12), sprout-default-v4 (logit scale 1), shipped reader, depth 10
(58 HotpotQA / 141 QASPER dev queries; IE@1 / IE@3 / IE@5):

| order | HotpotQA | QASPER |
|---|---|---|
| shipped (the node scorer) | **.462 / .509** / .383 | **.296 / .240** / .209 |
| reader probability | .297 / .435 / .351 | .249 / .224 / .207 |
| RRF(shipped, reader) | .390 / .461 / **.389** | .286 / .238 / **.214** |
| expected-IE greedy on the reader's probability | .361 / .382 / .304 | .260 / .234 / .209 |
| reader logit alone | .158 / .211 / .209 | .173 / .179 / .171 |

The reader orders SproutRAG's nodes worse than the node scorer at every k that matters (and costs
200 ms a query on 2 cores); not adopted.  The best reorder of the same ten nodes would reach .547
(HotpotQA) / .564 (QASPER, first 61 queries) at k = 1.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def ie_rows(order, hits, tree, gold, w, ks=(1, 3, 5)):
    gw = w[list(gold)].sum()
    row = {}
    for k in ks:
        chosen = [hits[i] for i in order[:k]]
        covered = {c for h in chosen for c in tree.leaves(h.node)} & gold
        returned = float(sum(tree.weight[h.node] for h in chosen))
        r = w[list(covered)].sum() / gw if gw else 0.0
        p = w[list(covered)].sum() / returned if returned else 0.0
        row[k] = r * p
    return row


def greedy(p, weight, cap, k):
    chosen, got, cost = [], 0.0, 0.0
    alive = np.ones(len(p), bool)
    while alive.any() and len(chosen) < k:
        gain = got + p * weight
        if cap is not None:
            gain = np.minimum(gain, cap)
        value = np.where(alive, gain ** 2 / (cost + weight), -np.inf)
        i = int(np.argmax(value))
        chosen.append(i)
        alive[i] = False
        got, cost = got + p[i] * weight[i], cost + weight[i]
    return chosen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--data", default=None)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--limit", type=int, default=0, help="queries per source (0: all)")
    args = ap.parse_args()
    from vectree.retrieval.rerank.apply import fused_order
    from vectree.retrieval.rerank.calibrate import relevance_prob
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.sprout.data import build_training_set
    from vectree.retrieval.sprout.encoder import embed_texts
    from vectree.retrieval.sprout.model import default_model_dir, load_model
    from vectree.retrieval.sprout.train import _DevCache

    cache_dir = Path.home() / ".cache" / "vectree-sprout-calib"
    dev = build_training_set(args.data, cache_dir=cache_dir).split("dev")
    dev.encode = lambda t: embed_texts(t, cache_dir=cache_dir)
    model = load_model(args.model or default_model_dir())
    reader = get_reader()
    cache = _DevCache(model, dev)
    params = model.search_params()
    scorer = model.scorer_fn()
    systems = ("shipped", "reader", "rrf", "reader-ie", "logit", "oracle-order")
    res: dict = {}
    seen: dict = {}
    ms = []
    for doc, tree, units, qv in cache.rows:
        if args.limit and seen.get(doc.source, 0) >= args.limit:
            continue
        w = np.asarray(doc.weights, float)
        for qi, query in enumerate(doc.queries):
            seen[doc.source] = seen.get(doc.source, 0) + 1
            hits = model.search([tree], qv[qi], args.depth, params=params, node_units=[units], scorer=scorer,
                                query_text=query.text)
            if not hits:
                continue
            gold = set(query.positives)
            texts = [" ".join(doc.chunks[c] for c in tree.leaves(h.node)) for h in hits]
            t0 = time.perf_counter()
            logits = reader.score(query.text, texts, max_len=args.max_len)
            ms.append((time.perf_counter() - t0) * 1000)
            cos = np.asarray([h.score for h in hits])
            probs = relevance_prob(logits, reader.config.calibration, cos)
            weight = np.asarray([tree.weight[h.node] for h in hits], float)
            orders = {
                "shipped": list(range(len(hits))),
                "reader": list(np.argsort(-probs, kind="stable")),
                "rrf": list(fused_order(probs)),
                "reader-ie": greedy(probs, weight, params.gold_cap, len(hits)),
                "logit": list(np.argsort(-logits, kind="stable")),
            }
            # what a perfect reorder of the same nodes reaches at k = 1 (a bound, not a system)
            ie1 = [ie_rows([i], hits, tree, gold, w, ks=(1,))[1] for i in range(len(hits))]
            orders["oracle-order"] = list(np.argsort(-np.asarray(ie1), kind="stable"))
            for name, order in orders.items():
                row = ie_rows(order, hits, tree, gold, w)
                res.setdefault((doc.source, name), []).append(row)
    print(f"model {model.config.model_id}; depth {args.depth}; reader max_len {args.max_len}; "
          f"reader ms/query p50 {np.median(ms):.1f}")
    print("| source | system | n | IE@1 | IE@3 | IE@5 |")
    print("|---|---|---:|---:|---:|---:|")
    for src in sorted({s for s, _ in res}):
        for name in systems:
            rows = res[(src, name)]
            print(f"| {src} | {name} | {len(rows)} | " + " | ".join(f"{np.mean([r[k] for r in rows]):.4f}" for k in (1, 3, 5)) + " |")


if __name__ == "__main__":
    main()
