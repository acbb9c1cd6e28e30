"""Ingest throughput: ``paper_pages`` beside raw PyMuPDF ``page.get_text()`` on the same files.

Each mode runs in a fresh child process (so peak RSS is its own), alternating, ``--repeat`` times;
the table shows medians and the ratio to raw extraction.  Modes:

* ``raw``          open every PDF, ``page.get_text()`` on every page, nothing else;
* ``paper_pages``  the asset's work: parse (reading order, line layout, metadata, title, abstract),
                   write pages Parquet, copy the PDF, write the record;
* ``pipeline``     ``vectree ingest`` end to end through Dagster (scan, one run per paper, catalog,
                   and whatever other assets the graph holds), for reference.

Usage: python benchmarks/bench_ingest.py [PDF_DIR] [--repeat 3] [--no-pipeline]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DIR = REPO.parent / "shared" / "data" / "pdfs"

CHILD = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
mode, folder = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
files = sorted(p for p in Path(folder).rglob("*") if p.suffix.lower() == ".pdf")
pages = 0
if mode == "raw":
    import pymupdf
    t = time.perf_counter()
    for f in files:
        with pymupdf.open(f) as doc:
            for page in doc:
                page.get_text()
                pages += 1
    secs = time.perf_counter() - t
elif mode == "paper_pages":
    from vectree.retrieval.corpus import scan, papers_in
    from vectree.retrieval.ingest import ingest_paper
    from vectree.retrieval.store import Store
    store = Store(tempfile.mkdtemp())
    groups = papers_in(scan([folder]))
    t = time.perf_counter()
    for files_ in groups.values():
        pages += ingest_paper(store, files_)["n_pages"]
    secs = time.perf_counter() - t
else:
    from vectree.cli import run_ingest
    t = time.perf_counter()
    store, report, _ = run_ingest([folder], tempfile.mkdtemp(), quiet=True)
    secs = time.perf_counter() - t
    pages = sum(r["n_pages"] or 0 for r in store.read_catalog())
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"mode": mode, "files": len(files), "pages": pages, "seconds": secs, "peak_mb": peak_mb}))
"""


def run_child(mode: str, folder: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(folder), str(REPO)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?", default=str(DEFAULT_DIR))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-pipeline", action="store_true")
    args = ap.parse_args()
    folder = Path(args.folder)
    if not folder.exists():
        sys.exit(f"no PDF folder at {folder} (pass one as the first argument)")
    modes = ["raw", "paper_pages"] + ([] if args.no_pipeline else ["pipeline"])
    results: dict[str, list[dict]] = {m: [] for m in modes}
    for i in range(args.repeat):
        for mode in (modes if i % 2 == 0 else modes[::-1]):
            results[mode].append(run_child(mode, folder))
            print(f"  run {i + 1}/{args.repeat} {mode}: {results[mode][-1]['seconds']:.2f}s", file=sys.stderr)
    raw = statistics.median(r["seconds"] for r in results["raw"])
    print(f"\n{results['raw'][0]['files']} PDFs, {results['raw'][0]['pages']} pages, median of {args.repeat} runs\n")
    print(f"| mode | seconds | pages/s | time vs raw | peak RSS MB |")
    print(f"|---|---:|---:|---:|---:|")
    for mode in modes:
        secs = statistics.median(r["seconds"] for r in results[mode])
        pages = results[mode][0]["pages"]
        peak = max(r["peak_mb"] for r in results[mode])
        print(f"| {mode} | {secs:.2f} | {pages / secs:.0f} | {secs / raw:.2f}x | {peak:.0f} |")


if __name__ == "__main__":
    main()
