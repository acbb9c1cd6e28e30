"""Page-level selection on training-side dev papers: which threshold / margin / number of cited
sentences gives the best evidence-page precision and recall?  Never the evaluation papers.

The reader's shipped selection threshold was fitted on sentence candidates *within one question's
own candidate list* (its evidence and a few mined negatives).  The navigator decides from the
reranked top candidates of a whole paper and is scored on pages.  This builds papers like the
evaluation's: each QASPER dev-dictionary article of the reader's dev split (its questions' evidence
paragraphs) padded with the next articles' paragraphs to ``--pad`` chunks and cut into pages of
``--page-chars`` characters (a rendered QASPER page holds about that much text); gold pages are the
pages of the question's evidence chunks.  Every question runs the navigator's candidate step
(``rerank_passages``: hybrid BM25 + cosine, reranked, k = 8) once; then every
(threshold, margin, max cited) of the grid selects citations as the navigator does
(``calibrate.select``; the best always kept) and is scored on pages (micro P / R over questions,
and the mean page F1).

Usage: ``python benchmarks/dev_page_selection.py [--data ../shared/data] [--pad 200] [--page-chars 3500]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from vectree.evaluation.embedcache import cached_embedder
from vectree.retrieval.passages import PaperPassages, passages_table
from vectree.retrieval.rerank.apply import rerank_passages
from vectree.retrieval.rerank.calibrate import GRID, MARGINS, select
from vectree.retrieval.rerank.data import eval_article_ids
from vectree.retrieval.rerank.model import get_reader
from vectree.retrieval.sprout.data import qasper_docs

MAX_CITED = (1, 2, 3, 4)


def papers(data: Path, pad: int, page_chars: int, split: str):
    excluded = eval_article_ids(data)
    pool = [d for d in qasper_docs(data) if d.key not in excluded and d.split == split]
    for at, doc in enumerate(pool):
        chunks, para = list(doc.chunks), list(doc.para)
        for j in range(1, len(pool)):
            if len(chunks) >= pad:
                break
            other = pool[(at + j) % len(pool)]
            base = max(para) + 1
            chunks += other.chunks
            para += [base + p for p in other.para]
        pages, used, page = [], 0, 1
        for t in chunks:
            if used and used + len(t) > page_chars:
                page, used = page + 1, 0
            pages.append(page)
            used += len(t) + 1
        yield chunks, para, pages, doc.queries


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--pad", type=int, default=200)
    ap.add_argument("--page-chars", type=int, default=3500)
    ap.add_argument("--split", default="dev")
    args = ap.parse_args()
    emb, reader = cached_embedder(), get_reader()
    episodes = []  # (candidate pages, candidate relevances, gold pages)
    for chunks, para, pages, queries in papers(Path(args.data), args.pad, args.page_chars, args.split):
        rows = [{"passage_id": i, "page_no": pg, "block": int(p), "node_id": None, "text": t}
                for i, (t, p, pg) in enumerate(zip(chunks, para, pages))]
        passages = PaperPassages(passages_table(rows, emb.encode_documents(chunks)))
        for q, qv in zip(queries, emb.encode_queries([q.text for q in queries])):
            gold = {pages[i] for i in q.positives}
            hits = rerank_passages(reader, passages, q.text, qv, 8)
            episodes.append(([h["page"] for h in hits], [h["relevance"] for h in hits], gold))
    print(f"{len(episodes)} questions; gold pages per question {np.mean([len(g) for *_, g in episodes]):.2f}")
    results = []
    for cap in MAX_CITED:
        for m in MARGINS:
            for t in GRID:
                tp = fp = fn = 0
                f1s, n_pages = [], []
                for cand_pages, rel, gold in episodes:
                    chosen = sorted(select(rel, t, m), key=lambda i: -rel[i])[:cap]
                    cited = {cand_pages[i] for i in chosen}
                    hit = len(cited & gold)
                    tp, fp, fn = tp + hit, fp + len(cited) - hit, fn + len(gold) - hit
                    p, r = (hit / len(cited), hit / len(gold)) if hit else (0.0, 0.0)
                    f1s.append(2 * p * r / (p + r) if hit else 0.0)
                    n_pages.append(len(cited))
                results.append({"max_cited": cap, "margin": m, "threshold": t, "P": tp / max(1, tp + fp),
                                "R": tp / max(1, tp + fn), "mean_F1": float(np.mean(f1s)),
                                "pages": float(np.mean(n_pages))})
    results.sort(key=lambda d: -d["mean_F1"])
    print("| max cited | margin | threshold | page P | page R | mean page F1 | pages cited |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for d in results[:15]:
        print(f"| {d['max_cited']} | {d['margin']} | {d['threshold']} | {d['P']:.3f} | {d['R']:.3f} | "
              f"{d['mean_F1']:.3f} | {d['pages']:.2f} |")
    shipped = next(d for d in results if d["max_cited"] == 4 and d["margin"] == 0.3 and d["threshold"] == 0.2)
    print(f"\nshipped (4 / 0.3 / 0.2): P {shipped['P']:.3f} R {shipped['R']:.3f} mean F1 {shipped['mean_F1']:.3f} "
          f"pages {shipped['pages']:.2f}")
    for cap in MAX_CITED:
        top1 = next(d for d in results if d["max_cited"] == cap and d["margin"] == 0.1 and d["threshold"] == 0.95)
        print(f"best sentence only, cap {cap}: P {top1['P']:.3f} R {top1['R']:.3f} mean F1 {top1['mean_F1']:.3f}")


if __name__ == "__main__":
    main()
