"""Pages scored as pages: does pooling the candidates of a page cite better pages than the best
candidate alone?  (issue 16, item 4; an experiment on training-side dev papers.)

    .venv/bin/python benchmarks/exp_page_aggregation.py [--data ../shared/data] [--split dev|train]

The navigator cites the candidates (the reader-reranked sentences of ``search_within_paper``) whose
calibrated relevance passes a threshold and lies within a margin of the best, at most three, and
so the pages they lie on (:func:`vectree.retrieval.rerank.pages.cited_pages`).  A page holding three
fairly relevant sentences then counts for no more than a page holding one.  Here each page gets a
score from all its candidates and pages are selected by that score with the same threshold x
margin x most-cited grid:

* ``max``: the best candidate's relevance (what the navigator does, page by page);
* ``noisy-or``: 1 - prod(1 - r) over the page's candidates (independent evidence);
* ``sum``: the sum of the candidates' relevance, capped at 1;
* ``mean-top2``: the mean of the page's two best (one candidate counts with a 0).

Episodes are those the page selection is calibrated on (:func:`.pages.episodes`: QASPER dev-split
articles padded with other articles' paragraphs, pages of 3,500 characters, k = 12 candidates); the
``train`` split is a second check.  Printed: each rule's best point (mean page F1) and the precision
it reaches at a few recall levels.

Measured 7 December (session 15), shipped reader, dev split (141 questions, 1.70 gold pages each;
micro P / R over all questions, 3 min):

| rule | best point | P | R | mean page F1 | pages | best P at R >= .45 | at R >= .55 |
|---|---|---:|---:|---:|---:|---:|---:|
| **max** | .1 / .1 / 4 | **.375** | .481 | **.462** | 2.18 | **.391** | **.319** |
| noisy-or | .4 / .3 / 4 | .350 | .477 | .428 | 2.31 | .361 | .313 |
| sum | .5 / 1.0 / 3 | .355 | .519 | .426 | 2.48 | .355 | .313 |
| mean-top2 | .25 / .3 / 4 | .358 | .502 | .432 | 2.38 | .358 | .313 |

Pooling a page's candidates cites worse pages than its best candidate at every recall level shown:
on these papers a page's second and third candidates add no evidence its best one lacks (why was
not examined).
Not built; the ``train`` check was not needed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()

REPO = Path(__file__).resolve().parents[1]
RULES = ("max", "noisy-or", "sum", "mean-top2")


def page_scores(pages, relevance, rule: str) -> dict[int, float]:
    by_page: dict[int, list[float]] = {}
    for p, r in zip(pages, relevance):
        by_page.setdefault(p, []).append(float(r))
    out = {}
    for p, rs in by_page.items():
        rs = sorted(rs, reverse=True)
        if rule == "max":
            out[p] = rs[0]
        elif rule == "noisy-or":
            out[p] = 1.0 - float(np.prod([1.0 - r for r in rs]))
        elif rule == "sum":
            out[p] = min(1.0, sum(rs))
        elif rule == "mean-top2":
            out[p] = (rs[0] + (rs[1] if len(rs) > 1 else 0.0)) / 2
        else:
            raise ValueError(rule)
    return out


def cite(scores: dict[int, float], threshold: float, margin: float, most: int) -> set[int]:
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    best = ranked[0][1]
    chosen = [p for p, s in ranked if s >= threshold and s >= best - margin] or [ranked[0][0]]
    return set(chosen[:most])


def evaluate(eps, rule: str, threshold: float, margin: float, most: int) -> tuple[float, float, float, float]:
    tp = fp = fn = 0
    f1s, n = [], []
    for e in eps:
        cited = cite(page_scores(e.pages, e.relevance, rule), threshold, margin, most)
        hit = len(cited & e.gold)
        tp, fp, fn = tp + hit, fp + len(cited) - hit, fn + len(e.gold) - hit
        f1s.append(2 * hit / (len(cited) + len(e.gold)) if hit else 0.0)
        n.append(len(cited))
    return tp / max(1, tp + fp), tp / max(1, tp + fn), float(np.mean(f1s)), float(np.mean(n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--split", default="dev", choices=["dev", "train"])
    args = ap.parse_args()
    from vectree.retrieval.embed import get_embedder
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.rerank.pages import dev_papers, episodes

    reader = get_reader()
    papers = dev_papers(Path(args.data), split=args.split)
    eps = [e for e in episodes(reader, papers, get_embedder()) if e.gold]
    print(f"{args.split}: {len(eps)} questions with gold pages on {len(papers)} papers; "
          f"{np.mean([len(e.gold) for e in eps]):.2f} gold pages a question")
    grid = [(t, m, c) for t in (0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6) for m in (0.05, 0.1, 0.2, 0.3, 1.0)
            for c in (1, 2, 3, 4)]
    print("| rule | best point (threshold / margin / most) | P | R | mean page F1 | pages | "
          "best P at R >= .45 | at R >= .55 | at R >= .65 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for rule in RULES:
        points = [(evaluate(eps, rule, t, m, c), (t, m, c)) for t, m, c in grid]
        (p, r, f, n), at = max(points, key=lambda x: (x[0][2], -x[0][3]))

        def best_p(floor: float) -> str:
            ok = [x[0][0] for x in points if x[0][1] >= floor]
            return f"{max(ok):.3f}" if ok else "-"

        print(f"| {rule} | {at[0]} / {at[1]} / {at[2]} | {p:.3f} | {r:.3f} | {f:.3f} | {n:.2f} | "
              f"{best_p(.45)} | {best_p(.55)} | {best_p(.65)} |", flush=True)


if __name__ == "__main__":
    main()
