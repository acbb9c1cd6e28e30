"""Run systems on a benchmark, side by side on the same questions, and score them.

:func:`run_benchmark` is the library behind ``vectree eval``: it checks the folder's layout,
loads the benchmark (first ``limit`` questions in file order; corpora stay whole), builds the
corpus once, and for each system prepares it (indexing) and asks every question, timing each
one.  It returns one result object per system -- the ``results.json`` contract::

    {"benchmark", "system", "n", "metrics": {...}, "per_item": [...], "config": {...},
     "data_sha256": {...}, "seconds", "status": "ok" | "not_run" | "failed", "notes": [...]}

``metrics`` keys are stable snake_case names (:data:`METRIC_KEYS` lists the canonical order); a
metric that was not measured is absent, never 0.  ``config`` holds everything that decides the
numbers (seed, limit, cutoffs, embedder, token rule, the system's own settings) and nothing that
varies between identical runs, so the same command twice gives the same ``config`` and the same
retrieval metrics; wall-clock figures live in ``seconds``, the latency metrics and ``timing``.

Metrics by task (per-question values are in ``per_item``):

Latency is the wall time of the system's call for one question, query encoding included, minus
the time of the harness's shared extractive reader (baselines' answers; it stands in for an LLM
reader and is recorded apart as ``reader_ms``); the agent answers by itself, so its latency is
the whole episode.

* paper QA (``qasper_pdf``, ``qasper``, ``dragonball_qa``, ``dragonball_multi``):
  ``evidence_page_precision`` / ``_recall`` averaged over the questions with evidence pages
  (``n_with_evidence``; a question asked of the whole corpus, ``paper_id`` empty, is scored on
  ``(paper, page)`` pairs and also gets ``evidence_paper_precision`` / ``_recall`` against its
  gold papers),
  ``answer_f1`` (QASPER's) over all questions, ``tokens_layer0/1/2`` (mean per question; a layer
  the system never returns is absent) and ``tokens_total``, ``seconds_per_question``,
  ``latency_p50_ms`` / ``_p95_ms``.  Abstention: a question is *unanswerable* when every
  reference answer says so (QASPER's "Unanswerable", DragonBall's unsolvable queries); a system
  *abstains* when it says the paper holds no answer (the agent's ``abstained``).  An abstention
  is scored as the prediction "Unanswerable", as QASPER's own evaluator expects of a no-answer.
  ``abstention_precision`` (unanswerable among the abstentions) and ``abstention_recall``
  (abstentions among the unanswerable) are reported when the run has an abstention or an
  unanswerable question (``n_abstained``, ``n_unanswerable``); a system that never abstains has
  recall 0 and no precision;
* routing (``pubmedqa``): ``recall@1``, ``recall@5``, ``recall@10``, ``mrr`` (over the top 100);
* sentences (``dragonball``, ``hotpotqa``): ``recall@k``, ``precision@k``, ``ie@k`` for k in
  1, 3, 5 over the queries with gold (``n_without_gold`` counts the others);
* synthesis (``scholarqa_multi``): ``evidence_paper_precision`` / ``_recall`` (the first
  ``k_papers`` distinct papers against the papers the expert answer cites), ``answer_cosine``
  (MiniLM) and ``answer_rouge_l`` against the expert answer;
* with an LLM endpoint configured (``OPENAI_BASE_URL``): ``llm_judge_correctness`` (paper QA),
  ``answer_accuracy`` (PubMedQA yes/no/maybe), ``answer_composite`` (synthesis: 0.75 x
  factuality F1 + 0.25 x scaled cosine); without one they are absent and ``notes`` says so.
"""

from __future__ import annotations

import random
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from vectree.retrieval.config import load_settings
from vectree.retrieval.pdf import parse_pdf
from vectree.retrieval.rerank.calibrate import RIGHT_F1, ece
from vectree.retrieval.threads import limit_blas_threads

from . import metrics as M
from .embedcache import cached_embedder
from .layouts import LayoutError, data_hashes, validate_layout
from .llm_judge import Judge
from .loaders import PAPER_QA, ROUTING, SENTENCES, SYNTHESIS, load_benchmark, questions_of, task_of
from .sentences import Unit, covered_sentences, score_units
from .systems import NotApplicable, make_system
from .systems.base import Doc, NotAvailable, RunContext, join_pages, tokens_of

HARNESS_VERSION = 1
TOKEN_RULE = "vectree.agent.tokens.count_tokens: ceil(len(text) / 4)"
SENTENCE_KS = (1, 3, 5)
ANSWER_CHARS = 600  # answers kept in per_item (the metrics use the whole answer)

