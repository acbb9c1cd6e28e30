"""Layer 0 on PubMedQA training questions: should a paper that holds what the question names go first?  No.

    .venv/bin/python benchmarks/exp_named_layer0.py --index WORK/layer0-pubmedqa [--split train]

Why: Layer 0 misses a paper that BM25 finds by a rare name ("What is the Random Kitchen Sink
approach?" in the 39-PDF store: BM25 23.4 against 12.1 for the next paper, absent from the hybrid
top 10, as the dense side does not know the term).  The rule tried: among the reranked top 5, when
the first paper lacks some of the question's named words (:func:`vectree.retrieval.rerank.second_paper.named_terms`)
and another holds a larger IDF-weighted share of them, that one goes first.  The index is the one
``vectree eval pubmedqa --work WORK`` builds (all 1,000 abstracts); questions of the ``train`` split
of :func:`vectree.retrieval.rerank.data.pubmedqa_split` only (``test`` is what the evaluation reports).

Result (2026-12-06, session 8): 276 train questions, 92 with named words; recall@1 .982 with the
product's order, .967 named-first (1 fixed, 5 broken): a PubMedQA question's names (a drug, a
disease) are in many abstracts, and the reranker's first choice holds most of them.  Not adopted.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument("--split", default="train", choices=["train", "dev"])
    args = ap.parse_args()
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.rerank.apply import PAPER_DEPTH, rerank_papers
    from vectree.retrieval.rerank.coverage import term_weights, text_terms
    from vectree.retrieval.rerank.data import pubmedqa_split, read_pubmedqa
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.rerank.second_paper import named_terms
    from vectree.retrieval.search import SearchIndex

    abstracts, rows = read_pubmedqa(Path(args.data))
    terms = {k: text_terms(v) for k, v in abstracts.items()}
    index = SearchIndex.open(Path(args.index), embedder=get_embedder(), auto_refresh=False)
    reader = get_reader()
    n = base = named_first = fixed = broken = with_named = 0
    for r in rows:
        pmid = str(r["pmid"])
        if pubmedqa_split(pmid) != args.split or pmid not in abstracts:
            continue
        q = str(r["question"])
        n += 1
        hits = rerank_papers(reader, index, q, index.search(q, PAPER_DEPTH), 10, vector_map=reader.query_adapter)
        ids = [h["doc_id"] for h in hits]
        order, named, top = ids, named_terms(q), ids[:5]
        if named:
            with_named += 1
            held = [terms.get(d, frozenset()) for d in top]
            weights = dict(zip(named, term_weights(named, held)))
            total = sum(weights.values()) or 1.0
            share = [sum(weights[t] for t in named if t in h) / total for h in held]
            if share[0] < max(share):
                j = share.index(max(share))
                order = [top[j]] + [d for d in ids if d != top[j]]
        b, a = ids[0] == pmid, order[0] == pmid
        base += b
        named_first += a
        fixed += a and not b
        broken += b and not a
    print(f"| split | questions | with named words | R@1 product | R@1 named first | fixed | broken |")
    print(f"|---|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.split} | {n} | {with_named} | {base / n:.3f} | {named_first / n:.3f} | {fixed} | {broken} |")


if __name__ == "__main__":
    main()
