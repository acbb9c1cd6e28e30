"""Page-level evidence selection on training-side dev papers (never the evaluation papers).

Builds the dev papers of :mod:`vectree.retrieval.rerank.pages` (QASPER dev-split articles padded to
200 chunks, pages of 3,500 characters), runs the navigator's candidate step for every question, and
prints the page precision / recall of the sentence-level selection the reader shipped with beside
the best points of the page-level grid (threshold x margin x most sentences cited), with the chosen
point marked.  ``--write FOLDER`` stores the chosen point in that reader's ``config.json``
(``calibration.page_selection``), its curve in ``dev_curves.json`` and re-renders its card.

Usage: ``python benchmarks/dev_page_selection.py [--data ../shared/data] [--model FOLDER] [--write FOLDER]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vectree.evaluation.embedcache import cached_embedder
from vectree.retrieval.rerank.model import Reader, get_reader
from vectree.retrieval.rerank.pages import calibrate_pages, save_page_selection


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--model", default=None, help="reader folder (default: the live one)")
    ap.add_argument("--write", default=None, help="calibrate this reader folder in place")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    emb = cached_embedder()
    if args.write:
        chosen = save_page_selection(Path(args.write), Path(args.data), embedder=emb)
        print(f"wrote calibration.page_selection into {args.write}/config.json: {chosen}")
        return
    reader = Reader.load(args.model) if args.model else get_reader()
    chosen, curve = calibrate_pages(reader, Path(args.data), emb)
    print(f"{chosen['questions']} questions on {chosen['papers']} dev papers")
    print("| selection | threshold | margin | most cited | page P | page R | mean page F1 | pages cited |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = [("sentence-level (shipped)", chosen.get("sentence_level", {}))]
    rows += [("**chosen**" if d["threshold"] == chosen["threshold"] and d["margin"] == chosen["margin"]
              and d["max_cited"] == chosen["max_cited"] else "", d)
             for d in sorted(curve, key=lambda d: -d["mean_f1"])[:args.top]]
    rows += [(f"best candidate only, at most {c}", next(d for d in curve if d["max_cited"] == c
                                                         and d["threshold"] == 0.95 and d["margin"] == 0.1))
             for c in (1,)]
    for name, d in rows:
        print(f"| {name} | {d.get('threshold')} | {d.get('margin')} | {d.get('max_cited')} | {d.get('precision')} | "
              f"{d.get('recall')} | {d.get('mean_f1')} | {d.get('pages')} |")


if __name__ == "__main__":
    main()
