"""Start-up and run time of every CLI command as a whole process, beside ``python -c pass``.

Each command runs ``--runs`` times as a fresh process (a cold interpreter: nothing imported, no
model in memory; the operating system's file cache is warm after the first run).  Model-free
commands (``--help``, ``papers``, ``status``, ``tree``, ``page``, ``sources``) should cost little
more than the interpreter itself; model-using ones (``search``, ``ask``) pay for loading the
embedding model once per process.

    python benchmarks/bench_cli.py [--store .vectree-demo] [--runs 5] [--markdown]

Without a store at ``--store`` it first builds the demo store there (``vectree demo``).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

VECTREE = [sys.executable, "-m", "vectree.cli"]


def commands(store: str, doc_prefix: str) -> list[tuple[str, str, list[str]]]:
    s = ["--store", store]
    return [
        ("baseline", "python -c pass", [sys.executable, "-c", "pass"]),
        ("model-free", "vectree --help", [*VECTREE, "--help"]),
        ("model-free", "vectree papers", [*VECTREE, "papers", *s]),
        ("model-free", "vectree status", [*VECTREE, "status", *s]),
        ("model-free", "vectree sources", [*VECTREE, "sources", *s]),
        ("model-free", f"vectree tree {doc_prefix}", [*VECTREE, "tree", doc_prefix, *s]),
        ("model-free", f"vectree page {doc_prefix} 1", [*VECTREE, "page", doc_prefix, "1", *s]),
        ("model", 'vectree search "capacity fade"', [*VECTREE, "search", "capacity fade", *s]),
        ("model", 'vectree ask "How large is the HELIX-212 dataset?"',
         [*VECTREE, "ask", "How large are the raw time series of the HELIX-212 dataset?", *s]),
    ]


def time_command(argv: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + system of the child) of each run.  CPU time is the
    figure to compare on a shared machine: wall time there mostly measures the other processes."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        # env(1) sets the width for the child alone; this script reads no environment itself
        proc = subprocess.run(["env", "COLUMNS=100", *argv], capture_output=True, text=True)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return walls, cpus


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default=".vectree-demo")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated kinds to run: baseline,model-free,model")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table (for the README)")
    args = ap.parse_args()
    store = Path(args.store)
    if not (store / "docs.parquet").exists():
        print(f"no store at {store}: building the demo store there first (vectree demo)", file=sys.stderr)
        subprocess.run([*VECTREE, "demo", "--store", str(store)], check=True, capture_output=True)
    import pyarrow.parquet as pq

    ids = sorted(pq.ParquetFile(store / "docs.parquet").read(columns=["doc_id"]).column(0).to_pylist())
    prefix = ids[0][:6] if ids else "x"  # a short prefix, as a user would type it
    kinds = set(filter(None, args.only.split(","))) | {"baseline"}
    rows = []
    for kind, label, argv in commands(str(store), prefix):
        if args.only and kind not in kinds:
            continue
        walls, cpus = time_command(argv, args.runs)
        rows.append((kind, label, statistics.median(walls), min(walls), statistics.median(cpus)))
        print(f"{label:<55} median {statistics.median(walls):6.2f} s wall, {statistics.median(cpus):6.2f} s CPU",
              file=sys.stderr)
    base_wall, base_cpu = rows[0][2], rows[0][4]
    header = ("kind", "command", "wall s (median)", "wall s (min)", "CPU s (median)", "CPU over python -c pass")
    table = [(k, lbl, f"{med:.2f}", f"{lo:.2f}", f"{cpu:.2f}", "" if k == "baseline" else f"+{cpu - base_cpu:.2f} s")
             for k, lbl, med, lo, cpu in rows]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    note = (f"{args.runs} runs each, fresh process per run; {os.cpu_count()} CPUs, load average "
            f"{load:.1f} at the end; Python {sys.version.split()[0]}")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in table:
            print("| " + " | ".join(f"`{c}`" if i == 1 else c for i, c in enumerate(r)) + " |")
        print(f"\n{note}")
    else:
        widths = [max(len(str(r[i])) for r in [header, *table]) for i in range(len(header))]
        for r in [header, *table]:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
        print(note)


if __name__ == "__main__":
    main()