METRIC_KEYS = (
    "evidence_page_precision", "evidence_page_recall", "answer_f1", "abstention_precision", "abstention_recall",
    "answer_right_rate", "confidence_mean", "confidence_ece", "llm_judge_correctness",
    "recall@1", "recall@5", "recall@10", "mrr", "answer_accuracy",
    "ie@1", "ie@3", "ie@5", "recall@3", "precision@1", "precision@3", "precision@5",
    "evidence_paper_precision", "evidence_paper_recall", "answer_cosine", "answer_rouge_l", "answer_composite",
    "tokens_layer0", "tokens_layer1", "tokens_layer2", "tokens_total",
    "seconds_per_question", "latency_p50_ms", "latency_p95_ms",
)
LOWER_IS_BETTER = {"confidence_ece", "tokens_layer0", "tokens_layer1", "tokens_layer2", "tokens_total", "seconds_per_question",
                   "latency_p50_ms", "latency_p95_ms"}
LLM_METRICS = {PAPER_QA: "llm_judge_correctness", ROUTING: "answer_accuracy", SYNTHESIS: "answer_composite"}

Progress = Callable[[str, int, int], None]  # (system, done, total)


# ---- corpus ---------------------------------------------------------------------------------
def corpus_docs(bench) -> list[Doc]:
    """The benchmark's corpus as :class:`Doc` objects (PDFs parsed with :func:`vectree.retrieval.pdf.parse_pdf`)."""
    task = task_of(bench)
    if task == PAPER_QA:
        docs = []
        for pid, src in bench.papers.items():
            parsed = parse_pdf(src.pdf)
            if parsed.status != "ok":
                raise LayoutError(f"{src.pdf} cannot be read as a text PDF ({parsed.status}: {parsed.error})")
            text, starts = join_pages([p["text"] for p in parsed.pages])
            docs.append(Doc(pid, text, parsed.title or src.title, starts))
        return docs
    if task == ROUTING:
        return [Doc(d.doc_id, d.text, d.title) for d in bench.documents.values()]
    if task == SENTENCES:
        return [Doc(d.doc_id, d.text, d.title) for d in bench.documents.values()]
    return [Doc(p.doc_id, f"{p.title}\n{p.text}" if p.title else p.text, p.title) for p in bench.papers.values()]


# ---- scoring per task -------------------------------------------------------------------
def _tokens_item(tokens: dict[int, int]) -> dict[str, int]:
    out = {f"tokens_layer{layer}": int(v) for layer, v in sorted(tokens.items()) if layer in (0, 1, 2)}
    out["tokens_total"] = int(sum(tokens.values()))
    return out


def _timed(ctx, call):
    """``(result, seconds, reader_seconds)``: the wall time of one system call without the time
    the shared extractive reader spent in it (the reader stands in for an LLM, it is no part of
    the retriever being measured)."""
    before = ctx.reader.seconds if ctx is not None and ctx._reader is not None else 0.0
    t = time.perf_counter()
    result = call()
    wall = time.perf_counter() - t
    after = ctx.reader.seconds if ctx is not None and ctx._reader is not None else 0.0
    return result, wall - (after - before), after - before


UNANSWERABLE = "Unanswerable"  # QASPER's reference (and expected prediction) for a no-answer


def _score_paper_qa(system, bench, docs, q, ctx=None) -> dict[str, Any]:
    corpus = not q.paper_id  # asked of the whole corpus: pages are (paper, page) pairs
    if corpus:
        ans, seconds, reader = _timed(ctx, lambda: system.answer_corpus(q))
    else:
        ans, seconds, reader = _timed(ctx, lambda: system.answer_paper(q, docs[q.paper_id]))
    p, r = M.evidence_page_scores(ans.pages, q.evidence_pages)
    abstained = bool((ans.extra or {}).get("abstained"))
    # the agent's abstention is a sentence for a person ("The corpus holds no good evidence ..."):
    # scored as the answer it stands for
    predicted = UNANSWERABLE if abstained else ans.answer
    item = {"question_id": q.question_id, "paper_id": q.paper_id, "answer": ans.answer[:ANSWER_CHARS],
            "cited_pages": list(ans.pages), "gold_pages": list(q.evidence_pages), "has_evidence": q.has_evidence,
            "evidence_page_precision": p, "evidence_page_recall": r,
            "answer_f1": M.max_answer_f1(predicted, [ref.answer for ref in q.references]) if q.references else None,
            "abstained": abstained, "unanswerable": q.unanswerable,
            **_tokens_item(ans.tokens), "latency_ms": round(1000 * seconds, 3)}
    if (ans.extra or {}).get("confidence") is not None:
        item["confidence"] = float(ans.extra["confidence"])
    if corpus:
        cited = sorted({d for d, _ in ans.pages})
        gold = list(q.meta.get("gold_docs") or [])
        item.update(cited_papers=cited, gold_papers=gold)
        if q.has_evidence:  # which reports: a question with nothing to find has no papers to score
            item["evidence_paper_precision"], item["evidence_paper_recall"] = M.set_precision_recall(cited, gold)
    if reader:
        item["reader_ms"] = 1000 * reader
    if ans.trace:
        item["trace"] = ans.trace
    return item


