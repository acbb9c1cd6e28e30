"""Layer 0 search on PubMedQA: find the one abstract (of 1,000) each question was written from.

    .venv/bin/python benchmarks/bench_pubmedqa_search.py [--data ../shared/data/pubmedqa] [--out results.json]

Corpus (what is indexed, per abstract; the question and the conclusion are never indexed):

* one **paper entry**: PubMedQA has no titles, so the title is empty and the body is the first
  labelled part's text followed by ``Sections: <label>; <label>; ...``;
* one **section entry** per labelled part: title = the label (BACKGROUND, METHODS, ...), body =
  that part's text.

It reports Recall@1/5/10 and MRR (over the top 100 papers; a paper outside them counts 0) of the
gold abstract for BM25 alone, dense alone, RRF and weighted fusion.  The dense weight of each
fusion is chosen on the first ``--tune`` questions (by MRR, then Recall@1) and reported on all
questions and on the rest (the held-out part).  Latency is the warm end-to-end ``search`` call
(query embedding included) with the default settings.  As the baseline, the same corpus is cut
into 256-token passages (MiniLM word pieces, no overlap) and indexed by the same BM25 + LanceDB
code; its footprint and its paper-level retrieval are printed side by side.

PubMedQA abstracts are short (~270 word pieces, 1.7 passages each) while every labelled part is
an entry (4.4 entries each), so here the passage index is the smaller one.  Full papers are where
compact entries pay off: ``--store PATH`` (a store built by ``vectree ingest``, e.g. of
``../shared/data/pdfs``) adds the same footprint comparison on the store's papers, against their
full page text cut into 256-token passages.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vectree.evaluation.pubmedqa import PubMedQADoc, load_pubmedqa  # noqa: E402
from vectree.retrieval.config import load_settings  # noqa: E402
from vectree.retrieval.embed import get_embedder  # noqa: E402
from vectree.retrieval.search import DEFAULT_DENSE_WEIGHT, DEFAULT_FUSION, BuildReport, SearchIndex, build_index, fuse  # noqa: E402
from vectree.retrieval.search.bm25 import BM25Index  # noqa: E402
from vectree.retrieval.search.entries import Entry, paper_entry, section_entry  # noqa: E402
from vectree.retrieval.search.index import _dir_bytes, encode_query  # noqa: E402
from vectree.retrieval.search.vectors import VectorTable  # noqa: E402

WEIGHTS = [round(0.1 * i, 1) for i in range(11)]
CANDIDATES = 100  # entries per backend, as the production search uses for k=10
EVAL_DEPTH = 100  # papers ranked per question for MRR


def pubmedqa_entries(docs: list[PubMedQADoc]) -> list[Entry]:
    entries = []
    for d in docs:
        entries.append(paper_entry(d.pmid, "", d.contexts[0] if d.contexts else "", d.labels))
        for i, (label, text) in enumerate(d.sections):
            entries.append(section_entry(d.pmid, f"s{i}", label, text, None, None))
    return entries


def passage_chunks(docs: list[PubMedQADoc], tokenizer, size: int = 256) -> list[Entry]:
    """Each abstract (its parts joined by newlines) cut into ``size``-token windows; the text of
    a window is the original characters it covers (from the tokenizer's offsets)."""
    out = []
    for d in docs:
        text = "\n".join(d.contexts)
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)["offset_mapping"]
        for c, i in enumerate(range(0, len(offsets), size)):
            window = offsets[i:i + size]
            out.append(Entry(f"{d.pmid}#c{c}", d.pmid, f"c{c}", "section", "", text[window[0][0]:window[-1][1]]))
    return out


def page_chunks(store, tokenizer, size: int = 256) -> list[Entry]:
    """The full page text of every ``ok`` paper of a store, cut into ``size``-token passages."""
    out = []
    for row in store.papers(status="ok"):
        text = "\n".join(store.read_page_texts(row["doc_id"]))
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)["offset_mapping"]
        for c, i in enumerate(range(0, len(offsets), size)):
            window = offsets[i:i + size]
            out.append(Entry(f"{row['doc_id']}#c{c}", row["doc_id"], f"c{c}", "section", "",
                             text[window[0][0]:window[-1][1]]))
    return out


