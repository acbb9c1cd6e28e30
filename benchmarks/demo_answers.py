"""The offline agent's answers and cited pages on the demo corpus: a real-PDF check with known answers.

    vectree demo --store /tmp/demo-store        # once (or: make demo DEMO_STORE=/tmp/demo-store)
    .venv/bin/python benchmarks/demo_answers.py --store /tmp/demo-store [--corpus] [--show]

Every question of :data:`vectree.demo.DEMO_QUESTIONS` (papers written for vectree, typeset to PDF,
ingested by the real pipeline) is asked of its paper (or, with ``--corpus``, of the whole store)
by the offline navigator, as ``vectree ask`` does.  Scored per question:

* **right**: the answer holds the question's verbatim short answer (case and spaces ignored), or
  is a part of it that states one of its numbers with its unit ("0.2 µW" of "0.2 µW over 24 hours");
* **quoted**: a valid citation quotes a sentence holding the short answer;
* **page P / R**: the pages of the valid citations against the page(s) holding the answer
  (:func:`vectree.demo.expected_pages`, computed from the render);
* **abstained**, and the mean answer confidence of right and of wrong answers.

The QASPER dev papers of :mod:`vectree.retrieval.rerank.pages` are the training-side check of the
within-paper choices; this is the second one, on real PDFs (see ``demo_within_paper.py`` for the
orders alone).  Nothing is fitted here.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()

_NUM = re.compile(r"\d+(?:[.,]\d+)*")


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text.lower())


def is_right(answer: str, short: str) -> bool:
    """The short answer is in the answer, or the answer is a part of the short answer that states a
    number of it ("0.2 µW" of "0.2 µW over 24 hours"; a bare "24" or "three" is not)."""
    a, s = _squash(answer), _squash(short)
    if s in a:
        return True
    return len(a) >= 3 and a in s and bool(_NUM.search(a)) and not a.isdigit()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True, help="a store `vectree demo --store DIR` built")
    ap.add_argument("--corpus", action="store_true", help="ask each question of the whole store, not its paper")
    ap.add_argument("--show", action="store_true", help="print every question's answer and pages")
    ap.add_argument("--within-paper", default="passages", choices=["passages", "sprout"],
                    help="sprout: as `vectree-sprout` asks (the store needs SproutRAG trees: "
                         "`vectree sprout use sprout-default-v4 --store DIR`)")
    args = ap.parse_args()
    from vectree.agent.ask import ask
    from vectree.agent.tools import Toolbox
    from vectree.demo import DEMO_QUESTIONS, expected_pages
    from vectree.retrieval.store import Store

    if not (args.store / "manifest.parquet").exists():
        sys.exit(f"{args.store} is not an ingested store: build it with `vectree demo --store {args.store}`")
    tb = Toolbox(Store(args.store), within_paper=args.within_paper)
    slugs = {r["doc_id"]: r["slug"] for r in tb.store.read_catalog()}
    rows = []
    for q in DEMO_QUESTIONS:
        doc = next((d for d, s in slugs.items() if s.startswith(q["slug"])), None)
        if doc is None:
            continue
        a = ask(tb, q["question"], paper=None if args.corpus else doc, agent="offline")
        gold = {(doc, p) for p in expected_pages(q)}
        cited = set(a.pages)
        right = not a.abstained and is_right(a.answer, q["answer"])
        quoted = any(c.get("valid", True) and _squash(q["answer"]) in _squash(c.get("quote", "")) for c in a.citations)
        rows.append({"right": right, "quoted": quoted, "abstained": a.abstained, "confidence": a.confidence,
                     "P": len(cited & gold) / len(cited) if cited else 0.0, "R": len(cited & gold) / len(gold),
                     "seconds": a.seconds})
        if args.show:
            mark = "ok " if right else "-- "
            print(f"{mark}{q['question'][:70]!r}\n     -> {a.answer[:90]!r} pages {sorted(p for _, p in cited)} "
                  f"gold {sorted(p for _, p in gold)} conf {a.confidence}")
    n = len(rows)
    mean = lambda key: float(np.mean([r[key] for r in rows])) if rows else 0.0  # noqa: E731
    conf_right = [r["confidence"] for r in rows if r["right"] and r["confidence"] is not None]
    conf_wrong = [r["confidence"] for r in rows if not r["right"] and r["confidence"] is not None]
    print(f"{n} demo questions asked of {'the whole store' if args.corpus else 'their paper'}")
    print("| right | quoted | page P | page R | abstained | confidence right / wrong | seconds p50 |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {sum(r['right'] for r in rows)} / {n} | {sum(r['quoted'] for r in rows)} / {n} | {mean('P'):.3f} | "
          f"{mean('R'):.3f} | {sum(r['abstained'] for r in rows)} | "
          f"{np.mean(conf_right) if conf_right else float('nan'):.2f} / {np.mean(conf_wrong) if conf_wrong else float('nan'):.2f} | "
          f"{float(np.median([r['seconds'] for r in rows])):.2f} |")


if __name__ == "__main__":
    main()
