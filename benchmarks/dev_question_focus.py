"""Does weighting the question's focus (the thing it asks for) in BM25 lift the within-paper first stage?

    .venv/bin/python benchmarks/dev_question_focus.py [--split dev|train|both] [--boost 1.5 2 3]

"What activation energy was fitted for the anode-potential calendar ageing model of the NMC811
cells?" asks for an activation energy; the paper's name for its model and its cells is in half of
its sentences (a caption "Fitted parameters of the anode-potential calendar ageing model" matched
five of the question's words, the answer three).  The focus -- the noun phrase after what / which
/ how many / how much, or the X of "What is the X of ..." (:func:`question_focus`) -- is given
``boost`` times the weight of the other words in the BM25 query (Tantivy's ``term^boost``).

On the dev papers of :mod:`vectree.retrieval.rerank.pages` (QASPER dev-dictionary articles padded to
200 chunks; never an evaluation paper) the paper's first stage (BM25 + cosine, reciprocal-rank
fusion, :meth:`PaperPassages.rank`) is scored with and without the boost: the first sentence is
evidence (P@1), evidence recall within the first 1 / 3 / 8 / 12 sentences (8: what the navigator
reads, 12: what the reader reranks), and the first page is a gold page.  Nothing here is trained,
so the ``train`` split is as fair a check as ``dev``.

Measured 7 December (session 13); not adopted (the first page and the first sentence get worse, the
eighth-sentence recall a little better):

| split | focus boost | sentence P@1 | R@1 | R@3 | R@8 | R@12 | page P@1 |
|---|---:|---:|---:|---:|---:|---:|---:|
| dev (141 questions, 89 with a focus) | 1 (today) | **.312** | **.158** | **.283** | .416 | .483 | **.511** |
| | 1.5 | .305 | .151 | .277 | .426 | .483 | .496 |
| | 2 | **.312** | .155 | .274 | .427 | **.495** | .489 |
| | 3 | .298 | .134 | .265 | **.430** | **.495** | .475 |
| train (483 questions, 294 with a focus) | 1 (today) | **.337** | **.153** | **.280** | .442 | .501 | **.538** |
| | 1.5 | .335 | .150 | .277 | .446 | .503 | .536 |
| | 2 | .329 | .147 | .277 | .448 | **.505** | .532 |
| | 3 | .321 | .144 | **.280** | **.449** | .503 | .524 |
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()

_AUX = (r"is|are|was|were|be|been|do|does|did|has|have|had|can|could|would|should|will|may|might|"
        r"the|a|an|of|for|in|on|at|to|from|with|by|about|between|used|that|which|they|their|this|these|it|its")


def question_focus(question: str) -> list[str]:
    """The words of what the question asks for ("activation energy" of "What activation energy
    was fitted ...?"; "layers" of "How many layers ...?"; "size" of "What is the size of ...?")."""
    q = question.strip()
    for pat in (r"^(?:what|which)\s+(?:kinds?|types?|sorts?)\s+of\s+(?P<np>.+)",
                r"^(?:what|which)\s+(?:is|are|was|were)\s+(?:the|a|an)\s+(?P<np>.+?)\s+(?:of|for|in|on|used|that)\b",
                r"^how\s+(?:many|much)\s+(?P<np>.+)",
                r"^(?:what|which)\s+(?!(?:" + _AUX + r")\b)(?P<np>.+)"):
        m = re.match(pat, q, re.I)
        if m:
            words = []
            for w in re.findall(r"[A-Za-z][\w-]*", m.group("np")):
                if re.fullmatch(_AUX, w, re.I) or w.lower().endswith("ed") and words:
                    break
                words.append(w)
                if len(words) == 4:
                    break
            return words
    return []


def boosted_bm25(P, query: str, focus: list[str], boost: float, limit: int = 50) -> list[int]:
    from vectree.retrieval.passages import _WORD

    words = _WORD.findall(P.expand_query(query).lower())
    focus_l = {f.lower() for f in focus}
    terms = " ".join(f"{w}^{boost}" if w in focus_l and boost != 1.0 else w for w in words)
    if not terms:
        return []
    q = P._index.parse_query_lenient(terms, ["body"])[0]
    searcher = P._index.searcher()
    return [searcher.doc(addr)["i"][0] for _, addr in searcher.search(q, limit).hits]


def first_stage(P, bm, qv, k):
    from vectree.retrieval.passages import RRF_K

    sims = P.vectors @ qv
    fused = {}
    for ranking in (bm, [int(i) for i in np.argsort(-sims)[:50]]):
        for r, i in enumerate(ranking):
            fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + r + 1)
    return [i for i, _ in sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--split", default="both", choices=["dev", "train", "both"])
    ap.add_argument("--boost", type=float, nargs="+", default=[1.5, 2.0, 3.0])
    ap.add_argument("--show", type=int, default=0, help="print the focus of the first N questions")
    args = ap.parse_args()
    from vectree.evaluation.embedcache import cached_embedder
    from vectree.retrieval.passages import PaperPassages, passages_table
    from vectree.retrieval.rerank.pages import dev_papers

    emb = cached_embedder()
    boosts = [1.0] + args.boost
    for split in (["dev", "train"] if args.split == "both" else [args.split]):
        papers = dev_papers(Path(args.data), split=split)
        stats = {b: {"P@1": [], "R@1": [], "R@3": [], "R@8": [], "R@12": [], "page P@1": []} for b in boosts}
        shown, with_focus = 0, 0
        for paper in papers:
            P = PaperPassages(passages_table([{"passage_id": i, "page_no": p, "block": 0, "node_id": None, "text": t}
                                              for i, (t, p) in enumerate(zip(paper.chunks, paper.pages))],
                                             emb.encode_documents(paper.chunks)))
            qvs = emb.encode_queries([q for q, _ in paper.questions])
            for (q, gold_pages), qv, ev in zip(paper.questions, qvs, paper.evidence):
                focus = question_focus(q)
                with_focus += bool(focus)
                if shown < args.show:
                    print(f"  {q!r} -> {focus}")
                    shown += 1
                for b in boosts:
                    order = first_stage(P, boosted_bm25(P, q, focus, b), qv, 12)
                    s = stats[b]
                    s["P@1"].append(float(order[0] in ev) if order else 0.0)
                    for k in (1, 3, 8, 12):
                        s[f"R@{k}"].append(len(set(order[:k]) & ev) / len(ev))
                    s["page P@1"].append(float(bool(order) and P.pages[order[0]] in gold_pages))
        n = len(stats[1.0]["P@1"])
        print(f"\n{split}: {n} questions on {len(papers)} papers ({with_focus} with a focus)")
        print("| focus boost | sentence P@1 | R@1 | R@3 | R@8 | R@12 | page P@1 |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for b in boosts:
            s = stats[b]
            print(f"| {b:g}{' (today)' if b == 1.0 else ''} | " + " | ".join(f"{np.mean(s[m]):.3f}" for m in s) + " |")


if __name__ == "__main__":
    main()