def store_footprint(store_root: str, work: Path, embedder) -> list[list]:
    """Compact entries vs 256-token passages of the full text, for an ingested store of PDFs."""
    from vectree.retrieval.search.entries import store_entries
    from vectree.retrieval.store import Store

    store = Store(store_root)
    entries = list(store_entries(store))
    report = build_index(work / "store-entries", entries, embedder=embedder)
    chunks = page_chunks(store, embedder.model.tokenizer)
    vecs = embedder.encode_documents([c.text for c in chunks])
    b = BM25Index.create(work / "store-passages" / "bm25", chunks)
    v = VectorTable.create(work / "store-passages" / "vectors", embedder.info.dim, chunks, vecs)
    eb = report.bytes["bm25"] + report.bytes["vectors"]
    pb = _dir_bytes(b.path) + _dir_bytes(v.path)
    n_papers = len(store.papers(status="ok"))
    n_sections = sum(e.kind == "section" for e in entries)
    return [
        [f"compact entries ({n_papers} papers, {n_sections} verified sections)", len(entries),
         report.bytes["bm25"], report.bytes["vectors"], eb, 1.0],
        ["256-token passages of the full text", len(chunks), _dir_bytes(b.path), _dir_bytes(v.path), pb, pb / eb],
    ]


def metrics(rankings: list[list[str]], gold: list[str]) -> dict[str, float]:
    n = len(gold)
    ranks = [r.index(g) + 1 if g in r else None for r, g in zip(rankings, gold)]
    return {
        "R@1": sum(1 for x in ranks if x and x <= 1) / n,
        "R@5": sum(1 for x in ranks if x and x <= 5) / n,
        "R@10": sum(1 for x in ranks if x and x <= 10) / n,
        "MRR": sum(1 / x for x in ranks if x) / n,
    }


