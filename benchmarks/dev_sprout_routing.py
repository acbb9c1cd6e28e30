"""SproutRAG's document routing on a corpus-wide benchmark: how often the gold document is routed,
and what IE@k the search reaches with more (or all) documents routed.  Training-split questions only.

    .venv/bin/python benchmarks/dev_sprout_routing.py [dragonball|hotpotqa] [--split train|dev] \\
        [--route 8 --route 16 --route 0]   # 0: every document of the scope

``route_docs`` (default 8) limits the hierarchical search to the documents whose best leaf is
closest to the query; nodes of the other documents are reached only by the fill-k tiers.  For
DragonBall every query searches all 216 documents, so routing decides much.  The questions are
those of ``--split`` by ``dragonball_split`` / ``hotpotqa_split`` (``train`` by default: the shipped
model never trained on DragonBall, and no held-out question is read).

Measured 2026-12-06, sprout-default-v3, DragonBall train split (83 questions with gold): the gold
document is routed for .988 of them at ``route_docs`` 8 and for all at 16; IE@1/3/5 .223 / .120 /
.085 at 8 and .223 / .121-.124 / .086-.087 at 16, 32 or all.  Routing is not what holds SproutRAG
back on DragonBall; the choice of node inside the routed documents is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("benchmark", nargs="?", default="dragonball", choices=["dragonball", "hotpotqa"])
    ap.add_argument("--data", default=None)
    ap.add_argument("--split", default="train", choices=["train", "dev"])
    ap.add_argument("--route", type=int, action="append", default=None)
    args = ap.parse_args()
    routes = args.route or [8, 16, 32, 0]

    from _sentence_setup import load_sentence_benchmark

    from vectree.evaluation.sentences import Unit, score_units
    from vectree.evaluation.systems.base import RunContext
    from vectree.evaluation.systems.sprout import SproutSystem

    bench, questions, docs, emb, data = load_sentence_benchmark(args.benchmark, args.data, args.split)
    ctx = RunContext(seed=0, work_dir=Path("/tmp"), data_dir=data, _embedder=emb, docs=docs)
    sysm = SproutSystem("sprout")
    reason = sysm.unavailable()
    if reason:
        raise SystemExit(reason)
    sysm.prepare(bench, ctx, docs)
    sentences = bench.sentences()
    base = sysm._params()
    print(f"{args.benchmark}, {args.split} split: {len(questions)} questions with gold; model "
          f"{sysm.model.config.model_id}, configured route_docs {base.route_docs}")
    print("| route_docs | gold document routed | IE@1 | IE@3 | IE@5 | R@5 |\n|---|---:|---:|---:|---:|---:|")
    for route in routes:
        params = sysm.model.search_params(route_docs=route or None)
        routed_ok, per = [], []
        for q in questions:
            picks = sorted(sysm.position[d] for d in q.doc_ids if d in sysm.position)
            xq = emb.encode_query(q.text)
            qv = sysm.model.search_query(xq)
            # the routing rule of search_forest: documents by their best leaf's cosine
            units = [sysm.units[i] for i in picks]
            best = np.array([float((u[: sysm.trees[i].n_leaves] @ (qv / np.linalg.norm(qv))).max())
                             for u, i in zip(units, picks)])
            order = np.argsort(-best, kind="stable")[: route or None]
            routed = {sysm.doc_order[picks[j]] for j in order}
            gold_docs = {d for d, _ in q.gold}
            routed_ok.append(bool(routed & gold_docs))
            cands = sysm.model.search([sysm.trees[i] for i in picks], qv, 5, params=params, node_units=units,
                                      query_text=q.text)
            hits = [sysm._hit(picks[c.doc], c.node, float(c.score)) for c in cands]
            per.append(score_units([Unit.of(h.doc_id, h.spans) for h in hits], q.gold, sentences))
        m = {k: np.mean([p[k] for p in per]) for k in ("ie@1", "ie@3", "ie@5", "recall@5")}
        print(f"| {route or 'all'} | {np.mean(routed_ok):.3f} | {m['ie@1']:.3f} | {m['ie@3']:.3f} | {m['ie@5']:.3f} "
              f"| {m['recall@5']:.3f} |")


if __name__ == "__main__":
    main()
