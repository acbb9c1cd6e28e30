"""Does a paragraph-level vote improve within-paper sentence ranking?  Training-side dev only.

The lesson of SproutRAG issue #17: a paragraph ranked by the MiniLM vector of its *own text*
found evidence far better than its sentences' vectors did.  Within a paper, ``search_within_paper``
ranks sentences by BM25 + cosine (reciprocal-rank fusion) and the reader reranks the top 12.  Here
the paragraphs' own vectors add a third ranking: every sentence takes its paragraph's rank (ties
by its own cosine), at most ``cap`` sentences per paragraph, with weight ``w``.

Dev documents (never the evaluation papers, never evaluation questions):
* QASPER dev-dictionary articles of the reader's dev split: their evidence paragraphs, padded with
  the next articles' paragraphs to 200 chunks (a paper is mostly text that is not evidence);
* HotpotQA questions of SproutRAG's dev split: 10 paragraphs each (2 gold + 8 distractors).

Result (6 December, reader active, 141 QASPER / 58 HotpotQA dev questions; recall@12 / MRR after
the reader), not adopted:

| ranking | QASPER | HotpotQA |
|---|---:|---:|
| hybrid (BM25 + cosine, the product) | .487 / .441 | .633 / .858 |
| + paragraph vote, weight 2, every paragraph | .547 / .470 | .752 / .869 |
| + paragraph vote, weight 2, only paragraphs of several chunks | .519 / .440 | .643 / .815 |

Built into the product (paragraph vectors stored at ingest, every paragraph voting), the qasper
evaluation went the other way (answer F1 .152 -> .110, page P .330 -> .321, R .583 -> .590): on real
pages a one-passage block is mostly a section heading, which the doubled vote lifted over the
evidence ("Results and Discussion" answered "What are the results?").  Leaving one-passage blocks
out of the vote removes most of the dev gain (third row), and weighing the cosine more instead
(an extra cosine ranking, weight 0.5-2) does not give it either (QASPER recall@12 .494-.504, MRR
.427-.436).  A second try kept the vote for every block but headings (one-passage blocks under five
words) and the navigator stopped reading headings: qasper page P / R / answer F1 .323 / .531 / .113
against .344 / .497 / .167 without the vote (same run): the vote changes which sentence is read
first, to a neighbour of the answer.  Both tries were reverted (commit history: 30e4392).

Usage: ``python benchmarks/dev_paragraph_vote.py [--data ../shared/data] [--pad 200]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from vectree.evaluation.embedcache import cached_embedder
from vectree.retrieval.passages import PaperPassages, passages_table
from vectree.retrieval.sprout.search import unit_rows
from vectree.retrieval.rerank.apply import fused_order
from vectree.retrieval.rerank.calibrate import relevance_prob
from vectree.retrieval.rerank.data import eval_article_ids
from vectree.retrieval.rerank.model import get_reader
from vectree.retrieval.sprout.data import hotpotqa_docs, qasper_docs


def paragraph_ranking(para: list[int], pvec: dict[int, np.ndarray], sims: np.ndarray, qv: np.ndarray,
                      single: bool) -> list[int]:
    """Chunks ranked by their paragraph's own-text cosine (within a paragraph by their cosine);
    ``single=False`` leaves one-chunk paragraphs out of this vote."""
    members: dict[int, list[int]] = {}
    for i, p in enumerate(para):
        members.setdefault(p, []).append(i)
    keys = [p for p in members if single or len(members[p]) > 1]
    out: list[int] = []
    for p in sorted(keys, key=lambda p: -float(pvec[p] @ qv)):
        out += sorted(members[p], key=lambda i: -sims[i])
    return out


def capped(passages: PaperPassages, ranking: list[int], cap: int) -> list[int]:
    """At most ``cap`` passages of each paragraph from a paragraph ranking (an experiment: the
    product votes with all of them)."""
    seen: dict[int, int] = {}
    out = []
    for i in ranking:
        key = (passages.pages[i], passages.blocks[i])
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= cap:
            out.append(i)
    return out


def docs_for(data: Path, pad: int):
    excluded = eval_article_ids(data)
    qd = [d for d in qasper_docs(data) if d.key not in excluded]
    pool = [d for d in qd if d.split == "dev"]
    out = []
    for at, doc in enumerate(pool):
        chunks, para = list(doc.chunks), list(doc.para)
        for j in range(1, len(pool)):
            if len(chunks) >= pad:
                break
            other = pool[(at + j) % len(pool)]
            base = max(para) + 1
            chunks += other.chunks
            para += [base + p for p in other.para]
        out.append(("qasper", chunks, para, doc.queries))
    for doc in hotpotqa_docs(data):
        if doc.split == "dev":
            out.append(("hotpotqa", list(doc.chunks), list(doc.para), doc.queries))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--pad", type=int, default=200)
    ap.add_argument("--no-reader", action="store_true")
    ap.add_argument("--weights", default="0.5,1,2,4", help="paragraph vote weights to try (comma-separated)")
    ap.add_argument("--caps", default="all,multi", help="passages per paragraph to try: all, multi (all, but "
                    "only paragraphs of several chunks vote), or a number")
    args = ap.parse_args()
    data = Path(args.data)
    emb = cached_embedder()
    reader = None if args.no_reader else get_reader()
    weights = [float(w) for w in args.weights.split(",")]
    caps = [c if c in ("all", "multi") else int(c) for c in args.caps.split(",")]
    settings = [("hybrid", 0.0, None)] + [(f"para w={w} cap={c}", w, c) for w in weights for c in caps]
    stats: dict[tuple[str, str, str], list[float]] = {}
    for source, chunks, para, queries in docs_for(data, args.pad):
        rows = [{"passage_id": i, "page_no": 1, "block": int(p), "node_id": None, "text": t}
                for i, (t, p) in enumerate(zip(chunks, para))]
        x = emb.encode_documents(chunks)
        ptexts: dict[int, list[str]] = {}
        for t, p in zip(chunks, para):
            ptexts.setdefault(p, []).append(t)
        pids = sorted(ptexts)
        pvec = dict(zip(pids, unit_rows(emb.encode_documents([" ".join(ptexts[p]) for p in pids]))))
        passages = PaperPassages(passages_table(rows, x))
        qvs = emb.encode_queries([q.text for q in queries])
        for q, qv in zip(queries, qvs):
            gold = set(q.positives)
            if not gold:
                continue
            sims = x @ qv
            for name, w, cap in settings:
                ranking = paragraph_ranking(para, pvec, sims, qv, cap != "multi") if w else []
                if isinstance(cap, int):
                    ranking = capped(passages, ranking, cap)
                hits = passages.rank(q.text, qv, 12, extra=[(ranking, w)] if w else ())
                ids = [h.passage_id for h in hits]
                variants = {"first stage": ids}
                if reader is not None:
                    logits = np.asarray(reader.score(q.text, [chunks[i] for i in ids], max_len=96), np.float32)
                    probs = relevance_prob(logits, reader.config.calibration, x[ids] @ qv)
                    variants["+ reader"] = [ids[j] for j in fused_order(probs)]
                for vname, r in variants.items():
                    for k in (3, 5, 12):
                        stats.setdefault((source, vname, name), {}).setdefault(f"R@{k}", []).append(
                            len(gold & set(r[:k])) / len(gold))
                    rr = next((1 / (n + 1) for n, i in enumerate(r) if i in gold), 0.0)
                    stats[(source, vname, name)].setdefault("MRR", []).append(rr)
    print("| source | stage | ranking | n | R@3 | R@5 | R@12 | MRR |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for (source, vname, name), m in stats.items():
        print(f"| {source} | {vname} | {name} | {len(m['MRR'])} | " + " | ".join(
            f"{np.mean(m[k]):.3f}" for k in ("R@3", "R@5", "R@12", "MRR")) + " |")


if __name__ == "__main__":
    main()
