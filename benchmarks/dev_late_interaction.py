"""Does a late-interaction score (MaxSim over MiniLM's token vectors) lift the within-paper first stage?

    .venv/bin/python benchmarks/dev_late_interaction.py [--split dev|train|both] [--limit N]
        [--cache DIR] [--reader] [--own-only]

The within-paper first stage fuses BM25 and the MiniLM cosine of pooled sentence vectors
(:meth:`PaperPassages.rank`).  Pooling one vector per sentence loses which words matched; BM25 sees
only exact words.  MaxSim (ColBERT's score, here with the frozen MiniLM, nothing trained): each
content word-piece of the question takes its best cosine over the sentence's word-pieces, and the
sentence's score is their (optionally IDF-weighted, IDF over the paper's sentences) mean.  It is
scored alone, as a third reciprocal-rank vote beside BM25 and the cosine, and as the order of the
hybrid's best 24 / 48 candidates, on the dev papers of :mod:`vectree.retrieval.rerank.pages`
(QASPER dev-dictionary articles padded to 200 chunks; never an evaluation paper): the first
sentence is evidence (P@1), evidence recall within the first 1 / 3 / 8 / 12 sentences (8: what the
navigator reads, 12: what the reader reranks), and the first page is a gold page.  ``--reader``
also scores the order after the shipped reader reranks the first 12 (as ``search_within_paper``
does); ``--own-only`` ranks only the article's own sentences (the evidence of its other questions
are the distractors: one topic, as in a real paper).  Nothing is trained, so ``train`` is as fair a
check as ``dev``.

Measured 7 December (session 14), 141 dev / 483 train questions:

| first stage | dev P@1 | dev R@8 | dev page P@1 | train P@1 | train R@8 | train page P@1 |
|---|---:|---:|---:|---:|---:|---:|
| today (BM25 + cosine) | .312 | .416 | .511 | .337 | .442 | .538 |
| BM25 alone | .312 | .365 | .454 | .277 | .374 | .468 |
| cosine alone | .312 | .437 | .489 | .311 | .409 | .532 |
| MaxSim-IDF alone | **.418** | .478 | **.553** | .373 | **.461** | .559 |
| BM25 + cosine + MaxSim-IDF (RRF) | .340 | .457 | .525 | .364 | .456 | .563 |
| hybrid best 24 in MaxSim-IDF order | .411 | **.479** | **.553** | **.375** | .451 | **.565** |
| today, then the reader | .298 | .421 | .496 | .337 | .426 | .547 |
| hybrid 24 in MaxSim order, then the reader | .390 | .488 | .546 | .360 | .455 | .563 |
| own sentences only: today | .525 | .674 | .681 | .491 | .693 | .741 |
| own sentences only: hybrid 24 in MaxSim order | .582 | .715 | .780 | .557 | .724 | .768 |

Every split and both protocols favoured MaxSim, so "the hybrid's best 24 in MaxSim-IDF order" was
built into ``PaperPassages.rank`` (with a ``vectree-no-late`` ablation) and checked where the text
comes from real PDFs:

* the demo corpus (`make demo`'s eight typeset papers and its 24 questions, our own text: the rank
  of the first sentence holding the answer among the 12 the reader reads): answer first for 14 of
  24 questions in the hybrid order, 10 in MaxSim order (RRF of the three: 13); in the top 3 19 /
  18 / 20.  For the "78.4 %" question (the one inspected) MaxSim put the abstract's and the
  conclusion's sentences, which name every topic word of the question ("630-day storage study of 96
  NMC811 pouch cells ..."), above the one that states the number.  QASPER's evidence paragraphs, the only
  dev text there is, hold few such sentences.
* one qasper evaluation run (55 questions, every system in one run): vectree page P / R / answer F1
  .302 / .438 / .189 with it, .330 / .462 / .193 without (``vectree-no-late``); vectree-sprout .309 /
  .458 / .171.

Not adopted (reverted; the product code lived in ``vectree/retrieval/late.py``).  The evaluation run
informed the revert, so no figure here is claimed as an improvement.  What it shows: the QASPER dev
papers reward matching the question's topic words, which a real paper repeats in its summary
sentences; the demo corpus is the one real-PDF check with known answers outside the evaluation
(``benchmarks/demo_within_paper.py``).
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

import numpy as np

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()

_STOP = set("""a an the of for in on at to from with by about and or is are was were be been being do does
did has have had what which who whom whose when where why how many much this that these those it its they
their them there than then so such not no can could would should will may might used use using does any
some all each other into over under between during via per as if also""".split())


class TokenVectors:
    """MiniLM's last-layer token vectors (unit length), special tokens dropped."""

    def __init__(self):
        from vectree.retrieval.embed import get_embedder

        self.st = get_embedder().model
        self.tok = self.st.tokenizer

    def encode(self, texts: list[str]) -> list[tuple[np.ndarray, list[str]]]:
        outs = self.st.encode(texts, output_value="token_embeddings", batch_size=64,
                              convert_to_numpy=False, show_progress_bar=False)
        res = []
        for t, o in zip(texts, outs):
            ids = self.tok(t, truncation=True, max_length=self.st.max_seq_length)["input_ids"]
            pieces = self.tok.convert_ids_to_tokens(ids)
            v = o.detach().float().numpy()[: len(pieces)]
            keep = [i for i, p in enumerate(pieces) if p not in ("[CLS]", "[SEP]", "[PAD]")]
            v = v[keep]
            v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
            res.append((v.astype(np.float32), [pieces[i] for i in keep]))
        return res


