"""Write what the offline navigator answers (text, citations, confidence and its features, the tool
calls) to a JSON file, so that two versions of the code can be compared answer by answer.

    vectree demo --store /tmp/demo                                  # once
    .venv/bin/python benchmarks/navigator_snapshot.py --demo-store /tmp/demo [--store DIR] --out before.json
    (change the code)
    .venv/bin/python benchmarks/navigator_snapshot.py --demo-store /tmp/demo [--store DIR] --out after.json
    cmp before.json after.json

Covers the reader path's branches: every demo question asked of its paper and of the whole store,
a few questions that abstain, ask for a definition or a yes/no decision, with plain passages and
with SproutRAG's vote (`vectree demo` builds the trees), calibrated and not (the
``vectree-no-calibration`` ablation); with ``--store`` (e.g. the store ``bench_ask_latency.py``
builds from the shared PDFs) also its 60 questions asked of the whole store.  Deterministic: two
runs of the same code write the same file.  Used on 7 December (session 16) to check that the
reader path's restructuring into ``navigator.ReadingEpisode`` changed no answer (276 identical).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vectree.retrieval.config import set_offline_model_env  # noqa: E402

set_offline_model_env()

EXTRA = ["x", "What is the weather in Paris tomorrow?", "Is the method better than the baseline?",
         "What is HELIX-212?", "Which datasets are compared in Table 1?", "How many cells were cycled?"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demo-store", type=Path, required=True, help="a store `vectree demo --store DIR` built")
    ap.add_argument("--store", type=Path, help="also: 60 questions of bench_ask_latency.py asked of this store")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox
    from vectree.demo import DEMO_QUESTIONS
    from vectree.retrieval.store import Store

    out = []

    def record(tag, a):
        out.append({"tag": tag, "answer": a.answer, "abstained": a.abstained, "confidence": a.confidence,
                    "citations": [(c["doc_id"], c["page"], c["quote"], c.get("valid"), c.get("relevance"))
                                  for c in a.citations],
                    "features": getattr(a, "confidence_features", None),
                    "tools": [(s["tool"], json.dumps(s["arguments"], sort_keys=True)) for s in a.trace["steps"]],
                    "possibly": getattr(a, "possibly_relevant", None)})

    for within in ("passages", "sprout"):
        tb = Toolbox(Store(args.demo_store), within_paper=within)
        slugs = {r["doc_id"]: r["slug"] for r in tb.store.read_catalog()}
        for calibrated in (True, False):
            nav = OfflineNavigator(tb, calibrated=calibrated)
            for q in DEMO_QUESTIONS:
                doc = next((d for d, s in slugs.items() if s.startswith(q["slug"])), None)
                record(f"demo/{within}/{calibrated}/paper", nav.answer(q["question"], paper=doc))
                record(f"demo/{within}/{calibrated}/corpus", nav.answer(q["question"]))
            for q in EXTRA:
                record(f"demo/{within}/{calibrated}/extra", nav.answer(q))
    if args.store:
        from bench_ask_latency import questions

        nav = OfflineNavigator(Toolbox(Store(args.store), within_paper="passages"))
        for q in questions(60):
            record("store", nav.answer(q))
    args.out.write_text(json.dumps(out, default=str))
    print(f"{len(out)} answers written to {args.out}")


if __name__ == "__main__":
    main()
