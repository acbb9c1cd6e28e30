"""Ingestion against the work nobody can avoid, side by side in one run.

    .venv/bin/python benchmarks/bench_ingest_cost.py [--pdfs ../shared/data/pdfs] [--sample N]

Rows:

* **unavoidable**: in this process, the embedding model loaded once, then for every PDF: open it
  with PyMuPDF, extract the text of every page, split it into the passages vectree stores (the
  project's sentence rule), and one MiniLM pass over every sentence of every paper;
* **vectree ingest (cold)**: ``vectree ingest PDFS --store NEW`` as a whole process (interpreter,
  imports, Dagster runs, trees, passages, index, publish) into a new store;
* **no-change refresh**: the same command again on the built store.

CPU seconds are user + system of the process (children for the two CLI rows); the ratio is
ingest / unavoidable, on wall time and on CPU time.  Targets (issue 21): ingest <= 1.5x the
unavoidable cost, a no-change refresh of 37 papers <= 5 s.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def unavoidable(pdfs: list[Path]) -> tuple[float, float, int, int]:
    """Wall and CPU seconds of parse + text + sentence split + one MiniLM pass; pages, sentences."""
    import pymupdf

    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.passages import split_page

    wall, cpu = time.perf_counter(), _cpu_self()
    embedder = get_embedder()
    sentences, pages = [], 0
    for pdf in pdfs:
        try:
            doc = pymupdf.open(pdf)
        except Exception:
            continue
        with doc:
            for page in doc:
                pages += 1
                # blocks joined by blank lines, as the store keeps a page's text
                text = "\n\n".join(b[4] for b in page.get_text("blocks") if b[6] == 0)
                sentences.extend(s for _, s in split_page(text))
    embedder.encode_documents(sentences)
    return time.perf_counter() - wall, _cpu_self() - cpu, pages, len(sentences)


def cli(args: list[str], env: dict | None) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), _cpu_children()
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "vectree"), *args], env=env, cwd=REPO,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"vectree {' '.join(args[:1])} failed:\n{proc.stderr[-3000:]}")
    return time.perf_counter() - wall, _cpu_children() - cpu


def main() -> None:
    from vectree.retrieval.config import load_settings, set_offline_model_env

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdfs", type=Path, default=load_settings().shared_data / "pdfs")
    ap.add_argument("--sample", type=int, default=0, help="the first N PDFs by name (0: all)")
    a = ap.parse_args()
    pdfs = sorted(a.pdfs.rglob("*.pdf"))
    if a.sample:
        pdfs = pdfs[: a.sample]
    if not pdfs:
        raise SystemExit(f"no PDFs under {a.pdfs}")
    set_offline_model_env()  # this process and the `vectree` children it times (they inherit it)
    env = None
    u_wall, u_cpu, pages, n_sent = unavoidable(pdfs)
    with tempfile.TemporaryDirectory(prefix="bench-ingest-cost-") as tmp:
        store = str(Path(tmp) / "store")
        c_wall, c_cpu = cli(["ingest", *map(str, pdfs), "--store", store], env)
        n_wall, n_cpu = cli(["ingest", *map(str, pdfs), "--store", store], env)  # the same command again
    print(f"\n{len(pdfs)} PDFs from {a.pdfs}, {pages} pages, {n_sent} sentences; "
          f"executor {load_settings().executor}, batch size {load_settings().batch_size}\n")
    print("| step | wall s | CPU s | wall / unavoidable | CPU / unavoidable |")
    print("|---|---|---|---|---|")
    print(f"| unavoidable (parse + text + split + one MiniLM pass) | {u_wall:.1f} | {u_cpu:.1f} | 1.00 | 1.00 |")
    print(f"| `vectree ingest` into a new store | {c_wall:.1f} | {c_cpu:.1f} | {c_wall / u_wall:.2f} | "
          f"{c_cpu / u_cpu:.2f} |")
    print(f"| no-change refresh | {n_wall:.1f} | {n_cpu:.1f} | | |")
    print(f"\ntargets: ingest <= 1.5x unavoidable ({'met' if c_wall <= 1.5 * u_wall else 'NOT met'} on wall), "
          f"no-change <= 5 s ({'met' if n_wall <= 5 else 'NOT met'})")


if __name__ == "__main__":
    main()