def cached_tokens(tv: TokenVectors, key: str, texts: list[str], cache: Path | None):
    """``tv.encode(texts)``, kept in ``cache/<key>.npz`` between runs (the encoding is most of the time)."""
    if cache is None:
        return tv.encode(texts)
    f = cache / f"{key}.npz"
    if f.exists():
        z = np.load(f, allow_pickle=True)
        return list(zip(list(z["v"]), list(z["p"])))
    out = tv.encode(texts)
    cache.mkdir(parents=True, exist_ok=True)
    v = np.empty(len(out), object)
    pc = np.empty(len(out), object)
    for i, (a, b) in enumerate(out):
        v[i], pc[i] = a.astype(np.float16), b
    np.savez(f, v=v, p=pc)
    return out


def content_mask(pieces: list[str]) -> np.ndarray:
    """Word-pieces that carry content: not punctuation, not a stop word (a continuation piece keeps
    its word's verdict)."""
    out, word_ok = [], False
    for p in pieces:
        if p.startswith("##"):
            out.append(word_ok)
            continue
        word_ok = bool(re.search(r"[a-z0-9]", p)) and p not in _STOP
        out.append(word_ok)
    return np.array(out, bool)


def maxsim(q: np.ndarray, qw: np.ndarray, docs: list[np.ndarray]) -> np.ndarray:
    """Weighted mean over query pieces of their best cosine in each document."""
    out = np.zeros(len(docs), np.float32)
    if not len(q):
        return out
    for j, d in enumerate(docs):
        if len(d):
            out[j] = float((q @ d.T).max(1) @ qw) / float(qw.sum())
    return out


def piece_idf(piece_lists, pieces) -> np.ndarray:
    """``log(1 + n / (1 + df))`` of each of ``pieces`` over ``n`` sentences (their word-piece lists)."""
    df: dict[str, int] = {}
    for pcs in piece_lists:
        for p in set(pcs):
            df[p] = df.get(p, 0) + 1
    n = len(piece_lists)
    return np.array([math.log(1 + n / (1 + df.get(p, 0))) for p in pieces], np.float32)


