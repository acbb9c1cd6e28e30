"""Layer 0 channels on PubMedQA training questions: which entries the dense side should score.

    .venv/bin/python benchmarks/exp_layer0_channels.py [--split train] [--data ../shared/data/pubmedqa]

Why: on the held-back PubMedQA questions Layer 0 dense (one paper entry + one entry per labelled
part, max per paper) had R@1 .975 where dense-rag (256-word-piece windows of the abstract, max per
paper) had .992.  A PubMedQA abstract is ~280 word pieces at the median and MiniLM reads 256, so
the paper entry (title, abstract, section titles) loses its tail; the section entries are short
and single-topic.  This script scores, on the ``train`` split of
``vectree.retrieval.rerank.data.pubmedqa_split`` (dev is saturated: every dense variant ranks all
87 dev questions right; ``test`` is what the evaluation reports and is never read here):

* dense channels: ``paper`` (today's paper entry, truncated by the model), ``windows`` (the paper
  entry cut into windows the model reads whole, :func:`text_windows` below),
  ``sections`` (one per labelled part) and their max roll-ups;
* BM25 over today's entries, and the product's fusion (:func:`vectree.retrieval.search.fusion.fuse`)
  of BM25 with each dense channel at several dense weights and with RRF.

R@1 and MRR (over the top 100 papers) side by side.  Vectors are cached on disk
(``--cache``), so a second run only encodes the queries.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def text_windows(entry, tokenizer, max_tokens: int) -> list[str]:
    """What the dense backend embeds for ``entry``: its :attr:`Entry.text` when the model reads it
    whole, else windows of it that the model does read whole.

    A bi-encoder truncates its input (MiniLM at 256 word pieces), so an entry longer than that
    (a paper entry's abstract, ~280 word pieces at PubMedQA's median, or a long section summary)
    was embedded without its tail: a question about the results at the end of an abstract could
    not match it.  Each window repeats the entry's title and holds ``max_tokens - 2`` word pieces
    (the special tokens) of the title line and the body; there are as few windows as cover the
    body, all full length and spread evenly (they overlap rather than leave a short, noisy tail).
    ``tokenizer`` is the model's Hugging Face tokenizer (offsets are needed to cut the text)."""
    text = entry.text
    budget = max_tokens - 2
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets = [o for o in enc["offset_mapping"] if o[1] > o[0]]
    if len(offsets) <= budget:
        return [text]
    head = f"{entry.title}\n" if entry.title else ""
    body = entry.body
    if head:
        budget -= len(tokenizer(head, add_special_tokens=False, verbose=False)["input_ids"])
        enc = tokenizer(body, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offsets = [o for o in enc["offset_mapping"] if o[1] > o[0]]
    if budget < 16:  # a title that fills the window: cut the whole text instead
        head, body, budget = "", text, max_tokens - 2
        enc = tokenizer(body, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offsets = [o for o in enc["offset_mapping"] if o[1] > o[0]]
    n = len(offsets)
    if n <= budget:
        return [f"{head}{body}"]
    count = -(-n // budget)
    starts = [round(i * (n - budget) / (count - 1)) for i in range(count)]
    return [head + body[offsets[s][0]:offsets[s + budget - 1][1]] for s in starts]


def window_spec(embedder) -> tuple[Any, int] | None:
    """``(tokenizer, max_tokens)`` of a sentence-transformers embedder (also behind a cache
    wrapper), or None when the embedder does not say how much it reads (then entries are embedded
    whole, as the embedder truncates them)."""
    model = getattr(embedder, "model", None)
    tokenizer = getattr(model, "tokenizer", None)
    max_tokens = getattr(model, "max_seq_length", None)
    if tokenizer is None or not isinstance(max_tokens, int) or max_tokens < 32:
        return None
    try:
        tokenizer("probe", add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    except Exception:  # noqa: BLE001 - a slow tokenizer has no offsets: embed whole entries
        return None
    return tokenizer, max_tokens


def dense_texts(embedder, entries: Iterable[Entry]) -> tuple[list[Entry], list[str]]:
    """The dense backend's rows for ``entries``: ``(row_entries, texts)``, one row per
    :func:`text_windows` window of each entry (one row for an entry the model reads whole).
    Several rows of one entry share its ``entry_id``; a search keeps an entry's best row."""
    spec = window_spec(embedder)
    rows: list[Entry] = []
    texts: list[str] = []
    for e in entries:
        for w in (text_windows(e, *spec) if spec else [e.text]):
            rows.append(e)
            texts.append(w)
    return rows, texts


def hits_from_scores(scores: np.ndarray, meta: list, limit: int = 100):
    from vectree.retrieval.search.entries import EntryHit

    top = np.argsort(-scores, kind="stable")[:limit]
    return [EntryHit(meta[i].entry_id, meta[i].doc_id, meta[i].node_id, meta[i].kind, meta[i].title, None, None,
                     float(scores[i])) for i in top]


def metrics(ranks: list) -> tuple[float, float]:
    n = len(ranks)
    return sum(r == 1 for r in ranks) / n, sum(1.0 / r for r in ranks if r) / n


def rank_of(results: list[dict], gold: str):
    ids = [r["doc_id"] for r in results]
    return ids.index(gold) + 1 if gold in ids else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "pubmedqa"))
    ap.add_argument("--split", default="train", choices=["train", "dev"])
    ap.add_argument("--weights", default="0.5,0.6,0.7,0.8,0.9")
    ap.add_argument("--only", default="", help="comma-separated channel names to run")
    ap.add_argument("--cache", default="/tmp/vectree-exp-embcache")
    args = ap.parse_args()

    from vectree.retrieval.config import set_offline_model_env

    set_offline_model_env()
    from vectree.evaluation.pubmedqa import load_pubmedqa
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.embedcache import CachedEmbedder
    from vectree.retrieval.rerank.data import pubmedqa_split
    from vectree.retrieval.search import paper_entry, section_entry
    from vectree.retrieval.search.bm25 import BM25Index
    from vectree.retrieval.search.fusion import fuse
    from vectree.retrieval.search import entries as E

    docs, questions = load_pubmedqa(Path(args.data))
    qs = [q for q in questions if pubmedqa_split(q.pmid) == args.split]
    print(f"{len(docs)} abstracts, {len(qs)} {args.split} questions")
    emb = CachedEmbedder(get_embedder(), args.cache)
    tok = emb.model.tokenizer

    papers, sections, windows = [], [], []
    for d in docs:
        p = paper_entry(d.pmid, "", " ".join(t for _, t in d.sections), [label for label, _ in d.sections])
        papers.append(p)
        for i, (label, text) in enumerate(d.sections):
            sections.append(section_entry(d.pmid, f"s{i}", label, text, None, None))
        windows.extend([E.Entry(p.entry_id, p.doc_id, p.node_id, p.kind, p.title, w) for w in text_windows(p, tok, 256)])
    # dense-rag's units: 256-word-piece windows of the abstract's text, no overlap (the baseline)
    chunks = []
    for d in docs:
        text = "\n".join(t for _, t in d.sections)
        enc = tok(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offs = [o for o in enc["offset_mapping"] if o[1] > o[0]]
        for i in range(0, len(offs), 256):
            w = offs[i:i + 256]
            chunks.append(E.Entry(f"{d.pmid}#c{i}", d.pmid, None, "paper", "", text[w[0][0]:w[-1][1]]))
    n_trunc = sum(len(tok(p.text, add_special_tokens=True)["input_ids"]) > 256 for p in papers)
    print(f"paper entries over 256 word pieces: {n_trunc} of {len(papers)}; windows: {len(windows)}")
    t0 = time.perf_counter()
    vec = {name: emb.encode_documents([e.text for e in group])
           for name, group in (("paper", papers), ("sections", sections), ("windows", windows), ("dense-rag chunks", chunks))}
    qv = emb.encode_cached([q.question for q in qs], queries=True)
    print(f"encoded in {time.perf_counter() - t0:.0f} s")
    groups = {"paper": papers, "sections": sections, "windows": windows, "dense-rag chunks": chunks}

    with tempfile.TemporaryDirectory() as tmp:
        bm25 = BM25Index.create(Path(tmp) / "bm25", papers + sections)
        bm25_hits = [bm25.search(q.question, 100) for q in qs]

    only = args.only.split(",") if args.only else None
    channels = {
        "dense-rag chunks": ["dense-rag chunks"], "paper": ["paper"], "windows": ["windows"], "sections": ["sections"],
        "paper+sections (today)": ["paper", "sections"], "windows+sections": ["windows", "sections"],
        "paper+windows": ["paper", "windows"], "paper+windows+sections": ["paper", "windows", "sections"],
    }
    rows = []
    for cname, parts in channels.items():
        if only and cname not in only:
            continue
        meta = [e for p in parts for e in groups[p]]
        mat = np.concatenate([vec[p] for p in parts])
        dense_hits = [hits_from_scores(mat @ qv[j], meta) for j in range(len(qs))]
        variants = [("dense", None, None)] + [("weighted", "weighted", float(w)) for w in args.weights.split(",")]
        variants += [("rrf", "rrf", 0.5)]
        for vname, fusion, w in variants:
            ranks = []
            for j, q in enumerate(qs):
                hits = {"dense": dense_hits[j]} if fusion is None else {"dense": dense_hits[j], "bm25": bm25_hits[j]}
                res = fuse(hits, fusion=fusion or "rrf", dense_weight=w if w is not None else 0.5, k=100)
                ranks.append(rank_of(res, q.pmid))
            r1, mrr = metrics(ranks)
            label = vname if w is None or fusion == "rrf" else f"{vname} {w}"
            rows.append((cname, label, r1, mrr))
            print(f"| {cname} | {label} | {r1:.3f} | {mrr:.3f} |", flush=True)
    ranks = [rank_of(fuse({"bm25": h}, k=100), q.pmid) for h, q in zip(bm25_hits, qs)]
    r1, mrr = metrics(ranks)
    rows.append(("-", "bm25", r1, mrr))
    print(f"\n{len(qs)} {args.split} questions\n\n| dense entries | ranking | R@1 | MRR |\n|---|---|---:|---:|")
    for c, v, a, b in rows:
        print(f"| {c} | {v} | {a:.3f} | {b:.3f} |")


if __name__ == "__main__":
    main()
