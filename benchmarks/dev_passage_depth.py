"""How many first-stage sentences the reader should rerank inside a paper (dev papers only).

The within-paper search reranks the hybrid (BM25 + cosine) top ``PASSAGE_DEPTH`` sentences of a
paper with the trained reader (:func:`vectree.retrieval.rerank.apply.rerank_passages`).  A gold
sentence outside that depth can never be read.  This script builds the training-side dev papers of
:mod:`vectree.retrieval.rerank.pages` (QASPER dev articles, never an evaluation paper), runs the
candidate step at several depths, and prints for each: how often a gold page is among the
candidates the navigator reads, the page precision / recall / mean F1 of the best page selection
fitted at that depth (:func:`vectree.retrieval.rerank.pages.fit`), and the reader's time per
question.  It chooses nothing by itself.

Usage: ``python benchmarks/dev_passage_depth.py [--data ../shared/data] [--limit N] [--depths 12,24]``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    from vectree.evaluation.embedcache import cached_embedder
    from vectree.retrieval.passages import PaperPassages, passages_table
    from vectree.retrieval.rerank.apply import rerank_passages
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.rerank.pages import CANDIDATES, Episode, dev_papers, fit, score

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--limit", type=int, default=None, help="only the first N dev papers")
    ap.add_argument("--depths", default="8,12,20,32")
    args = ap.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    reader, emb = get_reader(), cached_embedder()
    papers = dev_papers(Path(args.data), limit=args.limit)
    eps = {d: [] for d in depths}
    secs = {d: 0.0 for d in depths}
    for paper in papers:
        rows = [{"passage_id": i, "page_no": p, "block": 0, "node_id": None, "text": t}
                for i, (t, p) in enumerate(zip(paper.chunks, paper.pages))]
        passages = PaperPassages(passages_table(rows, emb.encode_documents(paper.chunks)))
        vectors = emb.encode_queries([q for q, _ in paper.questions])
        for (question, gold), qv in zip(paper.questions, vectors):
            qv = reader.adapt_query(qv)
            for d in depths:
                t0 = time.perf_counter()
                hits = rerank_passages(reader, passages, question, qv, CANDIDATES, depth=d)
                secs[d] += time.perf_counter() - t0
                eps[d].append(Episode([h["page"] for h in hits], [h["relevance"] for h in hits], gold))
    n = len(eps[depths[0]])
    print(f"{n} questions on {len(papers)} dev papers (QASPER dev split, padded; candidates read: {CANDIDATES})")
    print("| depth | gold page among candidates | best fitted: threshold / margin / most | page P | page R | mean page F1 | reader ms / question |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for d in depths:
        hit = sum(bool(set(e.pages) & e.gold) for e in eps[d]) / max(1, n)
        best, _ = fit(eps[d])
        s = score(eps[d], best["threshold"], best["margin"], best["max_cited"])
        print(f"| {d} | {hit:.3f} | {best['threshold']} / {best['margin']} / {best['max_cited']} | {s['precision']:.3f} | "
              f"{s['recall']:.3f} | {s['mean_f1']:.3f} | {1000 * secs[d] / max(1, n):.0f} |")


if __name__ == "__main__":
    main()
