"""Every benchmark of ../shared/data, every system, side by side: the evaluation harness in full.

    .venv/bin/python benchmarks/bench_eval.py [--data ../shared/data] [--benchmark NAME ...]
        [--system NAME ...] [--limit N] [--seed 0] [--out docs/eval]

For each benchmark it runs the benchmark's standard systems (``vectree.evaluation.systems.DEFAULT_SYSTEMS``:
the method, its published baselines, and for the sentence benchmarks the SproutRAG ablations)
through :func:`vectree.evaluation.runner.run_benchmark` -- the same code as ``vectree eval`` -- writes
``<out>/results/<benchmark>.json``, then one report ``<out>/report.md`` with a table per
benchmark and the plots ``<out>/<benchmark>-{pr,latency,tokens}.png``, and prints the tables.
``--benchmark`` / ``--system`` restrict the run; results of benchmarks not re-run this time are
read back from ``<out>/results/`` so the report always covers every benchmark run so far.
Embeddings are cached under ``$VECTREE_EVAL_CACHE`` (default ``~/.cache/vectree-eval``), so a
second run only pays for queries.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from vectree.evaluation.layouts import BENCHMARKS, data_folder  # noqa: E402
from vectree.retrieval.config import load_settings  # noqa: E402
from vectree.evaluation.loaders import TASK_OF  # noqa: E402
from vectree.evaluation.report import benchmark_table, load_results, write_report  # noqa: E402
from vectree.evaluation.runner import aggregate, run_benchmark  # noqa: E402
from vectree.evaluation.systems import DEFAULT_SYSTEMS, REGISTRY  # noqa: E402

INTRO = """\
Every system answers the same questions with the same cutoffs and the same token rule; the
tables are produced by `benchmarks/bench_eval.py` (the code behind `vectree eval`).  Best value
of each column in bold (highest; lowest for tokens and latency).  A system that cannot run here
is listed under its table with the reason; a metric that was not measured is absent (–), never 0.
Machine: {cpus} CPU cores shared with other work, one torch thread (`VECTREE_EVAL_THREADS`),
no GPU, no LLM endpoint (so the LLM-judged metrics are not run).

