"""How often the offline agent abstains on questions a real store cannot answer, and on those it can.

    .venv/bin/python benchmarks/bench_offcorpus_store.py [--store /tmp/vt-ask-store] [--n 40]

The store is ``bench_ask_latency.py``'s (the 37 parser-fixture PDFs of ``../shared/data/pdfs`` and
the two ``qasper_pdf`` arXiv papers: NLP and document-analysis papers; built there once).  Each
question is asked of the whole store, as ``vectree ask`` does without ``--paper``:

* off-corpus, another field: the first ``n`` PubMedQA questions of the reader's dev split;
* off-corpus, near topic: the first ``n`` pageBench questions (QASPER train papers; the store
  holds none of them);
* in-corpus: the ``qasper_pdf`` questions about the two arXiv papers the store holds.

Training-side and benchmark-public questions only; nothing is fitted here.  Prints, per group, how
many were abstained on and by which rule.  ``VECTREE_RERANKER=<folder>`` measures another reader
configuration (its ``config.json`` holds the floors).

Measured 2026-12-06 (night; 2 CPU cores shared with a test run), the same store and questions:

| reader calibration | PubMedQA dev (off, other field) | pageBench (off, near topic) | qasper_pdf (in the store) |
|---|---:|---:|---:|
| off-corpus floor .35 on single papers (the evening's) | 33 / 40 | 9 / 40 | 1 / 4 |
| + in-paper floor .20 | 37 / 40 | 13 / 40 | 1 / 4 |
| off-corpus floor .20 on one or two papers + in-paper floor over the papers read | 36 / 40 | 9 / 40 | 1 / 4 |
| + a second paper read for the named words the best lacks (session 8) | 33 / 40 | 8 / 40 | 1 / 4 |
| + that paper held to the best paper's abstention rule, title case guarded (shipped) | 36 / 40 | 8 / 40 | 1 / 4 |

The in-corpus question abstained on in every row is "What is the Random Kitchen Sink approach?":
Layer 0 does not put its paper among the five best (dense search misses it), so no candidate
holds the words it names.
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
from pathlib import Path

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="/tmp/vt-ask-store")
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument("--n", type=int, default=40)
    args = ap.parse_args()
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox
    from vectree.retrieval.rerank.data import pubmedqa_split, read_pubmedqa

    data = Path(args.data)
    if not (Path(args.store) / "docs.parquet").exists():
        raise SystemExit(f"no store at {args.store}: build it with benchmarks/bench_ask_latency.py --store {args.store}")
    _, pm = read_pubmedqa(data)
    pagebench = list(csv.DictReader(open(data / "qasper" / "pagebench" / "0b_qa_pairs.csv", newline="", encoding="utf-8")))
    inside = [json.loads(x)["question"] for x in (data / "qasper_pdf" / "questions.jsonl").read_text().split("\n")
              if x.strip()]
    groups = {
        "PubMedQA dev (off-corpus, other field)": [r["question"] for r in pm if pubmedqa_split(str(r["pmid"])) == "dev"][:args.n],
        "pageBench (off-corpus, near topic)": [r["question"] for r in pagebench][:args.n],
        "qasper_pdf (in the store)": inside,
    }
    nav = OfflineNavigator(Toolbox(args.store, reranker="auto"))
    print("| questions | n | abstained | by the off-corpus floor | by the in-paper floor | by relevance |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, questions in groups.items():
        why = collections.Counter()
        for q in questions:
            a = nav.answer(q)
            if a.abstained:
                why["off" if "of what it names" in a.answer else "in" if "of the question's words" in a.answer
                    else "relevance"] += 1
        print(f"| {name} | {len(questions)} | {sum(why.values())} | {why['off']} | {why['in']} | {why['relevance']} |",
              flush=True)


if __name__ == "__main__":
    main()
