"""Layer 0: should BM25's best papers join the hybrid candidates the reader reranks?

    .venv/bin/python benchmarks/exp_lexical_candidates.py --index WORK/layer0-pubmedqa [--split train]

Why: the reader reranks the hybrid top ``PAPER_DEPTH`` (8) papers, and the hybrid (min-max fusion,
dense weight 0.8) keeps a paper that only BM25 finds out of them: in the 39-PDF store "What is the
Random Kitchen Sink approach?" has its paper first by BM25 (23.4 against 12.1 for the next) and
outside the hybrid top 10, as MiniLM does not know the term.  Variants, each reranked by the
shipped reader and fused with the first-stage order as the product does
(:func:`vectree.retrieval.rerank.apply.rerank_papers`):

* ``product``: the hybrid top 8;
* ``append N``: the hybrid top 8, then BM25's best N papers that are not among them (first-stage
  positions 9, 10, ...).

The index is the one ``vectree eval pubmedqa --work WORK`` builds (all 1,000 abstracts); questions
of ``--split`` of :func:`vectree.retrieval.rerank.data.pubmedqa_split` only (``train`` by default;
``test`` is what the evaluation reports).  Prints recall@1 and MRR (over the first 10) per variant.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument("--split", default="train", choices=["train", "dev"])
    ap.add_argument("--append", type=int, action="append", default=None)
    args = ap.parse_args()
    from vectree.retrieval.config import set_offline_model_env

    set_offline_model_env()
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.rerank.apply import PAPER_DEPTH, rerank_papers
    from vectree.retrieval.rerank.data import pubmedqa_split, read_pubmedqa
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.search import SearchIndex

    _, rows = read_pubmedqa(Path(args.data))
    index = SearchIndex.open(Path(args.index), embedder=get_embedder(), auto_refresh=False)
    reader = get_reader()
    variants = [0] + (args.append or [1, 2, 4])
    r1 = {v: 0 for v in variants}
    mrr = {v: 0.0 for v in variants}
    changed = {v: [0, 0] for v in variants}  # fixed, broken at rank 1 against the product
    n = 0
    for r in rows:
        pmid = str(r["pmid"])
        if pubmedqa_split(pmid) != args.split:
            continue
        q = str(r["question"])
        n += 1
        hybrid = index.search(q, PAPER_DEPTH)
        lexical = index.search(q, max(variants), mode="bm25")
        first = None
        for v in variants:
            seen = {h["doc_id"] for h in hybrid}
            extra = [h for h in lexical[:v] if h["doc_id"] not in seen]
            hits = rerank_papers(reader, index, q, hybrid + extra, 10, depth=len(hybrid) + len(extra),
                                 vector_map=reader.query_adapter)
            ids = [h["doc_id"] for h in hits]
            hit1 = bool(ids) and ids[0] == pmid
            r1[v] += hit1
            mrr[v] += 1.0 / (ids.index(pmid) + 1) if pmid in ids else 0.0
            if v == 0:
                first = hit1
            else:
                changed[v][0] += hit1 and not first
                changed[v][1] += first and not hit1
    print(f"{n} PubMedQA {args.split} questions (1,000 abstracts)")
    print("| candidates | R@1 | MRR@10 | fixed | broken |")
    print("|---|---:|---:|---:|---:|")
    for v in variants:
        name = "product (hybrid top 8)" if v == 0 else f"+ BM25's best {v} not among them"
        print(f"| {name} | {r1[v] / n:.3f} | {mrr[v] / n:.3f} | {changed[v][0]} | {changed[v][1]} |")


if __name__ == "__main__":
    main()