def _score_routing(system, bench, docs, q) -> dict[str, Any]:
    t = time.perf_counter()
    ranking = system.rank_documents(q)
    seconds = time.perf_counter() - t
    rank = M.rank_of(ranking.doc_ids, q.gold_doc_id)
    return {"question_id": q.question_id, "gold": q.gold_doc_id, "rank": rank, "top": ranking.doc_ids[:10],
            **{f"recall@{k}": M.recall_at_k(rank, k) for k in (1, 5, 10)}, "mrr": M.reciprocal_rank(rank),
            **_tokens_item(ranking.tokens), "latency_ms": round(1000 * seconds, 3)}


def _score_sentences(system, bench, docs, q, scorer_sentences) -> dict[str, Any]:
    t = time.perf_counter()
    hits = system.retrieve_units(q, q.doc_ids)
    seconds = time.perf_counter() - t
    units = [Unit.of(h.doc_id, h.spans) for h in hits]
    item: dict[str, Any] = {"question_id": q.query_id, "source": q.source, "kind": q.kind, "n_gold": len(q.gold),
                            "n_units": len(units),
                            "sentences_returned": [len(covered_sentences(scorer_sentences[u.doc_id], u.spans))
                                                   for u in units[:max(SENTENCE_KS)]],
                            **_tokens_item(tokens_of(hits[:max(SENTENCE_KS)])), "latency_ms": round(1000 * seconds, 3)}
    if q.gold:
        item.update(score_units(units, q.gold, scorer_sentences, SENTENCE_KS))
    return item


def _score_synthesis(system, bench, docs, q, ctx) -> dict[str, Any]:
    ans, seconds, reader = _timed(ctx, lambda: system.synthesize(q))
    p, r = M.set_precision_recall(ans.doc_ids, q.gold_doc_ids)
    emb = ctx.embedder
    vecs = emb.encode_documents([ans.answer, q.expert_answer]) if ans.answer else None
    return {"question_id": q.question_id, "cited_papers": list(ans.doc_ids), "gold_papers": list(q.gold_doc_ids),
            "evidence_paper_precision": p, "evidence_paper_recall": r,
            "answer_cosine": M.cosine(vecs[0], vecs[1]) if vecs is not None else 0.0,
            "answer_rouge_l": M.rouge_l(ans.answer, q.expert_answer), "answer": ans.answer[:ANSWER_CHARS],
            **_tokens_item(ans.tokens), "latency_ms": round(1000 * seconds, 3), "reader_ms": 1000 * reader}


