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

Prints recall of the gold chunks at 3 / 5 / 12 and MRR, with and without the reader's rerank of
the top 12, for the plain hybrid ranking and the paragraph vote.

Usage: ``python benchmarks/dev_paragraph_vote.py [--data ../shared/data] [--pad 200]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from vectree.evaluation.embedcache import cached_embedder
from vectree.retrieval.passages import PaperPassages, passages_table
from vectree.retrieval.rerank.apply import fused_order
from vectree.retrieval.rerank.calibrate import relevance_prob
from vectree.retrieval.rerank.data import eval_article_ids
from vectree.retrieval.rerank.model import get_reader
from vectree.retrieval.sprout.data import hotpotqa_docs, qasper_docs


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
    args = ap.parse_args()
    data = Path(args.data)
    emb = cached_embedder()
    reader = None if args.no_reader else get_reader()
    settings = [("hybrid", 0.0, None)] + [(f"para w={w} cap={c or 'all'}", w, c)
                                          for w in (0.5, 1.0, 2.0, 4.0) for c in (None, 3, 1)]
    stats: dict[tuple[str, str, str], list[float]] = {}
    for source, chunks, para, queries in docs_for(data, args.pad):
        # the product's layout: one page, blocks = paragraphs, the first passage of a paragraph of
        # several carries its text, embedded whole (retrieval.passages.passages_table)
        rows = [{"passage_id": i, "page_no": 1, "block": int(p), "node_id": None, "text": t}
                for i, (t, p) in enumerate(zip(chunks, para))]
        members: dict[int, list[dict]] = {}
        for r in rows:
            members.setdefault(r["block"], []).append(r)
        for m in members.values():
            if len(m) > 1:
                m[0]["block_text"] = " ".join(r["text"] for r in m)
        x = emb.encode_documents(chunks)
        blocks = [r["block_text"] for r in rows if "block_text" in r]
        passages = PaperPassages(passages_table(rows, x, emb.encode_documents(blocks) if blocks else None))
        qvs = emb.encode_queries([q.text for q in queries])
        for q, qv in zip(queries, qvs):
            gold = set(q.positives)
            if not gold:
                continue
            full = passages.paragraph_ranking(qv)
            for name, w, cap in settings:
                if cap is None:  # what the product does
                    hits = passages.rank(q.text, qv, 12, paragraph_weight=w)
                else:
                    hits = passages.rank(q.text, qv, 12, paragraph_weight=0, extra=[(capped(passages, full, cap), w)])
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
