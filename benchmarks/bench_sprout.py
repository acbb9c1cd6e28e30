#!/usr/bin/env python
"""SproutRAG benchmark: sentence-level IE@{1,3,5} on DragonBall (finance, English) and HotpotQA,
every system side by side in one run, plus latency, tree-build scaling, training time and memory.

Systems (all with the same MiniLM, the same chunks where they use chunks, the same scorer):

* ``sprout``            the trained model: learned attention tree, beam search, threshold, rerank
* ``sprout-always-k``   the same without the threshold (tau = -inf; k nodes is now the default)
* ``leaf-only``         the trained model's contextual chunks, no tree (the same reranker)
* ``uniform-alpha``     the tree from uniformly averaged attention (alpha not learned)
* ``emb-tree``          the tree from the cosine of MiniLM chunk embeddings instead of attention
* ``token-tree``        the tree from MiniLM's own token attention averaged into chunk pairs in
                        512-token windows (the reference's encoder; alpha over its 6 x 12 heads
                        fitted with L_attn on HotpotQA train documents); nodes/rerank as sprout
* ``flat``              plain top-k sentence chunks by MiniLM cosine
* ``fixed-128``/``fixed-256``  top-k windows of 128 / 256 MiniLM tokens over the document text
* ``paragraphs``        top-k paragraphs (newline-separated) by MiniLM cosine (an extra baseline)

HotpotQA is evaluated on the ``test`` split of :func:`vectree.retrieval.sprout.data.hotpotqa_split`
(never trained on, never used for model selection); each question searches its own ten
paragraphs as one document.  DragonBall: every query searches every English document (108);
queries without references are left out of IE (their returned sentence count is reported).

MiniLM embeddings and token attentions are cached under ``--cache`` (default
``/tmp/vectree-bench-cache/sprout``), so a second run takes a few minutes.  Run from the
repository root::

    .venv/bin/python benchmarks/bench_sprout.py [--model DIR] [--limit N] [--skip-token]

Trees are built as the product builds them (``SproutModel.document_tree``: text nodes, paragraph
groups, the chunks' words for the lexical features) and searched with the query's text, so the
figures match ``vectree eval``'s.  Measured 2026-12-06 with ``--model
vectree/models/sprout/sprout-default-v4 --skip-token`` (2 CPU cores): DragonBall sprout IE@1/3/5
.281 / .166 / .113, paragraphs .252 / .163 / .113; HotpotQA test split sprout .393 / .434 / .350,
paragraphs .396 / .414 / .280 -- the same as ``vectree eval`` on those questions.  (Before, this
script built its trees without text nodes or paragraph groups and searched without the query's
words, and reported v4 at .246 / .216 / .196 on 30 HotpotQA questions.)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from vectree.retrieval.config import set_offline_model_env  # noqa: E402

set_offline_model_env()

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vectree.evaluation.datasets import load_dragonball, load_hotpotqa  # noqa: E402
from vectree.evaluation.sentences import SentenceScorer, Unit, aggregate  # noqa: E402
from vectree.retrieval.sprout.chunks import chunk_text  # noqa: E402
from vectree.retrieval.sprout.data import hotpotqa_split  # noqa: E402
from vectree.retrieval.sprout.encoder import embed_texts, token_chunk_attention  # noqa: E402
from vectree.retrieval.sprout.tree import Tree, build_tree, mutual_attention, with_text_vectors  # noqa: E402

KS = (1, 3, 5)
LISTED = ["flat", "fixed-128", "fixed-256", "emb-tree", "uniform-alpha", "leaf-only", "token-tree"]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class PeakRSS:
    """Samples this process's resident memory in a thread (peak while the block runs)."""

    def __enter__(self):
        self.peak = self.start = self._rss()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    @staticmethod
    def _rss() -> float:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def _run(self):
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, self._rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self._rss())


