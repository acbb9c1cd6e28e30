"""Does a lexical (BM25) signal beside MiniLM's cosine pick better units?  Dev questions only.

    .venv/bin/python benchmarks/dev_lexical_units.py hotpotqa|dragonball [--data DIR] [--split dev|train]

For the questions of SproutRAG's ``dev`` split (``hotpotqa_split`` / ``dragonball_split``; never
the held-out ``test`` questions) it ranks whole paragraphs (the ``paragraphs`` system's units)
inside each question's scope by

* the MiniLM cosine of the paragraph text (what ``paragraphs`` does),
* BM25 of the paragraph (the product's English analyser, IDF over every paragraph of the corpus),
* ``cosine + w * bm25 / max bm25 of the scope`` for a grid of ``w``,

and prints IE@1/3/5 (the evaluation's scorer) for each, side by side.  It reads gold only to score.

Measured 2026-12-06 (IE@1 / IE@3 / IE@5):

| split | cosine (paragraphs) | + 0.1 bm25 | + 0.3 bm25 | + 0.5 bm25 | bm25 alone |
|---|---|---|---|---|---|
| DragonBall train (83) | .228 / .153 / .107 | .250 / .181 / .120 | .274 / .193 / .131 | .275 / .192 / .131 | .253 / .171 / .107 |
| HotpotQA train (186) | .403 / .403 / .271 | .405 / .413 / .274 | .392 / .401 / .280 | .385 / .397 / .272 | .300 / .282 / .235 |

Words help on DragonBall's finance reports (names, years) and not on HotpotQA's ten paragraphs per
question, which share their entities.  What came of it: SproutRAG's lexical node features
(``vectree.retrieval.sprout.lexical``, ``sprout-default-v4``) and the ``paragraphs-bm25`` baseline
(share 0.3, the best mean over both training splits).
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
    ap.add_argument("benchmark", choices=["dragonball", "hotpotqa"])
    ap.add_argument("--data", default=None)
    ap.add_argument("--split", default="dev", choices=["dev", "train"])
    args = ap.parse_args()

    from _sentence_setup import load_sentence_benchmark

    from vectree.evaluation.sentences import Unit, score_units
    from vectree.evaluation.systems.paragraphs import paragraph_chunk_table
    from vectree.retrieval.sprout.lexical import LeafTerms, QueryLexicon

    bench, questions, docs, emb, _ = load_sentence_benchmark(args.benchmark, args.data, args.split)
    table = paragraph_chunk_table(docs)
    vecs = emb.encode_documents(table.texts)
    # BM25 as paragraphs-bm25 and SproutRAG's lexical features compute it: IDF over every paragraph
    terms = LeafTerms.from_texts(list(table.texts))
    sentences = bench.sentences()
    rows_of: dict[str, list[int]] = {}
    for i, d in enumerate(table.doc_ids):
        rows_of.setdefault(d, []).append(i)

    weights = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
    results: dict[str, list[dict]] = {}
    for q in questions:
        rows = np.array([r for d in q.doc_ids for r in rows_of.get(d, [])])
        if not len(rows):
            continue
        xq = emb.encode_query(q.text)
        cos = vecs[rows] @ xq
        bm = QueryLexicon([terms], q.text)[0].bm25[rows]
        bmn = bm / bm.max() if bm.max() > 0 else bm
        variants = {f"cosine + {w} bm25" if w else "cosine (paragraphs)": cos + w * bmn for w in weights}
        variants["bm25"] = bm
        for name, s in variants.items():
            top = rows[np.argsort(-s, kind="stable")[:5]]
            units = [Unit.of(table.doc_ids[r], table.spans[r]) for r in top]
            results.setdefault(name, []).append(score_units(units, q.gold, sentences))
    print(f"{args.benchmark}, {args.split} split: {len(questions)} questions with gold")
    print("| ranking | IE@1 | IE@3 | IE@5 | R@5 |\n|---|---:|---:|---:|---:|")
    for name, per in results.items():
        m = {k: np.mean([p[k] for p in per]) for k in ("ie@1", "ie@3", "ie@5", "recall@5")}
        print(f"| {name} | {m['ie@1']:.3f} | {m['ie@3']:.3f} | {m['ie@5']:.3f} | {m['recall@5']:.3f} |")


if __name__ == "__main__":
    main()