def rrf(rankings, k: int, weights=None) -> list[int]:
    from vectree.retrieval.passages import RRF_K

    fused: dict[int, float] = {}
    for n, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[n]
        for r, i in enumerate(ranking):
            fused[i] = fused.get(i, 0.0) + w / (RRF_K + r + 1)
    return [i for i, _ in sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--split", default="both", choices=["dev", "train", "both"])
    ap.add_argument("--limit", type=int, default=None, help="only the first N papers of each split")
    ap.add_argument("--cache", type=Path, default=None, help="keep the papers' token vectors here")
    ap.add_argument("--reader", action="store_true", help="also score the order after the shipped reader")
    ap.add_argument("--bm25-weights", type=float, nargs="*", default=[],
                    help="also the hybrid with BM25 weighted so in the fusion (cosine 1)")
    ap.add_argument("--own-only", action="store_true",
                    help="rank only the article's own sentences (its questions' evidence), not the padding: "
                         "within-topic discrimination, as in a real paper")
    args = ap.parse_args()
    from vectree.evaluation.embedcache import cached_embedder
    from vectree.retrieval.passages import PaperPassages, passages_table
    from vectree.retrieval.rerank.pages import dev_papers

    from dev_question_focus import boosted_bm25

    emb = cached_embedder()
    tv = TokenVectors()
    variants = ["today (bm25+cos)", "bm25 alone", "cosine alone", "maxsim", "maxsim-idf", "bm25+cos+maxsim", "bm25+cos+maxsim-idf",
                "bm25+maxsim-idf", "cos+maxsim-idf", "hybrid 24 -> maxsim-idf", "hybrid 48 -> maxsim-idf",
                "bm25/cos 50 union -> maxsim-idf"]
    variants += [f"hybrid, bm25 x{w:g}" for w in args.bm25_weights]
    reader = None
    if args.reader:
        from vectree.retrieval.rerank.apply import PASSAGE_DEPTH, PASSAGE_MAX_LEN, fused_order
        from vectree.retrieval.rerank.calibrate import relevance_prob
        from vectree.retrieval.rerank.model import get_reader

        reader = get_reader()
        read_of = ["today (bm25+cos)", "maxsim-idf", "hybrid 24 -> maxsim-idf", "bm25+cos+maxsim-idf"]
        variants += [f"{v} + reader" for v in read_of]
    for split in (["dev", "train"] if args.split == "both" else [args.split]):
        papers = dev_papers(Path(args.data), split=split, limit=args.limit)
        stats = {v: {"P@1": [], "R@1": [], "R@3": [], "R@8": [], "R@12": [], "page P@1": []} for v in variants}
        for paper in papers:
            P = PaperPassages(passages_table([{"passage_id": i, "page_no": p, "block": 0, "node_id": None, "text": t}
                                              for i, (t, p) in enumerate(zip(paper.chunks, paper.pages))],
                                             emb.encode_documents(paper.chunks)))
            toks = cached_tokens(tv, f"{split}-{paper.key}", paper.chunks, args.cache)
            dvecs = [np.asarray(v, np.float32) for v, _ in toks]
            toks = [(v, list(pc)) for v, pc in toks]
            # word-piece IDF over the paper's sentences
            questions = [q for q, _ in paper.questions]
            qvs = emb.encode_queries(questions)
            qtoks = cached_tokens(tv, f"{split}-{paper.key}-q", questions, args.cache)
            own = {i for (a, b), key in zip(paper.paragraphs, paper.article_keys) if key is None for i in range(a, b)}
            for (q, gold_pages), qv, ev, (qt, qp) in zip(paper.questions, qvs, paper.evidence, qtoks):
                if args.own_only and len(own - ev) == 0:
                    continue  # nothing but its own evidence: no within-topic distractor to tell apart
                mask = content_mask(qp)
                if not mask.any():
                    mask[:] = True
                qt_c, qp_c = qt[mask], [p for p, m in zip(qp, mask) if m]
                idf = piece_idf([pcs for _, pcs in toks], qp_c)
                qt_c = qt_c.astype(np.float32)
                ms = maxsim(qt_c, np.ones(len(qp_c), np.float32), dvecs)
                msi = maxsim(qt_c, idf, dvecs)
                sims = P.vectors @ qv
                keep = (lambda r: [i for i in r if i in own]) if args.own_only else (lambda r: r)
                # today's BM25 over the expanded question (own-only: the whole paper, then filtered)
                bm = keep(boosted_bm25(P, q, [], 1.0, limit=len(paper.chunks) if args.own_only else 50))
                cos_r = keep([int(i) for i in np.argsort(-sims)])[:50]
                ms_r = keep([int(i) for i in np.argsort(-ms)])[:50]
                msi_r = keep([int(i) for i in np.argsort(-msi)])[:50]
                orders = {
                    "today (bm25+cos)": rrf([bm, cos_r], 12),
                    "bm25 alone": bm[:12],
                    "cosine alone": cos_r[:12],
                    "maxsim": ms_r[:12],
                    "maxsim-idf": msi_r[:12],
                    "bm25+cos+maxsim": rrf([bm, cos_r, ms_r], 12),
                    "bm25+cos+maxsim-idf": rrf([bm, cos_r, msi_r], 12),
                    "bm25+maxsim-idf": rrf([bm, msi_r], 12),
                    "cos+maxsim-idf": rrf([cos_r, msi_r], 12),
                }
                for w in args.bm25_weights:
                    orders[f"hybrid, bm25 x{w:g}"] = rrf([bm, cos_r], 12, [w, 1.0])
                hyb = rrf([bm, cos_r], 100)
                for n in (24, 48):
                    cand = hyb[:n]
                    orders[f"hybrid {n} -> maxsim-idf"] = sorted(cand, key=lambda i: -msi[i])[:12]
                union = list(dict.fromkeys(bm + cos_r))
                orders["bm25/cos 50 union -> maxsim-idf"] = sorted(union, key=lambda i: -msi[i])[:12]
                if reader is not None:
                    for v in read_of:
                        first = (rrf([bm, cos_r, msi_r], PASSAGE_DEPTH) if v == "bm25+cos+maxsim-idf"
                                 else orders[v][:PASSAGE_DEPTH])
                        readings = reader.read(q, [paper.chunks[i] for i in first], max_len=PASSAGE_MAX_LEN)
                        logits = np.asarray([r.relevance for r in readings], np.float32)
                        probs = relevance_prob(logits, reader.config.calibration, sims[first])
                        orders[f"{v} + reader"] = [first[j] for j in fused_order(probs)]
                for v, order in orders.items():
                    s = stats[v]
                    s["P@1"].append(float(order[0] in ev) if order else 0.0)
                    for k in (1, 3, 8, 12):
                        s[f"R@{k}"].append(len(set(order[:k]) & ev) / len(ev))
                    s["page P@1"].append(float(bool(order) and P.pages[order[0]] in gold_pages))
        n = len(stats[variants[0]]["P@1"])
        print(f"\n{split}: {n} questions on {len(papers)} papers")
        print("| first stage | sentence P@1 | R@1 | R@3 | R@8 | R@12 | page P@1 |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for v in variants:
            s = stats[v]
            print(f"| {v} | " + " | ".join(f"{np.mean(s[m]):.3f}" for m in s) + " |", flush=True)


if __name__ == "__main__":
    main()
