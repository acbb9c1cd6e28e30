"""Layer 0 variants on PubMedQA, measured on a split the reranker was not trained on.

    .venv/bin/python benchmarks/exp_layer0_pubmedqa.py [--split dev] [--data ../shared/data/pubmedqa]

Why: on the held-back questions the hybrid Layer 0 (compact entries, weighted fusion) ranked the
gold abstract first less often than plain dense search over 256-token passages (R@1 .975 vs .992),
and the trained reranker lowered it further (.945).  This script compares, on the ``dev`` split
(``vectree.retrieval.rerank.data.pubmedqa_split``; the reranker saw ``train`` and was calibrated
on ``dev``, the evaluation reports ``test``), the entry layouts and fusions below, side by side:

* layout ``first-part``: the paper entry's abstract is the first labelled part (the evaluation's
  layout until now); ``whole``: the paper entry's abstract is the whole abstract (what a real
  paper's entry holds: its title and abstract).
* modes: bm25, dense, weighted fusion at several dense weights, rrf; each with and without the
  reranker over the top candidates.

It prints R@1, R@5 and MRR per variant.  Nothing here is tuned on the ``test`` questions.

Seen on 2026-12-04: on the 87 ``dev`` questions every dense or fused variant ranks the gold
abstract first for all of them (bm25 alone .966), so dev cannot choose between them; the
decisions taken (whole abstract in the paper entry; the reranker's order fused with the first
stage's) follow from what a paper entry is and from the within-paper dev result, and were then
measured once on ``test`` with ``vectree eval pubmedqa``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "pubmedqa"))
    ap.add_argument("--split", default="dev", choices=["train", "dev"])
    ap.add_argument("--weights", default="0.7,0.8,0.9")
    ap.add_argument("--no-rerank", action="store_true")
    args = ap.parse_args()

    from vectree.retrieval.config import set_offline_model_env

    set_offline_model_env()
    from vectree.evaluation.pubmedqa import load_pubmedqa
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.rerank.data import pubmedqa_split
    from vectree.retrieval.search import SearchIndex, build_index, paper_entry, section_entry

    docs, questions = load_pubmedqa(Path(args.data))
    qs = [q for q in questions if pubmedqa_split(q.pmid) == args.split]
    print(f"{len(docs)} abstracts, {len(qs)} {args.split} questions")
    embedder = get_embedder()
    reader = None
    if not args.no_rerank:
        from vectree.retrieval.rerank.model import get_reader

        reader = get_reader()

    def layout(kind: str):
        entries = []
        for d in docs:
            labels = [label for label, _ in d.sections]
            abstract = d.sections[0][1] if kind == "first-part" else " ".join(t for _, t in d.sections)
            entries.append(paper_entry(d.pmid, "", abstract, labels))
            for i, (label, text) in enumerate(d.sections):
                entries.append(section_entry(d.pmid, f"s{i}", label, text, None, None))
        return entries

    variants = [("bm25", "bm25", None, None), ("dense", "dense", None, None), ("rrf", "hybrid", "rrf", None)]
    variants += [(f"weighted {w}", "hybrid", "weighted", float(w)) for w in args.weights.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("first-part", "whole"):
            root = Path(tmp) / kind
            build_index(root, layout(kind), embedder=embedder, reason="experiment")
            index = SearchIndex.open(root, embedder=embedder, auto_refresh=False)
            for name, mode, fusion, weight in variants:
                for rerank in ([False, True] if reader is not None and kind == "whole" and name in ("dense", "weighted 0.8") else [False]):
                    r1 = r5 = mrr = 0.0
                    for q in qs:
                        hits = index.search(q.question, 20, mode=mode, fusion=fusion, dense_weight=weight)
                        if rerank:
                            from vectree.retrieval.rerank.apply import rerank_papers

                            hits = rerank_papers(reader, index, q.question, hits, 20)
                        ids = [h["doc_id"] for h in hits]
                        rank = ids.index(q.pmid) + 1 if q.pmid in ids else None
                        r1 += rank == 1
                        r5 += rank is not None and rank <= 5
                        mrr += 1.0 / rank if rank else 0.0
                    n = len(qs)
                    rows.append((kind, name, "yes" if rerank else "no", r1 / n, r5 / n, mrr / n))
                    print(f"| {kind} | {name} | {rows[-1][2]} | {r1 / n:.3f} | {r5 / n:.3f} | {mrr / n:.3f} |",
                          flush=True)
    print("\n| layout | mode | reranked | R@1 | R@5 | MRR |\n|---|---|---|---:|---:|---:|")
    for kind, name, rr, a, b, c in rows:
        print(f"| {kind} | {name} | {rr} | {a:.3f} | {b:.3f} | {c:.3f} |")


if __name__ == "__main__":
    main()
