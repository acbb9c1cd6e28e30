"""Where the navigator's page choice loses the evidence, on training-side dev papers (never the
evaluation papers): the QASPER dev-dictionary articles of the reader's dev split, built into pages as
:func:`vectree.retrieval.rerank.pages.dev_papers` builds them.

    .venv/bin/python benchmarks/diag_page_ranking.py [--split dev] [--depth 24]

For every question: the paper's hybrid first stage (BM25 + cosine, reciprocal-rank fusion), its top
``depth`` sentences read by the reader, and each ranking below turned into pages (a page's score:
its best sentence, or the sum over its sentences).  Printed: page P@1 (the first page is a gold
page), page recall at 1 / 2 / 3 pages, and whether a gold page is among the candidates at all.
``--dump FILE`` keeps every candidate's features for fitting fusions offline.

Measured 7 December (session 11), depth 24, shipped reader (``reader-20261204-150241``), the
candidates from the navigator's own first stage (``PaperPassages.rank``):

| ranking (pages in the order of their best sentence) | dev P@1 | dev R@1 | dev R@2 | dev R@3 | train P@1 | train R@2 |
|---|---:|---:|---:|---:|---:|---:|
| first stage (BM25 + cosine, RRF) | **.511** | **.381** | .534 | .634 | .538 | .593 |
| shipped: RRF(first stage, reader probability), top 12 | .496 | .369 | **.545** | **.646** | .547 | .601 |
| reader probability (logit fused with cosine), top 24 | .504 | .369 | .520 | .636 | .530 | .593 |
| MiniLM cosine | .489 | .360 | .517 | .618 | .532 | .598 |
| reader logit alone | .418 | .289 | .444 | .589 | .342 | .439 |
| pages by the sum of their sentences' probabilities | .433 | .335 | .462 | .641 | .410 | .508 |

(dev: 141 questions on 51 papers; train: 495 on 187, the questions the reader was trained on.)  A
gold page is among the 24 candidates for 99 % of the questions; the order is what loses it, and
the reader adds nothing to the first stage's order within a paper, not even on its own training
questions, where its logit alone ranks worse than on dev.  ``--context`` also reads each sentence
with its neighbours (no better in an earlier run).  A logistic fusion of first-stage features
(ranks, cosine, the IDF-weighted share of the question's words in the sentence and its
neighbours, length) fitted on the train questions gained a question or two of 141 on dev (over an
earlier hand-written fusion of the same two rankings), not built.  Two reader recipes were
trained to close this (``benchmarks/exp_reader_recipe.py``), neither lifted the order.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def rrf(*orders, k=60):
    s = defaultdict(float)
    for order, w in orders:
        for r, i in enumerate(order):
            s[i] += w / (k + r + 1)
    return sorted(s, key=lambda i: -s[i])


def coverage(P, q, idx):
    """IDF-weighted share of the question's words in each sentence, and in it with its neighbours."""
    import math
    import re as _re

    words = lambda t: set(_re.findall(r"[a-z0-9]+", t.lower()))
    docs = [words(t) for t in P.texts]
    n = len(docs)
    qw = [w for w in words(q) if len(w) > 2]
    df = {w: sum(w in d for d in docs) for w in qw}
    idf = {w: math.log((n + 1) / (df[w] + 0.5)) for w in qw}
    tot = sum(idf.values()) or 1.0
    a = np.array([sum(idf[w] for w in qw if w in docs[i]) / tot for i in idx])
    b = np.array([sum(idf[w] for w in qw if w in words(P.context(i))) / tot for i in idx])
    return a, b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--depth", type=int, default=24)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--context", action="store_true", help="also read each sentence with its neighbours")
    ap.add_argument("--dump", default=None, help="pickle every question's candidates and features here")
    args = ap.parse_args()
    from vectree.evaluation.embedcache import cached_embedder
    from vectree.retrieval.passages import PaperPassages, passages_table
    from vectree.retrieval.rerank.apply import fused_order
    from vectree.retrieval.rerank.calibrate import relevance_prob
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.rerank.pages import dev_papers

    emb = cached_embedder()
    reader = get_reader()
    cal = reader.config.calibration
    papers = dev_papers(Path(args.data), split=args.split, limit=args.limit)
    rows = []  # per question: dict of method -> page ranking, gold
    for paper in papers:
        table = passages_table([{"passage_id": i, "page_no": p, "block": 0, "node_id": None, "text": t}
                                for i, (t, p) in enumerate(zip(paper.chunks, paper.pages))],
                               emb.encode_documents(paper.chunks))
        P = PaperPassages(table)
        qvs = emb.encode_queries([q for q, _ in paper.questions])
        for (q, gold), qv, ev in zip(paper.questions, qvs, paper.evidence):
            qv = reader.adapt_query(qv)
            bm = P.bm25(q, 50)
            sims = P.vectors @ qv
            hyb = [h.passage_id for h in P.rank(q, qv, args.depth)]  # the navigator's first stage
            texts = [P.texts[i] for i in hyb]
            rd = reader.read(q, texts, max_len=96)
            logit = np.array([r.relevance for r in rd])
            prob = relevance_prob(logit, cal, sims[hyb])
            rdc = reader.read(q, [P.context(i) for i in hyb], max_len=160) if args.context else rd
            probc = relevance_prob(np.array([r.relevance for r in rdc]), cal, sims[hyb])
            pg = [P.pages[i] for i in hyb]
            bmr = {i: r for r, i in enumerate(bm)}
            idf_cov, idf_cov_ctx = coverage(P, q, hyb)
            rows.append({"paper": paper.key, "q": q, "label": np.array([i in ev for i in hyb]),
                         "cov": idf_cov, "cov_ctx": idf_cov_ctx, "len": np.array([len(t.split()) for t in texts]),
                         "logitc": np.array([r.relevance for r in rdc]), "type_un": np.array([r.type_probs["unanswerable"] for r in rd]),
                         "gold": gold, "pg": pg, "prob": prob, "probc": probc, "logit": logit,
                         "cos": sims[hyb], "bm_rank": np.array([bmr.get(i, 99) for i in hyb])})
    n = len(rows)
    if args.dump:
        import pickle

        pickle.dump(rows, open(args.dump, "wb"))
    print(f"{n} questions on {len(papers)} {args.split} papers, depth {args.depth}")

    def page_order(pg, score, agg="max"):
        s = defaultdict(float) if agg == "sum" else {}
        for p, v in zip(pg, score):
            if agg == "sum":
                s[p] += v
            else:
                s[p] = max(s.get(p, -1e9), v)
        return sorted(s, key=lambda p: -s[p])

    def by_rank(pg, order):
        out = []
        for j in order:
            if pg[j] not in out:
                out.append(pg[j])
        return out

    methods = {
        "hybrid order (first stage)": lambda r: by_rank(r["pg"], range(len(r["pg"]))),
        "shipped: RRF(hybrid, prob) top 12": lambda r: by_rank(r["pg"][:12], fused_order(r["prob"][:12])),
        "prob top 12": lambda r: by_rank(r["pg"][:12], np.argsort(-r["prob"][:12], kind="stable")),
        "prob top depth": lambda r: by_rank(r["pg"], np.argsort(-r["prob"], kind="stable")),
        "cosine top depth": lambda r: by_rank(r["pg"], np.argsort(-r["cos"], kind="stable")),
        "logit top depth": lambda r: by_rank(r["pg"], np.argsort(-r["logit"], kind="stable")),
        "context prob top depth": lambda r: by_rank(r["pg"], np.argsort(-r["probc"], kind="stable")),
        "RRF(hybrid, prob, context prob)": lambda r: by_rank(r["pg"], rrf((range(len(r["pg"])), 1), (list(np.argsort(-r["prob"])), 1), (list(np.argsort(-r["probc"])), 1))),
        "page sum of prob": lambda r: page_order(r["pg"], r["prob"], "sum"),
        "page sum of prob top 12": lambda r: page_order(r["pg"][:12], r["prob"][:12], "sum"),
        "page sum of context prob": lambda r: page_order(r["pg"], r["probc"], "sum"),
        "page sum of RRF(hybrid, prob)": lambda r: page_order(r["pg"], [1 / (60 + a) + 1 / (60 + b) for a, b in zip(range(len(r["pg"])), np.argsort(np.argsort(-r["prob"])))], "sum"),
    }
    if not args.context:  # the context rows would repeat the sentence rows
        methods = {name: f for name, f in methods.items() if "context" not in name}
    print("| ranking | page P@1 | page R@1 | page R@2 | page R@3 | any gold in candidates |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, f in methods.items():
        p1 = r1 = r2 = r3 = anyg = 0.0
        m = 0
        for r in rows:
            if not r["gold"]:
                continue
            m += 1
            order = f(r)
            g = r["gold"]
            p1 += order[0] in g if order else 0
            r1 += len(set(order[:1]) & g) / len(g)
            r2 += len(set(order[:2]) & g) / len(g)
            r3 += len(set(order[:3]) & g) / len(g)
            anyg += bool(set(r["pg"]) & g)
        print(f"| {name} | {p1/m:.3f} | {r1/m:.3f} | {r2/m:.3f} | {r3/m:.3f} | {anyg/m:.3f} |")


if __name__ == "__main__":
    main()
