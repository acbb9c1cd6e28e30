"""Layer-0 paper search latency with and without the trained reranker, by reranker threads.

    vectree eval pubmedqa --data ../shared/data/pubmedqa --system vectree --work /tmp/pw --out /tmp/pm.json
    .venv/bin/python benchmarks/bench_layer0_latency.py --index /tmp/pw/layer0-pubmedqa \
        --questions ../shared/data/pubmedqa/questions.jsonl [--n 120]

The index is the one `vectree eval` builds for PubMedQA routing (1,000 abstracts, a paper entry and
one entry per labelled part).  Each question is searched warm, end to end as ``search_papers``
does it: query encoding + hybrid search (BM25 + dense, fused), then, with the reranker, the top
``PAPER_DEPTH`` (8) candidates reordered by the reader (``rerank.apply.rerank_papers``), at 1 and
at 2 torch threads (``VECTREE_RERANK_THREADS``).  Printed side by side: p50 / p95 ms and the share
of questions whose top paper is the same as with one thread (threads change the arithmetic's
order, not the model).  The issue's targets: p50 <= 250 ms with the reranker, <= 50 ms without.

Measured 2026-12-06 (2 CPU cores, otherwise idle, 120 questions, shipped reader):

| Layer-0 search | p50 ms | p95 ms | same top paper as 1 thread |
|---|---:|---:|---:|
| hybrid, no reranker | 30.3 | 39.7 | |
| hybrid + reranker, 1 thread | 356.3 | 423.5 | 1.000 |
| hybrid + reranker, 2 threads | 213.8 | 253.5 | 1.000 |

so the default became 2 threads (one query at a time holds the reader, so they never compete).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True, help="a Layer-0 index folder (vectree eval's layer0-pubmedqa)")
    ap.add_argument("--questions", required=True, help="PubMedQA questions.jsonl")
    ap.add_argument("--n", type=int, default=120)
    args = ap.parse_args()

    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.rerank.apply import PAPER_DEPTH, rerank_papers
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.search import SearchIndex

    questions = [json.loads(line)["question"] for line in open(args.questions)][:args.n]
    index = SearchIndex.open(args.index, embedder=get_embedder(), auto_refresh=False)
    reader = get_reader()

    def run(threads: int | None):
        if reader is not None:
            reader.threads = threads
        times, tops = [], []
        for q in questions[:5]:  # warm-up: models loaded, caches filled
            index.search(q, k=PAPER_DEPTH)
        for q in questions:
            t = time.perf_counter()
            hits = index.search(q, k=PAPER_DEPTH)
            if threads is not None:
                hits = rerank_papers(reader, index, q, hits, 5, vector_map=reader.query_adapter)
            times.append((time.perf_counter() - t) * 1000)
            tops.append(hits[0]["doc_id"] if hits else None)
        times.sort()
        return statistics.median(times), times[int(0.95 * (len(times) - 1))], tops

    rows = [("hybrid, no reranker", run(None))]
    if reader is not None:
        rows += [(f"hybrid + reranker, {t} thread{'s' if t > 1 else ''}", run(t)) for t in (1, 2)]
    base_tops = rows[1][1][2] if len(rows) > 1 else None
    print(f"{len(questions)} questions; index {args.index}; reader {reader.config.model_id if reader else 'none'}")
    print("| Layer-0 search | p50 ms | p95 ms | same top paper as 1 thread |\n|---|---:|---:|---:|")
    for label, (p50, p95, tops) in rows:
        same = "" if base_tops is None or label.startswith("hybrid, no") else \
            f"{sum(a == b for a, b in zip(tops, base_tops)) / len(tops):.3f}"
        print(f"| {label} | {p50:.1f} | {p95:.1f} | {same} |")


if __name__ == "__main__":
    main()
