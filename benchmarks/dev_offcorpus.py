"""The off-corpus floor, calibrated on training-side questions (never an evaluation question).

    .venv/bin/python benchmarks/dev_offcorpus.py [--data ../shared/data] [--write vectree/models/reader]

Each dev-split question (QASPER dev-dictionary articles, the reader's split by article; PubMedQA
dev abstracts) is asked of a corpus that holds its document and of the same corpus without it; the
feature is the best IDF-weighted share of the question's words among its 5 best documents by BM25
(:mod:`vectree.retrieval.rerank.coverage`).  Prints the curve (in-corpus questions answered, off-corpus
questions abstained on, per source) and the chosen floor: the highest answering 95 % of the
in-corpus questions of every source.  ``--write``: record it in a reader folder's ``config.json``
(``calibration.coverage``), as ``vectree reranker train`` does for a new model.

Measured 2026-12-06 (QASPER 141, PubMedQA 87 dev questions; 6 s): floor 0.35; in-corpus answered
.965 (QASPER) and .966 (PubMedQA); off-corpus abstained on .085 (QASPER: the other articles are
NLP papers too, near in topic and words) and .713 (PubMedQA).  In the 39-PDF store of
``bench_ask_latency.py`` (parser fixtures: NLP and document-analysis papers), 40 PubMedQA dev
questions (off-corpus there): the relevance rule alone abstained on 21, with the floor on 33; the
demo corpus's questions are all still answered (``tests/test_reranker.py``).

Then the in-paper floor (``calibration.passage_coverage``, :func:`vectree.retrieval.rerank.coverage.passage_coverage`):
each dev question asked of its own document and of it without the question's evidence (QASPER dev
papers, HotpotQA paragraphs, PubMedQA abstracts; see ``passage_episodes``), the same 95 % rule.
Measured 2026-12-06 (QASPER 141, HotpotQA 58, PubMedQA 87 dev questions; 17 s): floor 0.20 (PubMedQA
binds: .25 would answer .908 there); answered with their evidence .993 / 1.0 / .954, abstained on
without it .014 / .293 / .655 (QASPER's questions name little that a sentence holds verbatim).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def print_curve(block: dict, curve: list[dict], answered: str, abstained: str) -> None:
    """The floor's curve per source as a Markdown table, the chosen row marked, then the block."""
    sources = list(block["questions"])
    print("| floor | " + " | ".join(f"{s} {answered} | {s} {abstained}" for s in sources) + " |")
    print("|---:|" + "---:|---:|" * len(sources))
    for row in curve:
        mark = " **chosen**" if row["threshold"] == block["min_coverage"] else ""
        print(f"| {row['threshold']}{mark} | " + " | ".join(
            f"{row[f'{s}_answered_in']:.3f} | {row[f'{s}_abstained_off']:.3f}" for s in sources) + " |")
    print(json.dumps(block))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--write", default=None, help="a reader folder whose config.json gets the floor")
    args = ap.parse_args()
    from vectree.retrieval.rerank.coverage import calibrate_coverage, training_episodes
    from vectree.retrieval.rerank.train import resolve_data_dir

    data = resolve_data_dir(args.data)
    episodes = training_episodes(data)
    block, curve = calibrate_coverage(episodes)
    print_curve(block, curve, "in-corpus answered", "off-corpus abstained")

    from vectree.retrieval.rerank.coverage import calibrate_passage_coverage

    inside, curve = calibrate_passage_coverage(data)
    print("\nin-paper floor (each dev question with and without its evidence):")
    print_curve(inside, curve, "answered with evidence", "abstained without")
    if args.write:
        path = Path(args.write) / "config.json"
        cfg = json.loads(path.read_text())
        cfg.setdefault("calibration", {})["coverage"] = block
        cfg["calibration"]["passage_coverage"] = inside
        path.write_text(json.dumps(cfg, indent=1))
        print(f"recorded in {path}")


if __name__ == "__main__":
    main()
