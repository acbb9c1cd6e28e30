"""Should the agent read a second paper?  When it holds what the question names and the best lacks.

    .venv/bin/python benchmarks/dev_second_paper.py [--data ../shared/data] [--write vectree/models/reader]

Training-side dev questions only: QASPER dev-dictionary articles and PubMedQA abstracts (one
document each), HotpotQA's two-paragraph questions; each question's five best documents by BM25.
Prints two tables:

1. the calibration of ``calibration.second_paper`` (:mod:`vectree.retrieval.rerank.second_paper`):
   per least share of the named words, how often a second document is added and how paper-set F1
   changes, per source and averaged; the chosen row is marked.  ``--write`` records the block in a
   reader folder's config (``vectree reranker train`` does it too).
2. the navigator's order of choice, with the shipped reader's relevance over the same five
   documents: the papers that relevance selects (calibrated threshold and margin, at most two),
   then the named complement when only one was selected, or the named complement first.

History.  The first rule tried here added the document that adds the most IDF-weighted coverage of
*all* the question's words: at its best point the mean F1 changed by +.002 (QASPER -.033, PubMedQA
-.023, HotpotQA +.063), no better than never, and it was not adopted.  Named words only: +.046 (title case guarded; +.044 before)
(QASPER -.002, PubMedQA -.019, HotpotQA +.158); the training split, not used to choose, +.032 at the chosen share
Order of choice (2026-12-06, same dev questions): relevance alone .386, relevance then the named
complement .404, the named complement first .442 (HotpotQA .376 / .388 / .509; PubMedQA .659 /
.682 / .674; QASPER .123 / .142 / .142): the navigator reads the named complement first.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import mean


def order_of_choice(data_dir: Path, split: str = "dev") -> dict[str, dict[str, float]]:
    """Mean paper-set F1 per source of: the first document alone, relevance selection, relevance
    then the named complement, the named complement first (the shipped reader's calibration)."""
    from vectree.retrieval.rerank.calibrate import relevance_prob, select
    from vectree.retrieval.rerank.coverage import CANDIDATES, _bm25_ranker, dev_sources, question_terms, text_terms
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.rerank.second_paper import named_terms, paper_set_f1 as f1, second_paper

    reader = get_reader()
    cal = reader.config.calibration
    papers, min_share = cal["papers"], cal["second_paper"]["min_share"]

    def run(texts, questions):
        corpus = {k: text_terms(v) for k, v in texts.items()}
        rank, keys = _bm25_ranker(texts), list(texts)
        out: dict[str, list[float]] = {"first only": [], "relevance": [], "relevance, then named": [],
                                       "named first": []}
        for question, own in questions:
            own = frozenset([own]) if isinstance(own, str) else frozenset(own)
            top = rank(question, keys)[:CANDIDATES]
            if not question_terms(question) or len(top) < 2:
                continue
            # a paper is judged by its opening, as Layer 0's entries are (128 word pieces)
            probs = relevance_prob(reader.score(question, [" ".join(texts[k])[:1500] for k in top], max_len=128), cal)
            order = sorted(range(len(top)), key=lambda i: -probs[i])
            top, probs = [top[i] for i in order], [float(probs[i]) for i in order]
            chosen = sorted((top[i] for i in select(probs, papers["threshold"], papers["margin"])), key=top.index)[:2]
            held = [corpus[k] for k in top]
            j, share = second_paper(named_terms(question), held[0], held[1:], held)
            named = top[1 + j] if j >= 0 and share >= min_share else None
            out["first only"].append(f1(top[:1], own))
            out["relevance"].append(f1(chosen, own))
            out["relevance, then named"].append(f1(chosen + [named] if named and len(chosen) < 2 else chosen, own))
            out["named first"].append(f1([top[0], named] if named else chosen, own))
        return {k: mean(v) for k, v in out.items()}

    return {src: run(texts, questions) for src, (texts, questions) in dev_sources(data_dir, split).items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--write", default=None, help="a reader folder whose config.json gets the block")
    args = ap.parse_args()
    from vectree.retrieval.rerank.second_paper import calibrate_second_paper, second_paper_episodes
    from vectree.retrieval.rerank.train import resolve_data_dir

    data = resolve_data_dir(args.data)
    block, curve = calibrate_second_paper(second_paper_episodes(data))
    sources = list(block["questions"])
    print("| least share | " + " | ".join(f"{s} added | {s} F1 change" for s in sources) + " | mean F1 change |")
    print("|---:|" + "---:|---:|" * len(sources) + "---:|")
    for r in curve:
        mark = " **chosen**" if r["min_share"] == block["min_share"] else ""
        print(f"| {r['min_share']}{mark} | " + " | ".join(
            f"{r[f'{s}_added']:.3f} | {r[f'{s}_f1_change']:+.3f}" for s in sources) + f" | {r['mean_f1_change']:+.3f} |")
    print(json.dumps(block))
    if args.write:
        path = Path(args.write) / "config.json"
        cfg = json.loads(path.read_text())
        cfg.setdefault("calibration", {})["second_paper"] = block
        path.write_text(json.dumps(cfg, indent=1))
        print(f"recorded in {path}")
    res = order_of_choice(data)
    print("\n| order of choice | " + " | ".join(sources) + " | mean |")
    print("|---|" + "---:|" * (len(sources) + 1))
    for name in next(iter(res.values())):
        vals = [res[s][name] for s in sources]
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in vals) + f" | {mean(vals):.3f} |")


if __name__ == "__main__":
    main()
