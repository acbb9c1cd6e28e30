"""Layer 0: what of a paper should the reader read when it reranks papers?

    .venv/bin/python benchmarks/exp_paper_text.py --index WORK/layer0-pubmedqa [--split train] [--limit N]

The reader was trained on PubMedQA question / *whole abstract* pairs (and QASPER / HotpotQA
sentences and paragraphs), while at Layer 0 it reads a paper's title and its best-matched section
(``rerank.apply.paper_text``; the abstract only when no section matched), cut at 400 characters.
Variants, each reranked by the shipped reader and fused with the first-stage order as the product
does (:func:`vectree.retrieval.rerank.apply.rerank_papers`):

* ``section``: the product's text;
* ``abstract``: the title and the paper entry's body (the abstract), cut the same way;
* ``both``: the title, the abstract's first half of the budget, then the best-matched section.

The index is the one ``vectree eval pubmedqa --work WORK`` builds; questions of ``--split`` of
:func:`vectree.retrieval.rerank.data.pubmedqa_split` only (``test`` is what the evaluation reports).

Measured 2026-12-07 (session 9), 276 train questions: section (product) R@1 .982 / MRR .988,
abstract .982 / .989, both .978 / .986.  Not adopted: no variant is ahead by more than one
question (the first-stage order, fused by reciprocal rank, decides nearly every PubMedQA ranking).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument("--split", default="train", choices=["train", "dev"])
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    from vectree.retrieval.config import set_offline_model_env

    set_offline_model_env()
    import vectree.retrieval.rerank.apply as apply
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.rerank.data import pubmedqa_split, read_pubmedqa
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.search import SearchIndex

    product = apply.paper_text

    def abstract(hit, entries):
        doc = hit["doc_id"]
        title, body = entries.get(f"{doc}#paper", (hit.get("title") or "", ""))
        return " | ".join(p for p in (title or hit.get("title") or "", body) if p)[:apply.PAPER_CHARS]

    def both(hit, entries):
        doc = hit["doc_id"]
        title, body = entries.get(f"{doc}#paper", (hit.get("title") or "", ""))
        half = apply.PAPER_CHARS // 2
        section = product(hit, entries)
        section = section[len(title) + 3:] if title and section.startswith(title) else section
        return " | ".join(p for p in (title, body[:half], section) if p)[:apply.PAPER_CHARS]

    variants = {"section (product)": product, "abstract": abstract, "both": both}
    _, rows = read_pubmedqa(Path(args.data))
    index = SearchIndex.open(Path(args.index), embedder=get_embedder(), auto_refresh=False)
    reader = get_reader()
    asked = [r for r in rows if pubmedqa_split(str(r["pmid"])) == args.split][:args.limit]
    r1 = dict.fromkeys(variants, 0)
    mrr = dict.fromkeys(variants, 0.0)
    for r in asked:
        pmid, q = str(r["pmid"]), str(r["question"])
        hybrid = index.search(q, apply.PAPER_DEPTH)
        for name, fn in variants.items():
            apply.paper_text = fn
            ids = [h["doc_id"] for h in apply.rerank_papers(reader, index, q, hybrid, 10, vector_map=reader.query_adapter)]
            r1[name] += bool(ids) and ids[0] == pmid
            mrr[name] += 1.0 / (ids.index(pmid) + 1) if pmid in ids else 0.0
    apply.paper_text = product
    n = len(asked)
    print(f"{n} PubMedQA {args.split} questions (1,000 abstracts), hybrid top {apply.PAPER_DEPTH} reranked")
    print("| what the reader reads | R@1 | MRR@10 |")
    print("|---|---:|---:|")
    for name in variants:
        print(f"| {name} | {r1[name] / n:.3f} | {mrr[name] / n:.3f} |")


if __name__ == "__main__":
    main()