# ---- documents ---------------------------------------------------------------------------------
class Doc:
    def __init__(self, doc_id, text, paragraphs):
        self.doc_id, self.text = doc_id, text
        self.chunks = chunk_text(text)
        self.para = [c.paragraph for c in self.chunks]
        self.weights = [c.n_sentences for c in self.chunks]
        self.paragraph_spans = [(p.start, p.end) for p in paragraphs]


def load_benchmarks(data: Path, cache: Path, hotpot_split: str, limit: int | None):
    key = hashlib.sha256(f"{data}|{hotpot_split}|v1".encode()).hexdigest()[:12]
    path = cache / f"benchmarks-{key}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    hot = load_hotpotqa(data / "hotpotqa").subset(lambda q: hotpotqa_split(q.query_id) == hotpot_split)
    dragon = load_dragonball(data / "dragonball")
    out = {}
    for bench in (dragon, hot):
        docs = {d: Doc(d, v.text, v.paragraphs) for d, v in bench.documents.items()}
        out[bench.name] = (bench, docs)
    cache.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(out))
    return out


def window_spans(text: str, size: int, tokenizer) -> list[tuple[int, int]]:
    """Character spans of consecutive ``size``-token windows of ``text`` (MiniLM tokenizer)."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offs = [o for o in enc["offset_mapping"] if o[1] > o[0]]
    return [(offs[i][0], offs[min(i + size, len(offs)) - 1][1]) for i in range(0, len(offs), size)]


# ---- systems ---------------------------------------------------------------------------------------
class FlatIndex:
    """Top-k units by cosine over (doc, spans, vector) rows, restricted to a query's scope."""

    def __init__(self, rows: list[tuple[str, list[tuple[int, int]]]], vecs: np.ndarray):
        self.rows, self.vecs = rows, vecs
        names = sorted({r[0] for r in rows})
        self.doc_index = {d: i for i, d in enumerate(names)}
        self.doc = np.array([self.doc_index[r[0]] for r in rows])

    def search(self, q: np.ndarray, scope: set[str] | None, k: int) -> list[Unit]:
        s = self.vecs @ q
        if scope is not None and len(scope) < len(self.doc_index):
            mask = np.zeros(len(self.doc_index), dtype=bool)
            mask[[self.doc_index[d] for d in scope if d in self.doc_index]] = True
            s = np.where(mask[self.doc], s, -np.inf)
        top = np.argsort(-s, kind="stable")[:k]
        return [Unit.of(self.rows[i][0], self.rows[i][1]) for i in top if np.isfinite(s[i])]


def node_units_of(tree: Tree) -> np.ndarray:
    return tree.vectors / np.maximum(np.linalg.norm(tree.vectors, axis=1, keepdims=True), 1e-12)


def fit_token_alpha(maps: list[np.ndarray], positives: list[list[int]], steps: int = 150, lr: float = 0.05,
                    seed: int = 13) -> np.ndarray:
    """Layer x head weights for the token-level variant, fitted with L_attn alone (co-relevant
    chunks' mutual attention share); returns the softmax weights."""
    torch.manual_seed(seed)
    alpha = torch.zeros(maps[0].shape[0], requires_grad=True)
    opt = torch.optim.Adam([alpha], lr=lr)
    tm = [torch.from_numpy(m.astype(np.float32)) for m in maps]
    for _ in range(steps):
        loss = 0.0
        for m, pos in zip(tm, positives):
            a = torch.einsum("k,kij->ij", alpha.softmax(0), m)
            mm = (a + a.T) / 2 * (1 - torch.eye(len(a)))
            p = torch.zeros(len(a))
            p[pos] = 1
            rows = mm[pos]
            loss = loss - (torch.log((rows * p).sum(1) + 1e-9) - torch.log(rows.sum(1) + 1e-9)).mean()
        opt.zero_grad()
        (loss / len(tm)).backward()
        opt.step()
    return alpha.detach().softmax(0).numpy()


