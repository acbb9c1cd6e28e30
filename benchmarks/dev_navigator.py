"""The offline agent end to end on training-side dev papers: answer F1 and cited pages.

    .venv/bin/python benchmarks/dev_navigator.py [--data ../shared/data] [--work DIR] [--split dev|train]
                                                 [--limit N]

The navigator-level twin of ``demo_answers.py``, on QASPER data no model saw as evaluation: the dev
papers of :func:`vectree.retrieval.rerank.pages.dev_papers` (QASPER dev-dictionary articles of a
split, each padded to 200 chunks with other articles' paragraphs), typeset with the evaluation's
renderer and ingested by the real pipeline (``dev_answer_confidence.build_store``, cached under
``--work``: the same folder as that script's is reused).  Each question is asked of its own paper
by the offline navigator, as ``vectree eval qasper`` asks; scored as that benchmark scores:

* **answer F1**: QASPER token F1 against the question's extractive spans (joined), 0 when abstained;
* **page P / R**: the pages of the valid citations against the pages of the question's evidence
  paragraphs (from the render's layout);
* answered share and seconds per question.

A within-paper change is judged here and on the demo corpus (``demo_answers.py``), both before any
evaluation run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()

REPO = Path(__file__).resolve().parents[1]


def gold_pages(paper, layout: dict, evidence: set[int]) -> set[int]:
    """Pages of the paragraphs holding ``evidence`` (chunk indices of ``paper``)."""
    pages: set[int] = set()
    for (a, b), (_, para_pages) in zip(paper.paragraphs, layout["paragraphs"]):
        if any(a <= i < b for i in evidence):
            pages.update(int(p) for p in para_pages)
    return pages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--work", default="/tmp/vectree-dev-answer-confidence")
    ap.add_argument("--split", default="dev", choices=["dev", "train"])
    ap.add_argument("--limit", type=int, default=None, help="only the first N papers")
    ap.add_argument("--out", default=None, help="write every question's answer and pages here (JSON)")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from dev_answer_confidence import build_store, references

    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox
    from vectree.evaluation.metrics import max_answer_f1
    from vectree.retrieval.rerank.pages import dev_papers

    data = Path(args.data)
    work = Path(args.work) if args.split == "dev" else Path(args.work) / args.split
    papers = dev_papers(data, split=args.split, limit=args.limit)
    store, doc_ids = build_store(papers, work)
    refs = references(data)
    nav = OfflineNavigator(Toolbox(store))
    rows = []
    t = time.perf_counter()
    for p in papers:
        layout = json.loads((work / "pdfs" / f"dev-{p.key}.layout.json").read_text())
        for (question, _), evidence in zip(p.questions, p.evidence):
            refs_q = refs.get((p.key, question))
            if not refs_q:
                continue
            a = nav.answer(question, paper=doc_ids[p.key])
            gold = gold_pages(p, layout, evidence)
            cited = {page for _, page in a.pages}
            rows.append({"paper": p.key, "question": question, "answer": a.answer, "abstained": a.abstained,
                         "f1": 0.0 if a.abstained else max_answer_f1(a.answer, refs_q),
                         "P": len(cited & gold) / len(cited) if cited else 0.0,
                         "R": len(cited & gold) / len(gold) if gold else 0.0,
                         "cited": sorted(cited), "gold": sorted(gold), "seconds": a.seconds})
    took = time.perf_counter() - t
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    mean = lambda k: float(np.mean([r[k] for r in rows])) if rows else 0.0  # noqa: E731
    print(f"\n{args.split}: {len(rows)} questions on {len(papers)} papers ({took:.0f} s)")
    print("| answer F1 | page P | page R | pages cited | answered | seconds p50 |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {mean('f1'):.3f} | {mean('P'):.3f} | {mean('R'):.3f} | "
          f"{np.mean([len(r['cited']) for r in rows]):.2f} | {1 - mean('abstained'):.3f} | "
          f"{float(np.median([r['seconds'] for r in rows])):.2f} |")


if __name__ == "__main__":
    main()
