"""Cost growth with the corpus: 100, 1,000 and 10,000 papers of real text (``scale_corpus.py``).

One table, one row per corpus size:

* **ingest papers/min/core**: ``vectree ingest`` (the real pipeline: PyMuPDF, offline section
  trees, MiniLM passages, the search index) of a stated sample of the corpus's typeset PDFs into
  a fresh store, counted against the CPU seconds the ingest process used (so "per core" does not
  depend on how busy the shared machine was); wall papers/min beside it.  Ingestion points: 100
  and 1,000 (the 10,000 point is a search point only).
* **Layer-0 query p50/p95 ms** (wall, query encoding included) and **server CPU ms/query**: a
  fresh process that holds the embedder and the open index, as the service does, answers the
  shared PubMedQA + HotpotQA questions through ``SearchIndex.search`` (hybrid, the default fusion).
* **within-paper p50 ms**: ``Toolbox.search_within_paper`` (passages, reranker off) on the
  ingested sample store (it reads one paper's passages, so it does not depend on the corpus size).
* **service RSS MiB**: that query process's resident memory after the queries (embedder, index
  and LanceDB/Tantivy caches), and the index's share of it (RSS minus the same process before
  opening the index).
* **store KiB/paper**: the index snapshot's bytes (Tantivy + LanceDB + entries) per paper.
* **add one paper s**: ``update_index`` adding one new paper to the store (its entries embedded
  live), with the bytes it wrote (files not hard-linked from the previous snapshot).
* **ANN recall@10**: the dense top 10 through the IVF-PQ index against an exact flat scan of the
  same table, over the same questions (``-`` where the table is below ``vector_index_min_rows``
  and the search *is* the exact scan).

The 10,000 search point writes its entries straight into the index (``build_index`` with
entries), as the section-tree builder would produce them; their MiniLM vectors are computed once
and cached under ``/tmp/vectree-scale`` with the corpus (nothing generated is committed).

Writes ``docs/scale-results.json`` and ``docs/scale.png``; prints the table in Markdown.

Usage: python benchmarks/bench_scale.py [--sizes 100 1000 10000] [--ingest-sample 30]
       [--sections 10] [--queries 100] [--embed-only]  (--ingest-sample 0: no ingestion)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import scale_corpus  # noqa: E402
from vectree.retrieval.config import set_offline_model_env  # noqa: E402

CACHE = scale_corpus.CACHE
# no model hub, here and in the child processes (they inherit it); the children measure Layer 0 and
# the passages search with the reranker off by their own arguments, and ingestion does not rerank
set_offline_model_env()


class CachedEmbedder:
    """MiniLM, with document vectors looked up from the cache file (computed once per corpus)."""

    def __init__(self, vectors: dict[str, np.ndarray] | None = None):
        from vectree.retrieval.embed import get_embedder

        self.inner = get_embedder()
        self.vectors = vectors or {}

    @property
    def info(self):
        return self.inner.info

    def encode_documents(self, texts):
        todo = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if todo:
            self.vectors.update(zip(todo, self.inner.encode_documents(todo)))
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, self.info.dim), np.float32)

    def encode_queries(self, texts):
        return self.inner.encode_queries(texts)

    def encode_query(self, text):
        return self.inner.encode_query(text)


def cached_vectors(uniq: list[str], tag: str, upto: int) -> tuple[dict[str, np.ndarray], float]:
    """``text -> vector`` for the first ``upto`` of ``uniq`` (the distinct entry texts of the
    whole cached corpus, in paper order: a smaller corpus is a prefix).  Vectors live in chunk
    files ``/tmp/vectree-scale/emb-<tag>-<key>.partNNNN.npy``, computed only when missing (so an
    interrupted run resumes); returns the seconds spent embedding now."""
    from vectree.retrieval.embed import get_embedder

    CACHE.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256("\x00".join(uniq).encode()).hexdigest()[:16]
    t0 = time.perf_counter()
    spent = 0.0
    out: dict[str, np.ndarray] = {}
    chunk = 8192
    for i in range(0, min(upto, len(uniq)), chunk):
        part = CACHE / f"emb-{tag}-{key}.part{i // chunk:04d}.npy"
        if not part.exists():
            t1 = time.perf_counter()
            vecs = get_embedder().encode_documents(uniq[i:i + chunk]).astype(np.float32)
            np.save(part.with_suffix(".tmp.npy"), vecs)
            part.with_suffix(".tmp.npy").rename(part)
            spent += time.perf_counter() - t1
            print(f"  embedded {min(i + chunk, len(uniq))}/{len(uniq)} ({time.perf_counter() - t0:.0f} s)", flush=True)
        out.update(zip(uniq[i:i + chunk], np.load(part)))
    return out, spent


def _pct(xs, q):
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child_query(root: str, n_queries: int) -> None:
    """Run in a fresh process: the service's view of one index (embedder + open index)."""
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.search import SearchIndex
    from vectree.retrieval.search.publish import IndexPaths
    from vectree.retrieval.search.vectors import VectorTable

    emb = get_embedder()
    emb.encode_query("warm up the model")
    rss_base = _rss_mib()
    index = SearchIndex.open(root, embedder=emb)
    qs = scale_corpus.queries(n_queries + 5)
    for q in qs[:5]:  # warm caches, as a running service would be
        index.search(q, 10)
    walls, cpus = [], []
    for q in qs[5:]:
        c0, t0 = time.process_time(), time.perf_counter()
        index.search(q, 10)
        walls.append((time.perf_counter() - t0) * 1000)
        cpus.append((time.process_time() - c0) * 1000)
    rss = _rss_mib()
    paths = IndexPaths.of(root)
    table = VectorTable.open(paths.snapshot(paths.current()) / "vectors")
    recalls, dense_ms = [], []
    if table.vector_index_type is not None:
        for q in qs[5:]:
            v = emb.encode_query(q)
            t0 = time.perf_counter()
            ann = {h.entry_id for h in table.search(v, 10)}
            dense_ms.append((time.perf_counter() - t0) * 1000)
            exact = {h.entry_id for h in table.search(v, 10, exact=True)}
            recalls.append(len(ann & exact) / max(1, len(exact)))
    print(json.dumps({"p50_ms": _pct(walls, 50), "p95_ms": _pct(walls, 95), "cpu_ms": float(np.mean(cpus)),
                      "rss_mib": rss, "rss_before_index_mib": rss_base, "queries": len(walls),
                      "recall10": float(np.mean(recalls)) if recalls else None,
                      "ann_dense_ms_p50": _pct(dense_ms, 50) if dense_ms else None,
                      "vector_index": table.vector_index_type or "flat"}))


