"""Where ScholarQA-Multi's gold papers sit in Layer 0's ranking (diagnostic, evaluation data).

For each question: the number of gold papers, and the share of them among the first d papers of
the hybrid ranking, of the reranked ranking, and of the papers the calibrated selection cites.
It reads an index built by ``vectree eval scholarqa_multi --work DIR`` and changes nothing; it
says how much recall the candidate depth allows, so no threshold is chosen from it.

Usage: ``python benchmarks/diag_scholarqa_depth.py --work DIR [--data ../shared/data/scholarqa_multi]``
"""
from __future__ import annotations

import argparse
from pathlib import Path
from statistics import mean

from vectree.evaluation.loaders.scholarqa import load_scholarqa_multi
from vectree.retrieval.rerank.apply import rerank_papers
from vectree.retrieval.rerank.calibrate import select
from vectree.retrieval.rerank.model import get_reader
from vectree.retrieval.search import SearchIndex


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--data", default="../shared/data/scholarqa_multi")
    args = ap.parse_args()
    bench = load_scholarqa_multi(args.data)
    index = SearchIndex.open(Path(args.work) / "layer0-scholarqa_multi", auto_refresh=False)
    reader = get_reader()
    depths = (5, 10, 20, 30, 50)
    rows = {f"{m}@{d}": [] for m in ("hybrid", "bm25", "dense") for d in depths}
    rr, cited_r, cited_p, n_cited, n_gold = {d: [] for d in (5, 10, 20)}, [], [], [], []
    cal = reader.config.calibration or {}
    sel = cal.get("papers")
    for q in bench.questions:
        gold = set(q.gold_doc_ids)
        n_gold.append(len(gold))
        for mode in ("hybrid", "bm25", "dense"):
            hits = index.search(q.question, 50, mode=mode)
            for d in depths:
                rows[f"{mode}@{d}"].append(len(gold & {h["doc_id"] for h in hits[:d]}) / len(gold))
        hits = index.search(q.question, 20)
        ranked = rerank_papers(reader, index, q.question, hits, 20, depth=20, vector_map=reader.query_adapter)
        for d in rr:
            rr[d].append(len(gold & {h["doc_id"] for h in ranked[:d]}) / len(gold))
        chosen = [ranked[i]["doc_id"] for i in select([r["relevance"] for r in ranked], sel["threshold"], sel["margin"])][:10]
        n_cited.append(len(chosen))
        cited_r.append(len(gold & set(chosen)) / len(gold))
        cited_p.append(len(gold & set(chosen)) / max(len(chosen), 1))
    print(f"{len(n_gold)} questions, gold papers per question {mean(n_gold):.2f}")
    print("| ranking | " + " | ".join(f"R@{d}" for d in depths) + " |")
    print("|---|" + "---:|" * len(depths))
    for mode in ("hybrid", "bm25", "dense"):
        print(f"| {mode} | " + " | ".join(f"{mean(rows[f'{mode}@{d}']):.3f}" for d in depths) + " |")
    print("| reranked top 20 | " + " | ".join(f"{mean(rr[d]):.3f}" if d in rr else "" for d in depths) + " |")
    print(f"calibrated selection: {mean(n_cited):.2f} papers cited, P {mean(cited_p):.3f}, R {mean(cited_r):.3f}")


if __name__ == "__main__":
    main()
