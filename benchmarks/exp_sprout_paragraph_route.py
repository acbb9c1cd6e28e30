"""Experiment: at k = 1, let paragraph retrieval choose *where* and SproutRAG choose *how much*.

    .venv/bin/python benchmarks/exp_sprout_paragraph_route.py hotpotqa --split train
    .venv/bin/python benchmarks/exp_sprout_paragraph_route.py hotpotqa --split dev

On HotpotQA SproutRAG's first node is precise (.89 on dev) but its IE@1 is level with paragraph
retrieval's on the questions it was trained on (session 13).  This checks whether the two disagree
on *which paragraph*: for every query, the first unit of

* ``sprout``: SproutRAG's first node;
* ``paragraphs``: the paragraph retriever's first paragraph;
* ``route``: SproutRAG's best node (in its own order, among its first ``--depth``) inside the
  paragraph retriever's first paragraph, or that paragraph itself when none lies inside;

IE@1 of each, and how often SproutRAG's first node lies inside the first paragraph.  Diagnostic on
training-side splits only (``train``, ``dev``); nothing here is a shipped setting.

Measured 7 December (session 13), shipped ``sprout-default-v4``, HotpotQA, searched over the whole
benchmark corpus as ``diag_sprout_ranks.py`` does:

| split | queries | first node inside the first paragraph | IE@1 sprout | paragraphs | route |
|---|---:|---:|---:|---:|---:|
| train (trained on) | 191 | .644 | **.394** | .385 | .358 |
| dev (selected on) | 59 | .627 | **.433** | .363 | .357 |

Where the two disagree (a third of the queries) SproutRAG's paragraph is the better one on average:
routing through the paragraph retriever costs IE@1 on both splits.  Not built.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]


def inside(node, para) -> bool:
    """Every span of ``node`` lies within a span of ``para`` (same document)."""
    return node.doc_id == para.doc_id and all(any(a >= c and b <= d for c, d in para.spans) for a, b in node.spans)


def main() -> None:
    from _sentence_setup import load_sentence_benchmark, sentence_arguments

    ap = sentence_arguments(__doc__.splitlines()[0], ("train", "dev"), "train")
    ap.add_argument("--depth", type=int, default=10)
    args = ap.parse_args()

    from vectree.evaluation.sentences import Unit, score_units
    from vectree.evaluation.systems import make_system
    from vectree.evaluation.systems.base import RunContext

    bench, questions, docs, emb, data = load_sentence_benchmark(args.benchmark, args.data, args.split)
    ctx = RunContext(seed=0, work_dir=Path("/tmp/vectree-exp-route"), data_dir=data, _embedder=emb, docs=docs)
    sentences = bench.sentences()
    sprout, paras = make_system("sprout", "sentences"), make_system("paragraphs", "sentences")
    for s in (sprout, paras):
        s.prepare(bench, ctx, docs)
    ie = {"sprout": [], "paragraphs": [], "route": []}
    agree = []
    for q in questions:
        nodes = [Unit.of(h.doc_id, list(h.spans)) for h in sprout.search(q.text, args.depth)]
        first_para = [Unit.of(h.doc_id, list(h.spans)) for h in paras.search(q.text, 1)]
        if not nodes or not first_para:
            continue
        para = first_para[0]
        routed = next((n for n in nodes if inside(n, para)), para)
        agree.append(inside(nodes[0], para))
        for name, unit in (("sprout", nodes[0]), ("paragraphs", para), ("route", routed)):
            ie[name].append(score_units([unit], q.gold, sentences, (1,))["ie@1"])
    print(f"{args.benchmark} ({args.split}): {len(agree)} queries; SproutRAG's first node inside the first "
          f"paragraph: {np.mean(agree):.3f}")
    for name, values in ie.items():
        print(f"  IE@1 {name}: {np.mean(values):.3f}")


if __name__ == "__main__":
    main()
