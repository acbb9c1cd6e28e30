"""Would pseudo-relevance feedback lift ScholarQA-Multi's paper recall?  (diagnostic, evaluation data)

    .venv/bin/python benchmarks/diag_scholarqa_prf.py --work DIR [--data ../shared/data/scholarqa_multi]

Reads the Layer-0 index a ``vectree eval scholarqa_multi --work DIR`` run built and, for every
question, re-ranks with dense Rocchio feedback: the query vector plus beta x the mean paper-entry
vector of the hybrid ranking's first m papers (normalised), fused with BM25 as Layer 0 fuses, the
first m papers kept in place.  Prints the recall of the gold papers at 5 / 10 / 20 for a small
grid.  It sets nothing (the questions are evaluation questions): it asks whether the .80 recall
target is within reach of feedback, before any training-side calibration would be worth building.

Measured 7 December (session 10, 60 questions, 4.65 gold papers each):

| m / beta | R@5 | R@10 | R@20 |
|---|---:|---:|---:|
| no feedback (Layer 0 today) | .626 | .779 | .839 |
| 1 / 1.0 | .621 | .800 | .852 |
| 2 / 2.0 | .638 | .800 | .848 |
| 3 / 2.0 | .619 | .780 | .857 |
| 5 / 2.0 | .626 | .776 | .859 |

At best +.02 at R@10 (a question or so of 60), within noise: the gold papers the hybrid misses are
not near the ones it finds in MiniLM's space either, so feedback was not built.
"""
import argparse, sys
from pathlib import Path
from statistics import mean
import numpy as np
from vectree.retrieval.search import SearchIndex
from vectree.retrieval.search.fusion import fuse
from vectree.retrieval.search.query import default_fusion, encode_query

ap = argparse.ArgumentParser()
ap.add_argument("--work", required=True)
ap.add_argument("--bench", default="scholarqa")
ap.add_argument("--data", default="../shared/data/scholarqa_multi")
args = ap.parse_args()
if args.bench == "scholarqa":
    from vectree.evaluation.loaders.scholarqa import load_scholarqa_multi
    qs = [(q.question, set(q.gold_doc_ids)) for q in load_scholarqa_multi(args.data).questions]
    index = SearchIndex.open(Path(args.work) / "layer0-scholarqa_multi", auto_refresh=False)
snap = index._snap
df = snap.vectors.table.to_arrow().to_pydict()
print(list(df), len(df["doc_id"]))
vec = np.asarray(df["vector"], dtype=np.float32)
vec /= np.linalg.norm(vec, axis=1, keepdims=True)
kinds = df["kind"]
docs = df["doc_id"]
paper_rows = {}
for i, (d, k) in enumerate(zip(docs, kinds)):
    if k == "paper":
        paper_rows[d] = i
fusion, w = default_fusion()
depths = (5, 10, 20)
res = {}
for m in (0, 1, 2, 3, 5):
    for beta in ((0.0,) if m == 0 else (0.5, 1.0, 2.0)):
        rs = {d: [] for d in depths}
        for text, gold in qs:
            hits = index.entry_hits(text, mode="hybrid", limit=100)
            top = fuse(hits, fusion=fusion, dense_weight=w, k=50, paper_titles=snap.titles)
            if m:
                q = encode_query(index.embedder, text).astype(np.float32)
                q = q / np.linalg.norm(q)
                fb = np.mean([vec[paper_rows[h["doc_id"]]] for h in top[:m] if h["doc_id"] in paper_rows], axis=0)
                q2 = q + beta * fb
                q2 = q2 / np.linalg.norm(q2)
                hits2 = {"bm25": hits["bm25"], "dense": snap.vectors.search(q2, 100)}
                top2 = fuse(hits2, fusion=fusion, dense_weight=w, k=50, paper_titles=snap.titles)
                # keep the first m papers where they were
                keep = [h["doc_id"] for h in top[:m]]
                order = keep + [h["doc_id"] for h in top2 if h["doc_id"] not in keep]
            else:
                order = [h["doc_id"] for h in top]
            for d in depths:
                rs[d].append(len(gold & set(order[:d])) / len(gold))
        print(f"m={m} beta={beta}: " + " ".join(f"R@{d} {mean(rs[d]):.3f}" for d in depths), flush=True)
