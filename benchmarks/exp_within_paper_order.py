"""Within-paper order variants, judged end to end by the offline agent on both dev checks.

    .venv/bin/python benchmarks/exp_within_paper_order.py VARIANT --demo-store DIR [--work DIR]

Runs ``dev_navigator.py`` (QASPER dev papers typeset and ingested; answer F1, page P / R) and
``demo_answers.py`` (the demo corpus's 24 questions) in one process with one change patched in:

* ``today``: nothing changed;
* ``bm25x1.5``: BM25's ranking weighs 1.5 in the paper's first-stage fusion (cosine 1);
* ``reader-half``: the reader's order weighs half in its fusion with the first stage's;
* ``first-stage``: the agent reads the candidates in the first stage's order (the reader's
  relevance and readings unchanged);
* ``bm25x1.5+first-stage``: both;
* ``span@N`` / ``answerable@N`` / ``extractive@N``: the reader's first N candidates reordered by
  an answer head of their reading (the span's start + end logit; 1 - P(unanswerable); P(extractive)),
  so the sentence that looks most like it holds an answer is read first.

Nothing is fitted; the evaluation is not read.

Measured 7 December (session 14): 141 QASPER dev questions on the 51 typeset dev papers; the demo
store of ``make demo`` (24 questions):

| variant | dev answer F1 | dev page P | dev page R | demo right | demo page P |
|---|---:|---:|---:|---:|---:|
| today | .126 | .491 | .531 | 18 / 24 | .646 |
| bm25x1.5 | .135 | .482 | .513 | 18 | .653 |
| reader-half | .135 | .502 | .541 | 18 | .646 |
| first-stage | .129 | .504 | .531 | 18 | .694 |
| bm25x1.5+first-stage | **.142** | .486 | .513 | 18 (19 quoted) | **.729** |

Measured 7 December (session 15), the same checks (reordering by the reader's answer heads):

| variant | dev answer F1 | dev page P | dev page R | demo right | demo page P |
|---|---:|---:|---:|---:|---:|
| today | **.126** | **.491** | .531 | **18** / 24 | **.646** |
| span@3 | .127 | .442 | .542 | 17 | .646 |
| span@5 | .108 | .436 | .537 | 15 | .646 |
| answerable@3 | .090 | .457 | .555 | 18 | .632 |
| extractive@3 | .090 | .456 | .555 | 16 | .632 |

The heads pick no better sentence to read first, and the sentence they pick adds its page: 1.89
pages cited against 1.71, so page precision falls.  Not built.

Every difference in session 14's table is a question or two on either check (a standard error of about .02 on dev's
F1 and page figures); none is built.  Orders that moved the first sentence by .03-.05 on the
QASPER dev papers (``dev_late_interaction.py``) move what the agent answers and cites by less: the
navigator reads eight candidates and cites by calibrated relevance, so the order matters mostly
when it changes which sentence is read first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()

VARIANTS = ("today", "bm25x1.5", "reader-half", "first-stage", "bm25x1.5+first-stage",
            "span@3", "answerable@3", "extractive@3", "span@5")
# the reader's answer heads, not its relevance, reorder the first N candidates (the sentence read
# first is the one whose reading looks most like it holds an answer)
HOLDER_KEYS = {
    "span": lambda r: r.span_score if r.span else float("-inf"),
    "answerable": lambda r: -r.type_probs["unanswerable"],
    "extractive": lambda r: r.type_probs["extractive"],
}


def patch(variant: str) -> None:
    from vectree.retrieval import passages
    from vectree.retrieval.rerank import apply

    if "bm25x1.5" in variant:
        rank = passages.PaperPassages.rank

        def heavier_bm25(self, query, query_vector, k=5, *, pages=None, extra=()):
            return rank(self, query, query_vector, k, pages=pages, extra=[(self.bm25(query, 50), 0.5), *extra])

        passages.PaperPassages.rank = heavier_bm25
    if variant == "reader-half" or "first-stage" in variant:
        reader_weight = 0.5 if variant == "reader-half" else 0.0

        def fused_order(probs):
            fused = np.zeros(len(probs))
            for r, j in enumerate(np.argsort(-np.asarray(probs), kind="stable")):
                fused[j] += reader_weight / (apply.RRF_K + r + 1)
            fused += 1.0 / (apply.RRF_K + np.arange(len(probs)) + 1)
            return np.argsort(-fused, kind="stable")

        apply.fused_order = fused_order
    if "@" in variant:
        name, n = variant.split("@")
        key, n = HOLDER_KEYS[name], int(n)
        rerank_passages = apply.rerank_passages

        def heads_first(*a, **kw):
            hits = rerank_passages(*a, **kw)
            return sorted(hits[:n], key=lambda h: -key(h["reading"])) + hits[n:]

        apply.rerank_passages = heads_first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant", choices=VARIANTS)
    ap.add_argument("--demo-store", required=True)
    ap.add_argument("--work", default="/tmp/vectree-dev-answer-confidence")
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    patch(args.variant)
    sys.path.insert(0, str(Path(__file__).parent))
    import demo_answers
    import dev_navigator

    print(f"variant: {args.variant}")
    sys.argv = ["dev_navigator.py", "--work", args.work] + (["--data", args.data] if args.data else [])
    dev_navigator.main()
    sys.argv = ["demo_answers.py", "--store", args.demo_store]
    demo_answers.main()


if __name__ == "__main__":
    main()
