"""Where SproutRAG loses to paragraph retrieval: node representation or granularity choice.

    .venv/bin/python benchmarks/diag_sprout_nodes.py dragonball [--data ../shared/data/dragonball] [--split dev]

For every query of a sentence benchmark (DragonBall, HotpotQA) it builds the shipped (or
``$VECTREE_SPROUT_MODEL``) SproutRAG trees, then scores IE@1 of single-node answers chosen by:

* ``oracle any node`` / ``oracle paragraph node``: the best node for the gold (an upper bound on
  what any node scorer could reach with these trees, at any granularity / at paragraph level);
* ``top paragraph by text vector``: paragraph retrieval (MiniLM of the paragraph's own text);
* ``top paragraph by node vector``: the same paragraph nodes, ranked by the progressive node vector;
* ``top node by text vector, nodes <= N chunks``: every node of at most N chunks embedded from its
  own text, ranked by cosine to the raw query.

Diagnostic only: it reads gold to compute the oracles, so nothing here is ever a tuned setting.
``--split dev``: DragonBall's dev queries (``dragonball_split``) only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]


def main() -> None:
    from _sentence_setup import load_sentence_benchmark, sentence_arguments

    ap = sentence_arguments(__doc__.splitlines()[0], ("all", "dev"))
    ap.add_argument("--max-chunks", type=int, default=12)
    args = ap.parse_args()

    from vectree.evaluation.sentences import Unit, score_units
    from vectree.evaluation.systems.base import RunContext
    from vectree.evaluation.systems.sprout import SproutSystem
    from vectree.retrieval.sprout.tree import text_vectors

    bench, questions, docs, emb, data = load_sentence_benchmark(args.benchmark, args.data,
                                                                "dev" if args.split == "dev" else "all")
    ctx = RunContext(seed=0, work_dir=Path("/tmp"), data_dir=data, _embedder=emb, docs=docs)
    sysm = SproutSystem("sprout")
    reason = sysm.unavailable()
    if reason:
        raise SystemExit(reason)
    sysm.prepare(bench, ctx, docs)
    sentences = bench.sentences()

    # per document: paragraph nodes and small nodes with their text vectors
    small_nodes, small_vecs, para_nodes = [], [], []
    for tree, chunks in zip(sysm.trees, sysm.chunks):
        para_nodes.append(set(int(v) for v in SproutSystem._paragraph_nodes(tree, chunks)))
        nodes = np.flatnonzero(tree.hi - tree.lo <= args.max_chunks)
        vecs = text_vectors(tree, [c.text for c in chunks], nodes, emb.encode_documents)
        small_nodes.append(nodes)
        small_vecs.append(vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12))

    def unit(i, v):
        tree, chunks = sysm.trees[i], sysm.chunks[i]
        return Unit.of(sysm.doc_order[i], [(chunks[j].start, chunks[j].end) for j in tree.leaves(v)])

    rows: dict[str, list[float]] = {}

    def put(name, i, v, gold):
        """Record the IE@1 of node ``v`` of document ``i`` (0 when no node was chosen)."""
        ie = score_units([unit(i, v)], gold, sentences, (1,))["ie@1"] if v is not None else 0.0
        rows.setdefault(name, []).append(ie)

    for q in questions:
        picks = sorted(sysm.position[d] for d in q.doc_ids if d in sysm.position)
        xq = emb.encode_query(q.text)
        xq = xq / max(float(np.linalg.norm(xq)), 1e-12)
        qv = sysm.model.encode_query(xq)
        gold = q.gold
        best_any = best_para = 0.0
        cand = []  # (text cos, i, v, size, is_para, node cos)
        for i in picks:
            tree = sysm.trees[i]
            node_cos = sysm.units[i] @ qv
            tcos = small_vecs[i] @ xq
            for v, c in zip(small_nodes[i], tcos):
                cand.append((float(c), i, int(v), tree.size(int(v)), int(v) in para_nodes[i], float(node_cos[v])))
        # oracle (over the small nodes: larger ones are never good single answers here)
        for c, i, v, size, is_para, _ in cand:
            ie = score_units([unit(i, v)], gold, sentences, (1,))["ie@1"]
            best_any = max(best_any, ie)
            if is_para:
                best_para = max(best_para, ie)
        rows.setdefault("oracle any node (<= N chunks)", []).append(best_any)
        rows.setdefault("oracle paragraph node", []).append(best_para)
        paras = [t for t in cand if t[4]]
        top = max(paras, key=lambda t: t[0]) if paras else None
        put("top paragraph by text vector", top[1] if top else 0, top[2] if top else None, gold)
        top = max(paras, key=lambda t: t[5]) if paras else None
        put("top paragraph by node vector", top[1] if top else 0, top[2] if top else None, gold)
        for n in (1, 2, 4, args.max_chunks):
            pool = [t for t in cand if t[3] <= n]
            top = max(pool, key=lambda t: t[0]) if pool else None
            put(f"top node by text vector, <= {n} chunks", top[1] if top else 0, top[2] if top else None, gold)
        # paragraph first, then its best child if the child's text cosine beats it by a margin
        for margin in (0.0, 0.05):
            top = max(paras, key=lambda t: t[0]) if paras else None
            if top is None:
                put(f"top paragraph, or its better sub-node (margin {margin})", 0, None, gold)
                continue
            tree = sysm.trees[top[1]]
            inside = [t for t in cand if t[1] == top[1] and t[2] != top[2]
                      and tree.lo[top[2]] <= tree.lo[t[2]] and tree.hi[t[2]] <= tree.hi[top[2]]]
            sub = max(inside, key=lambda t: t[0]) if inside else None
            pick = sub if sub is not None and sub[0] > top[0] + margin else top
            put(f"top paragraph, or its better sub-node (margin {margin})", pick[1], pick[2], gold)

    print(f"{args.benchmark} ({args.split}): {len(questions)} queries with gold, model {sysm.model.config.model_id}")
    print("| choice | IE@1 |\n|---|---:|")
    for name, vals in rows.items():
        print(f"| {name} | {np.mean(vals):.3f} |")


if __name__ == "__main__":
    main()