Reproduce one table: `vectree eval BENCHMARK --data ../shared/data/BENCHMARK --system NAME ...
--out results.json --report report.md`; all of them: `.venv/bin/python benchmarks/bench_eval.py`.
`sprout` and its ablations need a trained model (`VECTREE_SPROUT_MODEL=<model folder>` or the
store's live model); `reranked-dense-rag` needs a local cross-encoder (`VECTREE_CROSS_ENCODER`).
The `hotpotqa-heldout` table repeats HotpotQA on the questions SproutRAG's training never saw.
"""


HELDOUT = "hotpotqa-heldout"


def hotpotqa_heldout(results: list[dict]) -> list[dict]:
    """HotpotQA again, on the questions SproutRAG never trained on nor selected with (the ``test``
    split of :func:`vectree.retrieval.sprout.data.hotpotqa_split`): the fair table for a learned retriever."""
    try:
        from vectree.retrieval.sprout.data import hotpotqa_split
    except ImportError:
        return []
    out = []
    for r in results:
        if r["status"] != "ok":
            out.append(dict(r, benchmark=HELDOUT))
            continue
        items = [i for i in r["per_item"] if hotpotqa_split(i["question_id"]) == "test"]
        config = dict(r["config"], n_questions=len(items))
        out.append(dict(r, benchmark=HELDOUT, n=len(items), metrics=aggregate("sentences", items), per_item=items,
                        config=config, notes=r["notes"] + [
                            "questions with vectree.retrieval.sprout.data.hotpotqa_split(id) == 'test' only: never used to "
                            "train or select the SproutRAG model"]))
    return out


DRAGONBALL_HELDOUT = "dragonball-heldout"


def dragonball_heldout(results: list[dict]) -> list[dict]:
    """DragonBall again, on the dev queries of :func:`vectree.retrieval.sprout.data.dragonball_split`:
    the queries a DragonBall-trained SproutRAG benchmark model never trained on (the fair table
    for it; the full table includes the queries it trained on)."""
    try:
        from vectree.retrieval.sprout.data import dragonball_split
    except ImportError:
        return []
    out = []
    for r in results:
        if r["status"] != "ok":
            out.append(dict(r, benchmark=DRAGONBALL_HELDOUT))
            continue
        items = [i for i in r["per_item"] if dragonball_split(i["question_id"]) == "dev"]
        config = dict(r["config"], n_questions=len(items))
        out.append(dict(r, benchmark=DRAGONBALL_HELDOUT, n=len(items), metrics=aggregate("sentences", items),
                        per_item=items, config=config, notes=r["notes"] + [
                            "queries with vectree.retrieval.sprout.data.dragonball_split(id) == 'dev' only: never "
                            "used to train a DragonBall benchmark model"]))
    return out


def publishable(results: list[dict]) -> str:
    """The results as committed under docs/: per-question answers (sentences taken from the
    benchmark's papers) are dropped -- the shared data's text never enters the repository --
    and the JSON is compact.  ``vectree eval --out`` keeps everything."""
    clean = []
    for r in results:
        items = [{k: (v[:5] if k == "top" else v) for k, v in i.items() if k not in ("answer", "llm_answer")}
                 for i in r["per_item"]]
        clean.append(dict(r, per_item=items))
    return json.dumps(clean, separators=(",", ":"), default=str)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(load_settings().shared_data))
    ap.add_argument("--benchmark", action="append", choices=BENCHMARKS, help="default: all")
    ap.add_argument("--system", action="append", choices=list(REGISTRY),
                    help="default: each benchmark's standard set")
    ap.add_argument("--limit", type=int, default=None, help="first N questions per benchmark (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "docs" / "eval"))
    ap.add_argument("--work", default=None, help="work folder kept between runs (default: temporary)")
    ap.add_argument("--report-only", action="store_true", help="only rebuild report.md and plots from results/")
    args = ap.parse_args(argv)

    out = Path(args.out)
    (out / "results").mkdir(parents=True, exist_ok=True)
    failed = False
    if args.report_only:  # also re-apply the publishing rule to what is there
        for p in (out / "results").glob("*.json"):
            p.write_text(publishable(json.loads(p.read_text())))
    for bench in [] if args.report_only else (args.benchmark or BENCHMARKS):
        systems = args.system or list(DEFAULT_SYSTEMS[TASK_OF[bench]])
        started = time.perf_counter()
        last = [0.0]

        def progress(system, done, total, bench=bench):
            now = time.perf_counter()
            if done == total or now - last[0] > 30:
                last[0] = now
                print(f"  {bench} {system}: {done}/{total} ({now - started:.0f}s)", flush=True)

        print(f"== {bench}: {', '.join(systems)}", flush=True)
        work = Path(args.work) / bench if args.work else None
        results = run_benchmark(bench, Path(args.data) / data_folder(bench), systems, limit=args.limit, seed=args.seed,
                                work_dir=work, progress=progress)
        path = out / "results" / f"{bench}.json"
        if args.system and path.exists():  # keep the other systems' results of an earlier run
            keep = [r for r in json.loads(path.read_text()) if r["system"] not in set(systems)]
            order = {s: i for i, s in enumerate(DEFAULT_SYSTEMS[TASK_OF[bench]])}
            results = sorted(keep + results, key=lambda r: order.get(r["system"], len(order)))
        path.write_text(publishable(results))
        print(benchmark_table(results))
        if bench == "hotpotqa":
            held = hotpotqa_heldout(results)
            if held:
                # its per-question records are hotpotqa.json's, filtered: not stored twice
                (out / "results" / f"{HELDOUT}.json").write_text(publishable([dict(r, per_item=[]) for r in held]))
                print("held-out split (SproutRAG test questions):")
                print(benchmark_table(held))
        if bench == "dragonball":
            held = dragonball_heldout(results)
            if held:
                (out / "results" / f"{DRAGONBALL_HELDOUT}.json").write_text(
                    publishable([dict(r, per_item=[]) for r in held]))
                print("held-out split (DragonBall dev queries):")
                print(benchmark_table(held))
        for r in results:
            if r["status"] != "ok":
                print(f"  {r['system']}: {(r['notes'] or [''])[-1].splitlines()[0]}")
            failed |= r["status"] == "failed"
        print(f"  ({time.perf_counter() - started:.0f}s)\n", flush=True)

    order = list(BENCHMARKS)
    order.insert(order.index("hotpotqa") + 1, HELDOUT)
    files = sorted((out / "results").glob("*.json"), key=lambda p: order.index(p.stem) if p.stem in order else 99)
    plots = write_report(load_results(files), out / "report.md", plots_dir=out,
                         intro=INTRO.format(cpus=os.cpu_count()))
    print(f"wrote {out / 'report.md'} and {len(plots)} plots")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