def rank_papers(hits: dict, **kw) -> list[str]:
    return [r["doc_id"] for r in fuse(hits, k=EVAL_DEPTH, max_sections=0, **kw)]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def table(title: str, header: list[str], rows: list[list]) -> str:
    fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = [f"\n### {title}", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(load_settings().shared_data / "pubmedqa"))
    ap.add_argument("--tune", type=int, default=200, help="questions used to choose the fusion weight")
    ap.add_argument("--questions", type=int, default=0, help="use only the first N questions (0: all)")
    ap.add_argument("--workdir", default=None, help="where to build the indexes (default: a temp dir)")
    ap.add_argument("--out", default=None, help="write the numbers as JSON here")
    ap.add_argument("--store", default=None,
                    help="also compare footprints on this ingested store of PDFs (e.g. ../shared/data/pdfs)")
    ap.add_argument("--reuse", action="store_true", help="reuse the indexes already built in --workdir")
    args = ap.parse_args(argv)

    docs, questions = load_pubmedqa(args.data)
    if args.questions:
        questions = questions[:args.questions]
    gold = [q.pmid for q in questions]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-pubmedqa-"))
    embedder = get_embedder()
    print(f"PubMedQA: {len(docs)} abstracts, {len(questions)} questions; embedder {embedder.info.name} "
          f"({embedder.info.dim}-d); cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; work dir {work}")

    # ---- compact-entry index (what vectree ships) ---------------------------------------
    entries = pubmedqa_entries(docs)
    chunks = passage_chunks(docs, embedder.model.tokenizer)
    reuse = args.reuse and (work / "entries-index" / "CURRENT").exists() and (work / "passage-index").exists()
    t0 = time.perf_counter()
    if reuse:  # only the queries are timed again; build times are not measured on this path
        report = BuildReport.from_meta(SearchIndex.open(work / "entries-index", auto_refresh=False).meta)
        if report.entries != len(entries):
            raise SystemExit(f"{work}/entries-index holds {report.entries} entries, expected {len(entries)}")
    else:
        report = build_index(work / "entries-index", entries, embedder=embedder)
    entry_build_s = time.perf_counter() - t0

    # ---- 256-token passage index (the baseline) ------------------------------------------
    t0 = time.perf_counter()
    if reuse:
        pbm25 = BM25Index.open(work / "passage-index" / "bm25")
        pvec = VectorTable.open(work / "passage-index" / "vectors")
    else:
        vecs = embedder.encode_documents([c.text for c in chunks])
        pbm25 = BM25Index.create(work / "passage-index" / "bm25", chunks)
        pvec = VectorTable.create(work / "passage-index" / "vectors", embedder.info.dim, chunks, vecs)
    passage_build_s = time.perf_counter() - t0
    passage_bytes = {"bm25": _dir_bytes(pvec.path.parent / "bm25"), "vectors": _dir_bytes(pvec.path)}
    passage_bytes["total"] = sum(passage_bytes.values())

    # ---- queries ---------------------------------------------------------------------------
    index = SearchIndex.open(work / "entries-index", embedder=embedder, auto_refresh=False)
    for q in questions[:20]:  # warm up: model, mmaps, caches
        index.search(q.question, 10)
    entry_hits, passage_hits = [], []
    t_embed, t_bm25, t_dense, t_total = [], [], [], []
    for q in questions:
        t = time.perf_counter()
        vec = encode_query(embedder, q.question)  # as the search path does it (single-threaded)
        t_embed.append(time.perf_counter() - t)
        t = time.perf_counter()
        b = index._snap.bm25.search(q.question, CANDIDATES)
        t_bm25.append(time.perf_counter() - t)
        t = time.perf_counter()
        dn = index._snap.vectors.search(vec, CANDIDATES)
        t_dense.append(time.perf_counter() - t)
        entry_hits.append({"bm25": b, "dense": dn})
        passage_hits.append({"bm25": pbm25.search(q.question, CANDIDATES), "dense": pvec.search(vec, CANDIDATES)})
    for q in questions:  # end to end, default mode and fusion, as `vectree search` runs it
        t = time.perf_counter()
        index.search(q.question, 10)
        t_total.append(time.perf_counter() - t)

    def evaluate(hits_list, sel=slice(None), **kw):
        return metrics([rank_papers(h, **kw) for h in hits_list[sel]], gold[sel])

    def only(hits_list, name):
        return [{name: h[name]} for h in hits_list]

    tune = slice(0, min(args.tune, len(questions)))
    rest = slice(tune.stop, None)
    sweep = {}
    for fusion in ("rrf", "weighted"):
        sweep[fusion] = {w: evaluate(entry_hits, tune, fusion=fusion, dense_weight=w) for w in WEIGHTS}
    best_w = {f: max(WEIGHTS, key=lambda w: (s[w]["MRR"], s[w]["R@1"], -abs(w - 0.5))) for f, s in sweep.items()}

    configs = {
        "BM25 only": dict(hits=only(entry_hits, "bm25"), kw={}),
        "dense only": dict(hits=only(entry_hits, "dense"), kw={}),
        "RRF, w=0.5 (plain)": dict(hits=entry_hits, kw=dict(fusion="rrf", dense_weight=0.5)),
        f"RRF, w={best_w['rrf']} (tuned)": dict(hits=entry_hits, kw=dict(fusion="rrf", dense_weight=best_w["rrf"])),
        "weighted, w=0.5": dict(hits=entry_hits, kw=dict(fusion="weighted", dense_weight=0.5)),
        f"weighted, w={best_w['weighted']} (tuned)": dict(
            hits=entry_hits, kw=dict(fusion="weighted", dense_weight=best_w["weighted"])),
    }
    results = {name: {"all": evaluate(c["hits"], **c["kw"]), "held_out": evaluate(c["hits"], rest, **c["kw"])}
               for name, c in configs.items()}
    passage_results = {
        "passages: BM25 only": evaluate(only(passage_hits, "bm25")),
        "passages: dense only": evaluate(only(passage_hits, "dense")),
        "passages: RRF, w=0.5": evaluate(passage_hits, fusion="rrf", dense_weight=0.5),
    }

    # ---- report ----------------------------------------------------------------------------
    n_rest = len(questions) - tune.stop
    out = [f"\nindex build: {len(entries)} entries in {entry_build_s:.1f}s; passages: {len(chunks)} chunks in "
           f"{passage_build_s:.1f}s (embedding included{'; REUSED, not rebuilt' if reuse else ''}); "
           f"vector index: {report.vector_index}; default fusion {DEFAULT_FUSION} at dense weight {DEFAULT_DENSE_WEIGHT}; "
           f"load average after the run {os.getloadavg()[0]:.1f}"]
    rows = []
    for name, r in results.items():
        a, h = r["all"], r["held_out"]
        rows.append([name, a["R@1"], a["R@5"], a["R@10"], a["MRR"], h["R@1"] if n_rest else "-", h["MRR"] if n_rest else "-"])
    out.append(table(f"Compact entries: gold abstract among 1,000 ({len(questions)} questions; weights tuned on the "
                     f"first {tune.stop}, held out = the other {n_rest})",
                     ["retriever", "R@1", "R@5", "R@10", "MRR", "R@1 held-out", "MRR held-out"], rows))
    out.append(table("Weight sweep on the tuning questions (MRR; w = dense weight)", ["w"] + list(sweep),
                     [[w] + [sweep[f][w]["MRR"] for f in sweep] for w in WEIGHTS]))
    out.append(table("Baseline: 256-token passage index, rolled up to papers (all questions)",
                     ["retriever", "R@1", "R@5", "R@10", "MRR"],
                     [[n, r["R@1"], r["R@5"], r["R@10"], r["MRR"]] for n, r in passage_results.items()]))
    eb = report.bytes
    out.append(table("Index footprint on disk", ["index", "entries", "BM25 bytes", "vector bytes", "total bytes", "ratio"], [
        ["compact entries (paper + section)", len(entries), eb["bm25"], eb["vectors"], eb["bm25"] + eb["vectors"], 1.0],
        ["256-token passages", len(chunks), passage_bytes["bm25"], passage_bytes["vectors"], passage_bytes["total"],
         passage_bytes["total"] / (eb["bm25"] + eb["vectors"])],
    ]))
    store_rows = None
    if args.store:
        store_rows = store_footprint(args.store, work, embedder)
        out.append(table(f"Index footprint on full papers (store {args.store})",
                         ["index", "entries", "BM25 bytes", "vector bytes", "total bytes", "ratio"], store_rows))
    ms = lambda xs, q: 1000 * pct(xs, q)  # noqa: E731
    out.append(table(f"Warm query latency (ms, {len(questions)} queries, {os.cpu_count()} cpus)",
                     ["stage", "p50", "p95", "mean"], [
                         [name, ms(xs, 0.5), ms(xs, 0.95), 1000 * statistics.mean(xs)]
                         for name, xs in [("query embedding", t_embed), ("BM25 (Tantivy)", t_bm25),
                                          ("dense (LanceDB)", t_dense), ("end-to-end search(k=10)", t_total)]]))
    print("\n".join(out))
    numbers = {
        "results": results, "sweep": {f: {str(w): m for w, m in s.items()} for f, s in sweep.items()},
        "best_weight": best_w, "passage_results": passage_results,
        "footprint": {"entries": {"n": len(entries), **eb}, "passages": {"n": len(chunks), **passage_bytes}},
        "latency_ms": {name: {"p50": ms(xs, 0.5), "p95": ms(xs, 0.95)} for name, xs in
                       [("embed", t_embed), ("bm25", t_bm25), ("dense", t_dense), ("total", t_total)]},
        "build_s": {"entries": entry_build_s, "passages": passage_build_s},
        "store_footprint": store_rows,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(numbers, indent=1))
    return numbers


if __name__ == "__main__":
    main()