def aggregate(task: str, items: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Benchmark metrics from per-question records (see the module doc for what averages over what)."""
    out: dict[str, float] = {}

    def put(key, values):
        m = M.mean(values)
        if m is not None:
            out[key] = m

    if task == PAPER_QA:
        with_ev = [i for i in items if i["has_evidence"]]
        put("evidence_page_precision", [i["evidence_page_precision"] for i in with_ev])
        put("evidence_page_recall", [i["evidence_page_recall"] for i in with_ev])
        put("evidence_paper_precision", [i.get("evidence_paper_precision") for i in with_ev])
        put("evidence_paper_recall", [i.get("evidence_paper_recall") for i in with_ev])
        put("answer_f1", [i.get("answer_f1") for i in items])
        out["n_with_evidence"] = len(with_ev)
        abstained = [i for i in items if i.get("abstained")]
        unanswerable = [i for i in items if i.get("unanswerable")]
        if abstained or unanswerable:
            out["n_abstained"], out["n_unanswerable"] = len(abstained), len(unanswerable)
            put("abstention_precision", [float(bool(i.get("unanswerable"))) for i in abstained])
            put("abstention_recall", [float(bool(i.get("abstained"))) for i in unanswerable])
        # how well the answers' confidence is calibrated here (answered questions; right = token
        # F1 >= 0.5, the rule it was fitted with on dev questions): measured, never fitted on these
        judged = [i for i in items if i.get("confidence") is not None and not i.get("abstained")
                  and i.get("answer_f1") is not None]
        if judged:
            probs = np.array([i["confidence"] for i in judged], float)
            right = np.array([float(i["answer_f1"] >= RIGHT_F1) for i in judged])
            out["confidence_mean"], out["answer_right_rate"] = float(probs.mean()), float(right.mean())
            out["confidence_ece"] = ece(probs, right)[0]
    elif task == ROUTING:
        for key in ("recall@1", "recall@5", "recall@10", "mrr"):
            put(key, [i[key] for i in items])
    elif task == SENTENCES:
        scored = [i for i in items if i["n_gold"]]
        for k in SENTENCE_KS:
            for name in ("recall", "precision", "ie"):
                put(f"{name}@{k}", [i.get(f"{name}@{k}") for i in scored])
        out["n_without_gold"] = len(items) - len(scored)
    elif task == SYNTHESIS:
        for key in ("evidence_paper_precision", "evidence_paper_recall", "answer_cosine", "answer_rouge_l"):
            put(key, [i[key] for i in items])
    for key in LLM_METRICS.values():
        put(key, [i.get(key) for i in items])
    for layer in (0, 1, 2):
        key = f"tokens_layer{layer}"
        if any(key in i for i in items):
            put(key, [i.get(key, 0) for i in items])
    put("tokens_total", [i.get("tokens_total") for i in items])
    lat = [i["latency_ms"] / 1000 for i in items if "latency_ms" in i]
    if lat:
        out["seconds_per_question"] = float(np.mean(lat))
        out.update(M.latency_metrics(lat))
    return out


# ---- the run ----------------------------------------------------------------------------------
def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    try:
        import torch  # why local: torch costs ~5 s to import; `vectree eval` loads it only to run

        torch.manual_seed(seed)
    except ImportError:  # pragma: no cover
        pass


def _record(benchmark, system, n, metrics, per_item, config, hashes, seconds, status, notes, timing=None):
    rec = {"benchmark": benchmark, "system": system, "n": n, "metrics": metrics, "per_item": per_item,
           "config": config, "data_sha256": hashes, "seconds": round(seconds, 3), "status": status, "notes": notes}
    if timing:
        rec["timing"] = timing
    return rec


def run_benchmark(benchmark: str, data_dir: str | Path, systems: Sequence[str], *, limit: int | None = None,
                  seed: int = 0, work_dir: str | Path | None = None, progress: Progress | None = None,
                  ctx_overrides: dict[str, Any] | None = None, settings=None) -> list[dict[str, Any]]:
    """Evaluate ``systems`` on ``benchmark`` read from ``data_dir``; returns the results list.

    Raises :class:`LayoutError` when the folder does not match the layout.  A system that does
    not apply to the task or cannot run here is recorded with ``status: not_run`` and the
    reason; one that crashes is recorded with ``status: failed`` and the error, and the other
    systems still run.  ``settings``: the caller's settings object (default: the environment's),
    built once here and passed down.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    from vectree.retrieval.config import load_settings
    from vectree.retrieval.threads import limit_blas_threads

    settings = settings or load_settings()
    limit_blas_threads(settings.blas_threads)  # latency as the service measures it (retrieval/threads.py)
    data_dir = Path(data_dir)
    files = validate_layout(benchmark, data_dir)
    hashes = data_hashes({rel: p for rel, p in files.items()})
    own_tmp = None
    if work_dir is None:
        own_tmp = tempfile.TemporaryDirectory(prefix=f"vectree-eval-{benchmark}-")
        work_dir = own_tmp.name
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        return _run(benchmark, data_dir, list(systems), limit, seed, work_dir, hashes, progress, ctx_overrides or {},
                    settings)
    finally:
        if own_tmp is not None:
            own_tmp.cleanup()


def eval_threads(settings=None) -> int:
    """Torch threads for a run: the ``eval_threads`` setting (``$VECTREE_EVAL_THREADS``, a
    positive integer, validated by the settings), default 1.  On a shared machine two
    intra-op threads that have to wait for a busy core make every MiniLM call 5-25x slower
    (measured here: 28 ms per query with one thread, 150-700 ms with two), so one thread gives
    latencies that mean something."""
    from vectree.retrieval.config import load_settings

    return (settings or load_settings()).eval_threads


