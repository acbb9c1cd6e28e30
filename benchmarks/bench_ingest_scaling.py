"""How ingest scales with a paper's length: time and peak memory per page at 10, 100, 500 pages.

A synthetic paper of N pages (PyMuPDF-typeset: numbered section headings, paragraphs of varied
sentences) is ingested stage by stage, each stage in a fresh child process so its peak RSS is its
own; "extra MiB" is the peak minus the child's RSS after its imports and model load, i.e. what
the paper itself cost.  Stages:

* ``pages``     ``paper_pages``: parse every page (reading order, lines), write the pages Parquet;
* ``tree``      ``section_tree`` with the offline extractor (reads every page with its lines);
* ``passages``  the passages of every page with MiniLM vectors, embedded in one call (``build_passages``);
* ``streamed``  the same passages as ``paper_passages`` builds them: pages read and passages
  embedded and appended 256 at a time (``stream_passages``).

If per-page time and extra memory stay flat from 10 to 500 pages, the stage scales linearly.

Usage: python benchmarks/bench_ingest_scaling.py [--pages 10 100 500] [--stages pages tree passages streamed]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

WORDS = ("glacier discharge basin melt runoff sensor gauge alpine snowpack model season summer winter "
         "temperature flux measurement error variance signal station network river catchment").split()


def write_pdf(path: Path, n_pages: int) -> Path:
    """A paper of ``n_pages`` pages: a title, then sections with headings and paragraphs."""
    import pymupdf

    doc = pymupdf.open()
    section = 0
    for p in range(n_pages):
        page = doc.new_page()
        y = 60
        if p == 0:
            page.insert_text((60, y), "Scaling Study of Alpine Glacier Discharge", fontsize=16, fontname="hebo")
            y += 40
        for block in range(4):
            if block % 2 == 0:
                section += 1
                page.insert_text((60, y), f"{section} Section {section}", fontsize=12, fontname="hebo")
                y += 24
            for line in range(6):
                words = [WORDS[(p * 31 + block * 7 + line * 3 + i) % len(WORDS)] for i in range(12)]
                page.insert_text((60, y), " ".join(words).capitalize() + ".", fontsize=10)
                y += 14
            y += 14
    doc.save(path)
    return path


CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[4])
stage, pdf, store_root = sys.argv[1], sys.argv[2], sys.argv[3]
from vectree.retrieval.corpus import scan
from vectree.retrieval.ingest import ingest_paper
from vectree.retrieval.store import Store
store = Store(store_root)
(f,) = scan([pdf])
embedder = None
if stage in ("passages", "streamed"):
    from vectree.retrieval.embed import get_embedder
    embedder = get_embedder()
    embedder.encode_documents(["warm up"])
if stage == "tree":
    from vectree.retrieval.trees.build import build_tree
if stage in ("passages", "streamed"):
    from vectree.retrieval.passages import build_passages, stream_passages, write_passages
    from vectree.retrieval.trees.schema import read_tree

def rss_mib():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
base = rss_mib()
t = time.perf_counter()
if stage == "pages":
    rec = ingest_paper(store, [f])
    assert rec["status"] == "ok", rec
elif stage == "tree":
    build_tree(store, f.doc_id)
elif stage == "streamed":
    stream_passages(store, f.doc_id, read_tree(store, f.doc_id), embedder)
else:
    table = build_passages(store.read_pages(f.doc_id), read_tree(store, f.doc_id), embedder)
    write_passages(store, f.doc_id, table)
seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mib": peak, "extra_mib": max(0.0, peak - base)}))
"""


def run(stage: str, pdf: Path, store: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, stage, str(pdf), str(store), str(REPO)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, nargs="+", default=[10, 100, 500])
    ap.add_argument("--stages", nargs="+", default=["pages", "tree", "passages", "streamed"],
                    choices=["pages", "tree", "passages", "streamed"])
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.pages:
            folder = Path(tmp) / f"n{n}"
            folder.mkdir()
            pdf = write_pdf(folder / f"scaling-{n}.pdf", n)
            store = Path(tmp) / f"store{n}"
            embeds = {"passages", "streamed"} & set(args.stages)
            for stage in ("pages", "tree", "passages", "streamed"):
                if stage not in args.stages and not (stage == "pages" or (stage == "tree" and embeds)):
                    continue  # later stages need the earlier ones' artefacts
                r = run(stage, pdf, store)
                if stage in args.stages:
                    rows.append((stage, n, r))
                    print(f"{stage:9s} {n:4d} pages: {r['seconds']:.2f}s, peak {r['peak_mib']:.0f} MiB, "
                          f"extra {r['extra_mib']:.1f} MiB", file=sys.stderr)
    print("| stage | pages | seconds | ms / page | peak MiB | extra MiB | extra KiB / page |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for stage, n, r in rows:
        print(f"| {stage} | {n} | {r['seconds']:.2f} | {1000 * r['seconds'] / n:.1f} | {r['peak_mib']:.0f} | "
              f"{r['extra_mib']:.1f} | {1024 * r['extra_mib'] / n:.0f} |")


if __name__ == "__main__":
    main()