def token_maps(texts: list[str], cache: Path) -> np.ndarray:
    """MiniLM token attention of one document's chunks, per head, cached on disk (float16)."""
    key = hashlib.sha1("\x00".join(texts).encode()).hexdigest()
    path = cache / "token_attn" / f"{key}.npy"
    if path.exists():
        return np.load(path).astype(np.float32)
    maps = token_chunk_attention(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, maps.astype(np.float16))
    return maps


# ---- main ----------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/vectree-bench-cache/sprout"))
    ap.add_argument("--model", type=Path, default=None, help="a trained model folder (default: train here)")
    ap.add_argument("--hotpot-split", default="test", choices=["test", "dev"])
    ap.add_argument("--limit", type=int, default=None, help="at most N queries per benchmark")
    ap.add_argument("--skip-token", action="store_true", help="leave out the token-level variant (slow)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="write every number as JSON here")
    ap.add_argument("--save-model", type=Path, default=None, help="save the model trained here (reuse with --model)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from vectree.retrieval.threads import limit_blas_threads

    limit_blas_threads()  # as the query service does (retrieval/threads.py)
    cache = args.cache
    cache.mkdir(parents=True, exist_ok=True)
    emb_cache = cache / "embeddings"
    report: dict = {"config": vars(args) | {"data": str(args.data), "cache": str(cache),
                                            "model": str(args.model) if args.model else None,
                                            "out": str(args.out) if args.out else None,
                                            "save_model": str(args.save_model) if args.save_model else None}}

    # 1. the model ------------------------------------------------------------------------
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.sprout.data import build_training_set
    from vectree.retrieval.sprout.model import load_model
    from vectree.retrieval.sprout.train import TrainConfig, train

    embedder = get_embedder()
    training = {}
    if args.model:
        model = load_model(args.model)
        tr = model.config.training
        training = {"seconds": tr.get("seconds"), "peak_rss_mb": tr.get("peak_rss_mb"), "source": "model config"}
    else:
        log("training set (MiniLM embeddings cached)")
        ts = build_training_set(args.data, cache_dir=emb_cache)
        log("training")
        with PeakRSS() as mem:
            t0 = time.perf_counter()
            result = train(ts.split("train"), ts.split("dev"), TrainConfig(threads=args.threads), log=log)
            seconds = time.perf_counter() - t0
        model = result.model
        model.config.model_id = "bench"
        if args.save_model:
            from vectree.retrieval.sprout.model import save_model

            save_model(model, args.save_model)
        training = {"seconds": round(seconds, 1), "peak_rss_mb": round(mem.peak, 1),
                    "rss_before_mb": round(mem.start, 1), "source": "this run"}
    tr = model.config.training
    report["training"] = {**training, "best_epoch": tr.get("best_epoch"), "best_rerank_epoch": tr.get("best_rerank_epoch"),
                          "dev_before": tr.get("dev_before"), "dev_best": tr.get("dev_best"),
                          "alpha_before": tr.get("alpha_before"), "alpha_after": tr.get("alpha_after"),
                          "tau_before": tr.get("tau_before"), "tau_after": tr.get("tau_after"),
                          "parameters": model.n_parameters(),
                          "losses": [{k: h.get(k) for k in ("stage", "epoch", "fold", "loss", "l_leaf", "l_node",
                                                            "l_attn", "l_rerank", "l_tau")} for h in tr.get("history", [])
                                     if "loss" in h]}
    params = model.search_params()
    scorer = model.scorer_fn()

    # 2. data, embeddings ----------------------------------------------------------------------
    log("loading benchmarks")
    benches = load_benchmarks(args.data, cache, args.hotpot_split, args.limit)
    tok = embedder.model.tokenizer
    token_alpha = None
    if not args.skip_token:
        log("token-level variant: fitting alpha on HotpotQA train documents")
        from vectree.retrieval.sprout.data import hotpotqa_docs

        train_docs = [d for d in hotpotqa_docs(args.data) if d.split == "train"]
        train_docs = sorted(train_docs, key=lambda d: hashlib.sha256(d.key.encode()).hexdigest())[:40]
        maps, pos = [], []
        for d in train_docs:
            maps.append(token_maps(d.chunks, cache))
            pos.append(d.queries[0].positives)
        token_alpha = fit_token_alpha(maps, pos)
        report["token_alpha_top"] = sorted(((float(w), int(i)) for i, w in enumerate(token_alpha)), reverse=True)[:5]

    results: dict = {}
    for name, (bench, docs) in benches.items():
        queries = bench.queries[: args.limit] if args.limit else bench.queries
        used = sorted({d for q in queries for d in q.doc_ids}) if args.limit else sorted(docs)
        log(f"{name}: {len(queries)} queries, {len(used)} documents: embedding")
        chunk_rows, chunk_texts = [], []
        for d in used:
            for c in docs[d].chunks:
                chunk_rows.append((d, [(c.start, c.end)]))
                chunk_texts.append(c.text)
        x_all = embed_texts(chunk_texts, cache_dir=emb_cache)
        offsets, i = {}, 0
        for d in used:
            offsets[d] = (i, i + len(docs[d].chunks))
            i += len(docs[d].chunks)
        flat = FlatIndex(chunk_rows, x_all)
        fixed = {}
        for size in (128, 256):
            rows = [(d, [s]) for d in used for s in window_spans(docs[d].text, size, tok)]
            fixed[size] = FlatIndex(rows, embed_texts([docs[d].text[a:b] for d, ((a, b),) in rows], cache_dir=emb_cache))
        prow = [(d, [s]) for d in used for s in docs[d].paragraph_spans]
        paras = FlatIndex(prow, embed_texts([docs[d].text[a:b] for d, ((a, b),) in prow], cache_dir=emb_cache))
        xq = embed_texts([q.text for q in queries], cache_dir=emb_cache, queries=True)
        qv = model.search_query(xq)  # what the product's search compares node vectors with

        log(f"{name}: trees")
        trees: dict[str, dict[str, Tree]] = {s: {} for s in ("sprout", "uniform-alpha", "emb-tree", "token-tree")}
        build_seconds = []
        for d in used:
            a, b = offsets[d]
            x = x_all[a:b]
            doc = docs[d]
            t0 = time.perf_counter()
            texts = [c.text for c in doc.chunks]
            encode = lambda t: embed_texts(t, cache_dir=emb_cache)  # noqa: E731
            weights = np.asarray(doc.weights, float)
            # as the product builds them (SproutModel.document_tree): contextual vectors, the
            # model's text nodes, paragraph groups and the chunks' words for the lexical features
            built = model.document_tree(x, doc.para, weights, texts=texts, encode=encode)
            trees["sprout"][d] = built.tree
            build_seconds.append((len(x), time.perf_counter() - t0))
            trees["uniform-alpha"][d] = model.document_tree(x, doc.para, weights, uniform_alpha=True,
                                                            texts=texts, encode=encode).tree
            h, _ = model.contextualise(x, doc.para)

            def same_rest(tree):  # an ablation changes the merge order only
                tree = with_text_vectors(tree, x, texts, encode, model.config.text_node_chunks)
                tree.groups = np.asarray(doc.para, dtype=np.int64)
                return model.attach_terms(tree, texts)

            trees["emb-tree"][d] = same_rest(build_tree(mutual_attention(x @ x.T), h, weights))
            if token_alpha is not None:
                tm = token_maps(texts, cache)
                att_t = np.einsum("k,kij->ij", token_alpha, tm)
                trees["token-tree"][d] = same_rest(build_tree(mutual_attention(att_t), h, weights))
        units_cache = {s: {d: node_units_of(t) for d, t in ts_.items()} for s, ts_ in trees.items()}

        def sprout_units(system: str, qi: int, q, **over) -> list[Unit]:
            scope = list(q.doc_ids)
            ts_ = [trees[system][d] for d in scope]
            p = model.search_params(**over) if over else params
            hits = model.search(ts_, qv[qi], max(KS), params=p, node_units=[units_cache[system][d] for d in scope],
                                scorer=scorer, query_text=q.text)
            return [Unit.of(scope[h.doc], [(docs[scope[h.doc]].chunks[c].start, docs[scope[h.doc]].chunks[c].end)
                                           for c in ts_[h.doc].leaves(h.node)]) for h in hits]

        systems = {
            "sprout": lambda qi, q: sprout_units("sprout", qi, q),
            "sprout-always-k": lambda qi, q: sprout_units("sprout", qi, q, tau=-np.inf),
            "leaf-only": lambda qi, q: sprout_units("sprout", qi, q, leaves_only=True),
            "uniform-alpha": lambda qi, q: sprout_units("uniform-alpha", qi, q),
            "emb-tree": lambda qi, q: sprout_units("emb-tree", qi, q),
            "flat": lambda qi, q: flat.search(xq[qi], set(q.doc_ids), max(KS)),
            "fixed-128": lambda qi, q: fixed[128].search(xq[qi], set(q.doc_ids), max(KS)),
            "fixed-256": lambda qi, q: fixed[256].search(xq[qi], set(q.doc_ids), max(KS)),
            "paragraphs": lambda qi, q: paras.search(xq[qi], set(q.doc_ids), max(KS)),
        }
        if token_alpha is not None:
            systems["token-tree"] = lambda qi, q: sprout_units("token-tree", qi, q)
        scorer_s = SentenceScorer({d: docs[d].text for d in used}, KS)
        res = {}
        for sys_name, fn in systems.items():
            per_q, no_gold_sent, n_units = [], [], []
            t0 = time.perf_counter()
            for qi, q in enumerate(queries):
                units = fn(qi, q)
                n_units.append(len(units))
                if q.gold:
                    per_q.append(scorer_s.score(units, q.gold))
                else:
                    per_q.append(None)
                    no_gold_sent.append(sum(scorer_s.sentence_count(u) for u in units[:1]))
            agg = aggregate(per_q)
            agg["units_returned"] = float(np.mean(n_units))
            agg["no_gold_sentences_at_1"] = float(np.mean(no_gold_sent)) if no_gold_sent else None
            agg["seconds"] = round(time.perf_counter() - t0, 2)
            res[sys_name] = agg
            log(f"{name} {sys_name}: " + " ".join(f"ie@{k} {agg[f'ie@{k}']:.3f}" for k in KS))
        # latency: MiniLM query encoding + adapter + search, per query
        lat = {"sprout": [], "flat": []}
        for qi, q in enumerate(queries[:60]):
            t0 = time.perf_counter()
            v = model.search_query(embedder.encode_query(q.text)[None])[0]
            scope = list(q.doc_ids)
            model.search([trees["sprout"][d] for d in scope], v, max(KS), params=params,
                         node_units=[units_cache["sprout"][d] for d in scope], scorer=scorer, query_text=q.text)
            lat["sprout"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            flat.search(embedder.encode_query(q.text), set(q.doc_ids), max(KS))
            lat["flat"].append(time.perf_counter() - t0)
        res["_latency_ms"] = {s: {"p50": round(1000 * float(np.percentile(v, 50)), 1),
                                  "p95": round(1000 * float(np.percentile(v, 95)), 1)} for s, v in lat.items()}
        res["_n_queries"] = len(queries)
        res["_n_docs"] = len(used)
        res["_chunks_per_doc"] = round(float(np.mean([len(docs[d].chunks) for d in used])), 1)
        res["_tree_seconds_per_doc"] = round(float(np.mean([s for _, s in build_seconds])), 4)
        results[name] = res
    report["results"] = results

    # 3. tree build time against document length ------------------------------------------------
    log("tree build scaling")
    bench, docs = benches["dragonball"]
    pool_x = embed_texts([c.text for d in sorted(docs) for c in docs[d].chunks], cache_dir=emb_cache)
    pool_p = np.concatenate([np.array(docs[d].para) + 1000 * i for i, d in enumerate(sorted(docs))])
    scaling = []
    for n in (100, 200, 400, 800, 1600):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            h, att = model.contextualise(pool_x[:n], pool_p[:n])
            build_tree(mutual_attention(att), h)
            times.append(time.perf_counter() - t0)
        scaling.append((n, float(np.median(times))))
    ns, ts_ = np.log([s[0] for s in scaling]), np.log([s[1] for s in scaling])
    exponent = float(np.polyfit(ns[1:], ts_[1:], 1)[0])
    report["tree_build"] = {"points": scaling, "exponent": round(exponent, 2)}

    print_report(report)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=float))


def print_report(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    results = report["results"]
    for name, res in results.items():
        table = Table(title=f"{name}: IE@k (n={res['_n_queries']} queries, {res['_n_docs']} documents, "
                            f"{res['_chunks_per_doc']} chunks/doc)")
        table.add_column("system")
        for k in KS:
            table.add_column(f"IE@{k}", justify="right")
        for k in KS:
            table.add_column(f"R@{k}/P@{k}", justify="right")
        table.add_column("units", justify="right")
        systems = [s for s in res if not s.startswith("_")]
        for s in systems:
            m = res[s]
            table.add_row(s, *[f"{m[f'ie@{k}']:.3f}" for k in KS],
                          *[f"{m[f'recall@{k}']:.2f}/{m[f'precision@{k}']:.2f}" for k in KS], f"{m['units_returned']:.1f}")
        con.print(table)
        for pool, label in ((LISTED, "the issue's baselines"), (LISTED + ["paragraphs"], "also paragraphs")):
            others = [s for s in pool if s in res]
            ratios = []
            for k in KS:
                best = max(others, key=lambda s: res[s][f"ie@{k}"])
                ratios.append(f"k={k}: {res['sprout'][f'ie@{k}'] / max(res[best][f'ie@{k}'], 1e-9):.2f}x vs {best}")
            con.print(f"  sprout / strongest ({label}): " + "; ".join(ratios))
        lat = res["_latency_ms"]
        con.print(f"  latency per query (MiniLM encode included): sprout p50 {lat['sprout']['p50']} ms, "
                  f"p95 {lat['sprout']['p95']} ms; flat p50 {lat['flat']['p50']} ms")
        ng = res["sprout"].get("no_gold_sentences_at_1")
        if ng is not None:
            con.print(f"  queries without gold ({res['sprout']['n_without_gold']}): sentences in the top unit: "
                      + ", ".join(f"{s} {res[s]['no_gold_sentences_at_1']:.1f}" for s in systems))
    tb = report["tree_build"]
    con.print("tree build (encoder + single linkage) vs chunks: "
              + ", ".join(f"n={n}: {t * 1000:.0f} ms" for n, t in tb["points"]) + f"; fitted exponent {tb['exponent']}")
    t = report["training"]
    con.print(f"training: {t.get('seconds')} s, peak RSS {t.get('peak_rss_mb')} MB ({t.get('source')}), "
              f"{t['parameters']:,} parameters; dev IE {t['dev_before'].get('mean_ie')} (untrained) -> "
              f"{t['dev_best'].get('mean_ie')}; tau {t['tau_before']} -> {t['tau_after']:.3f}")
    a0, a1 = np.array(t["alpha_before"]), np.array(t["alpha_after"])
    con.print(f"alpha (layer x head): {a0.round(3).tolist()} -> {a1.round(3).tolist()}")


if __name__ == "__main__":
    main()