def _run(benchmark, data_dir, systems, limit, seed, work_dir, hashes, progress, ctx_overrides, settings):
    import torch  # why local: torch costs ~5 s to import; importing the runner should not

    threads = eval_threads(settings)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _run_threads(benchmark, data_dir, systems, limit, seed, work_dir, hashes, progress, ctx_overrides,
                            threads, settings)
    finally:
        torch.set_num_threads(before)


def _run_threads(benchmark, data_dir, systems, limit, seed, work_dir, hashes, progress, ctx_overrides, threads,
                 settings):
    from .embedcache import cached_embedder

    bench = load_benchmark(benchmark, data_dir, work_dir=work_dir, limit=limit)
    task = task_of(bench)
    questions = questions_of(bench)
    docs = corpus_docs(bench)
    docs_by_id = {d.doc_id: d for d in docs}
    embedder = cached_embedder(settings.embed_model, directory=settings.eval_cache)
    ctx = RunContext(seed=seed, work_dir=work_dir, data_dir=data_dir, _embedder=embedder, docs=docs, **ctx_overrides)
    embedder.encode_query("warm up the encoder before anything is timed")
    llm_note = None
    if task in LLM_METRICS and not settings.llm_configured:
        llm_note = (f"{LLM_METRICS[task]} not run: no LLM endpoint configured (set OPENAI_BASE_URL); "
                    "it is never estimated")
    base_config = {"harness_version": HARNESS_VERSION, "benchmark": benchmark, "task": task, "seed": seed,
                   "limit": limit, "n_questions": len(questions), "n_documents": len(docs),
                   "embedder": embedder.info.name, "token_rule": TOKEN_RULE,
                   "k": {PAPER_QA: {"units": ctx.k_paper}, ROUTING: {"depth": ctx.k_routing},
                         SENTENCES: {"ks": list(SENTENCE_KS)},
                         SYNTHESIS: {"papers": ctx.k_papers, "answer_words": ctx.answer_words}}[task],
                   "llm": settings.llm_model if settings.llm_configured else None, "torch_threads": threads}
    scorer_sentences = bench.sentences() if task == SENTENCES else None
    judge = None
    if settings.llm_configured and task in LLM_METRICS:
        judge = Judge.from_settings(settings, ctx.embedder)

    results = []
    for name in systems:
        started = time.perf_counter()
        notes = list(getattr(bench, "notes", []) or [])
        try:
            system = make_system(name, task)
        except NotApplicable as exc:
            results.append(_record(benchmark, name, 0, {}, [], {**base_config, "system": {}}, hashes, 0.0,
                                   "not_run", notes + [str(exc)]))
            continue
        reason = system.unavailable()
        if reason:
            results.append(_record(benchmark, name, 0, {}, [], {**base_config, "system": system.config()}, hashes,
                                   time.perf_counter() - started, "not_run", notes + [f"not run: {reason}"]))
            continue
        _seed_everything(seed)
        items: list[dict[str, Any]] = []
        timing: dict[str, float] = {}
        try:
            t = time.perf_counter()
            system.prepare(bench, ctx, docs)
            timing["prepare_seconds"] = round(time.perf_counter() - t, 3)
            if progress:
                progress(name, 0, len(questions))
            for i, q in enumerate(questions, 1):
                if task == PAPER_QA:
                    item = _score_paper_qa(system, bench, docs_by_id, q, ctx)
                elif task == ROUTING:
                    item = _score_routing(system, bench, docs_by_id, q)
                elif task == SENTENCES:
                    item = _score_sentences(system, bench, docs_by_id, q, scorer_sentences)
                else:
                    item = _score_synthesis(system, bench, docs_by_id, q, ctx)
                if judge is not None:
                    judge.score_item(task, q, item, bench)
                items.append(item)
                if progress:
                    progress(name, i, len(questions))
        except NotAvailable as exc:
            results.append(_record(benchmark, name, 0, {}, [], {**base_config, "system": system.config()}, hashes,
                                   time.perf_counter() - started, "not_run", notes + [f"not run: {exc}"]))
            continue
        except Exception as exc:  # noqa: BLE001 - one broken system must not hide the others' results
            tb = traceback.format_exc(limit=6)
            results.append(_record(benchmark, name, len(items), {}, items, {**base_config, "system": system.config()},
                                   hashes, time.perf_counter() - started, "failed",
                                   notes + [f"failed: {type(exc).__name__}: {exc}", tb]))
            continue
        finally:
            system.close()
        if llm_note:
            notes.append(llm_note)
        notes += system.notes()
        results.append(_record(benchmark, name, len(items), aggregate(task, items), items,
                               {**base_config, "system": system.config()}, hashes, time.perf_counter() - started,
                               "ok", notes, timing))
    return results