def child_within(store: str, n_queries: int) -> None:
    from vectree.agent.toolimpl import Toolbox

    tb = Toolbox(store, within_paper="passages", reranker="off")
    docs = [r["doc_id"] for r in tb.store.papers(status="ok")]
    qs = scale_corpus.queries(n_queries + 3)
    tb.search_within_paper(docs[0], qs[0], 5)
    walls = []
    for i, q in enumerate(qs[3:]):
        t0 = time.perf_counter()
        tb.search_within_paper(docs[i % len(docs)], q, 5)
        walls.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({"within_p50_ms": _pct(walls, 50), "within_p95_ms": _pct(walls, 95), "within_papers": len(docs)}))


def _child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ingest_point(corpus, sample: int, tag: str, n_within: int) -> dict:
    """Typeset a sample spread over ``corpus`` and ingest it into a fresh store."""
    step = max(1, len(corpus) // sample)
    chosen = corpus[::step][:sample]
    pdfs = scale_corpus.write_pdfs(chosen, CACHE / f"pdf-{tag}")
    work = CACHE / f"ingest-{tag}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "in").mkdir(parents=True)
    for p in pdfs:
        os.link(p, work / "in" / p.name)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([str(REPO / ".venv/bin/vectree"), "ingest", str(work / "in"), "--store", str(work / "store")],
                   check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    within = _child(["--child-within", str(work / "store"), str(n_within)])
    return {"ingest_sample": len(pdfs), "ingest_wall_s": wall, "ingest_cpu_s": cpu,
            "papers_per_min_core": len(pdfs) / (cpu / 60), "papers_per_min_wall": len(pdfs) / (wall / 60), **within}


def search_point(corpus, n: int, vectors: dict, settings, n_queries: int) -> dict:
    from vectree.retrieval.search import build_index, update_index
    from vectree.retrieval.search.publish import IndexPaths, read_meta

    entries = scale_corpus.entries(corpus[:n])
    root = CACHE / f"index-{n}"
    shutil.rmtree(root, ignore_errors=True)
    emb = CachedEmbedder(vectors)
    t0 = time.perf_counter()
    build_index(root, entries, embedder=emb, settings=settings)
    build_s = time.perf_counter() - t0
    paths = IndexPaths.of(root)
    meta = read_meta(paths.snapshot(paths.current()))
    q = _child(["--child-query", str(root), str(n_queries)])
    # add one paper that is not in the corpus: its entries are embedded live (a fresh embedder)
    extra = scale_corpus.papers(len(corpus) + 1, len(corpus[0].sections))[-1]
    extra = scale_corpus.ScalePaper(f"added{n:05d}", extra.title, extra.abstract, extra.sections)
    new_entries = scale_corpus.entries([extra])
    prev = paths.current()
    t0 = time.perf_counter()
    report = update_index(root, new_entries, doc_ids=[extra.doc_id], embedder=CachedEmbedder(), settings=settings)
    add_s = time.perf_counter() - t0
    snap = paths.snapshot(paths.current())
    written = sum(f.stat().st_size for f in snap.rglob("*") if f.is_file() and f.stat().st_nlink == 1)
    assert paths.current() != prev and report.mode == "incremental"
    return {"papers": n, "entries": meta["entries"], "build_s": build_s, "vector_index": meta["vector_index"],
            "index_bytes": meta["bytes"]["total"], "kib_per_paper": meta["bytes"]["total"] / 1024 / n,
            **q, "add_one_s": add_s, "add_one_written_kib": written / 1024,
            "add_one_folded": read_meta(snap)["build"].get("folded")}


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["papers"] for r in rows]
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    ax[0].plot(n, [r["p50_ms"] for r in rows], "o-", label="Layer-0 p50 (wall)")
    ax[0].plot(n, [r["p95_ms"] for r in rows], "s--", label="Layer-0 p95 (wall)")
    ax[0].plot(n, [r["cpu_ms"] for r in rows], "^:", label="CPU ms/query")
    ax[0].axhline(50, color="grey", lw=0.8)
    ax[0].set_title("query latency (ms, encoding included)")
    ax[1].plot(n, [r["rss_mib"] for r in rows], "o-", label="service RSS")
    ax[1].plot(n, [r["rss_mib"] - r["rss_before_index_mib"] for r in rows], "s--", label="index share")
    ax[1].set_title("resident memory (MiB)")
    ax[2].plot(n, [r["add_one_s"] for r in rows], "o-", label="add one paper (s)")
    ax[2].plot(n, [r["kib_per_paper"] / 10 for r in rows], "s--", label="store KiB/paper ÷ 10")
    ax[2].set_title("growth per paper")
    for a in ax:
        a.set_xscale("log")
        a.set_xlabel("papers")
        a.legend(fontsize=8)
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def markdown(rows: list[dict]) -> str:
    def f(v, fmt):
        return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, fmt)

    head = ("| papers | entries | sections/paper | ingest papers/min/core (wall) | Layer-0 p50 / p95 ms | "
            "CPU ms/query | within-paper p50 ms | service RSS MiB (index share) | store KiB/paper | "
            "add one paper s (KiB written) | vector index | ANN recall@10 |")
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        ing = (f"{r['papers_per_min_core']:.1f} ({r['papers_per_min_wall']:.1f}), n={r['ingest_sample']}"
               if r.get("papers_per_min_core") else "-")
        lines.append(
            f"| {r['papers']:,} | {r['entries']:,} | {r['sections']} | {ing} | {f(r['p50_ms'], '.1f')} / "
            f"{f(r['p95_ms'], '.1f')} | {f(r['cpu_ms'], '.1f')} | {f(r.get('within_p50_ms'), '.1f')} | "
            f"{r['rss_mib']:.0f} ({r['rss_mib'] - r['rss_before_index_mib']:.0f}) | {r['kib_per_paper']:.1f} | "
            f"{r['add_one_s']:.2f} ({r['add_one_written_kib']:.0f}) | {r['vector_index']} | "
            f"{f(r.get('recall10'), '.3f')} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--sections", type=int, default=10)
    ap.add_argument("--corpus-papers", type=int, default=10000,
                    help="length of the seeded paper sequence whose vectors are cached (sizes are prefixes)")
    ap.add_argument("--ingest-sample", type=int, default=30, help="PDFs ingested per ingestion point")
    ap.add_argument("--ingest-sizes", type=int, nargs="*", default=[100, 1000])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--embed-only", action="store_true", help="compute and cache the vectors, then stop")
    ap.add_argument("--out", type=Path, default=REPO / "docs")
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of other sizes already in OUT/scale-results.json (one size per run)")
    args = ap.parse_args()

    from vectree.retrieval.config import load_settings

    settings = load_settings()
    sizes = sorted(args.sizes)
    # one seeded sequence of papers; each size is a prefix of it, and so are its entry texts
    corpus = scale_corpus.papers(max(args.corpus_papers, sizes[-1]), args.sections)
    uniq = list(dict.fromkeys(e.text for e in scale_corpus.entries(corpus)))
    pos = {t: i for i, t in enumerate(uniq)}
    need = 1 + max(pos[e.text] for e in scale_corpus.entries(corpus[:sizes[-1]]))
    vectors, embed_s = cached_vectors(uniq, f"{len(corpus)}x{args.sections}", need)
    print(f"{sizes[-1]} papers x {args.sections} sections: vectors for {len(vectors)} entry texts "
          f"({embed_s:.0f} s embedding now)", flush=True)
    if args.embed_only:
        return
    rows = []
    for n in sizes:
        print(f"search point {n} ...", flush=True)
        row = {"sections": args.sections, **search_point(corpus, n, vectors, settings, args.queries)}
        if n in args.ingest_sizes and args.ingest_sample:
            print(f"ingestion point {n} ...", flush=True)
            row.update(ingest_point(corpus[:n], args.ingest_sample, str(n), min(args.queries, 60)))
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    previous = args.out / "scale-results.json"
    if args.merge and previous.exists():  # the sizes measured by earlier runs stay; these replace theirs
        kept = {r["papers"]: r for r in json.loads(previous.read_text())["rows"]}
        kept.update({r["papers"]: r for r in rows})
        rows = [kept[k] for k in sorted(kept)]
    result = {"machine": {"cpus": os.cpu_count(), "note": "2 cores shared by several sessions; nice -n 5"},
              "settings": {k: getattr(settings, k) for k in ("vector_index_min_rows", "vector_nprobes",
                                                             "vector_refine_factor", "search_fusion")},
              "queries": "shared PubMedQA + HotpotQA questions, interleaved", "embed_s": embed_s, "rows": rows}
    (args.out / "scale-results.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(rows, args.out / "scale.png")
    print(markdown(rows))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-query":
        child_query(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-within":
        child_within(sys.argv[2], int(sys.argv[3]))
    else:
        main()
