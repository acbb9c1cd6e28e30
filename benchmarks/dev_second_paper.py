"""Should the agent read a second paper when one more would cover the question's words?  Not adopted.

    .venv/bin/python benchmarks/dev_second_paper.py [--data ../shared/data]

``dragonball_multi`` showed the agent citing one report for 43 of the 66 two-report questions it
answered: its paper selection (calibrated relevance, threshold and margin) often drops the second
company's report, whose reranked relevance (.33-.41) is no higher than other companies'.  The rule
tried here: after the best paper, add the one of the five best whose words, joined with the best
paper's, add the most IDF-weighted coverage of the question (:func:`complement`), when that gain is
at least ``min_gain``.  Calibrated on training-side dev questions only (QASPER dev articles and
PubMedQA abstracts need one document, HotpotQA's questions two; BM25's five best documents, the
first one read): the change of paper-set F1 per source, averaged over the sources.

Result (2026-12-06, 141 / 87 / 58 dev questions, 5 s): the best point (min gain .25-.30) changes the
mean F1 by +.002 (QASPER -.033, PubMedQA -.023, HotpotQA +.063): no better than never adding, so the
rule was not built into the navigator.  A one-document question's other candidates also hold some
of its words, so the gain does not tell a needed second paper from a redundant one.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

from vectree.retrieval.rerank.coverage import (CANDIDATES, GRID, _bm25_ranker, _hotpotqa_paragraphs, coverage,
                                               question_terms, text_terms)


def complement(terms: Sequence[str], first: frozenset[str], others: Sequence[frozenset[str]],
               candidates: Sequence[frozenset[str]]) -> tuple[int, float]:
    """``(index into others, gain)`` of the paper whose words, joined with ``first``'s, add the most
    :func:`coverage` (IDF over ``candidates``); ``(-1, 0.0)`` without others.  A question naming two
    companies gains half its weight from the second company's report; a question one paper answers
    gains little from any other."""
    base = coverage(terms, first, candidates)
    best, gain = -1, 0.0
    for j, other in enumerate(others):
        g = coverage(terms, first | other, candidates) - base
        if g > gain:
            best, gain = j, g
    return best, gain


def second_paper_episodes(data_dir: Path, *, split: str = "dev") -> dict[str, list[tuple[float, float]]]:
    """Per source, ``(gain, F1 of the paper set with the complement added - F1 without)`` of each
    ``split`` question over its :data:`CANDIDATES` best documents by BM25 (the first is the one the
    agent reads; the complement is :func:`complement`'s).  QASPER and PubMedQA questions need one
    document, HotpotQA's two."""
    from vectree.retrieval.rerank.data import eval_article_ids, pubmedqa_split, read_pubmedqa
    from vectree.retrieval.sprout.data import qasper_docs

    def f1(chosen: Sequence[str], gold: frozenset[str]) -> float:
        hit = len(set(chosen) & gold)
        return 0.0 if not hit else 2 * hit / (len(chosen) + len(gold))

    def run(texts: dict[str, list[str]], questions) -> list[tuple[float, float]]:
        corpus = {k: text_terms(v) for k, v in texts.items()}
        rank, keys, out = _bm25_ranker(texts), list(texts), []
        for question, own in questions:
            own = frozenset([own]) if isinstance(own, str) else frozenset(own)
            terms = question_terms(question)
            top = rank(question, keys)[:CANDIDATES]
            if not terms or len(top) < 2:
                continue
            cands = [corpus[k] for k in top]
            j, gain = complement(terms, cands[0], cands[1:], cands)
            out.append((gain, f1(top[:1] + [top[1 + j]], own) - f1(top[:1], own)))
        return out

    data_dir = Path(data_dir)
    excluded = eval_article_ids(data_dir)
    docs = [d for d in qasper_docs(data_dir) if d.key not in excluded]
    out = {"qasper": run({d.key: list(d.chunks) for d in docs},
                         [(q.text, d.key) for d in docs if d.split == split for q in d.queries])}
    abstracts, rows = read_pubmedqa(data_dir)
    out["pubmedqa"] = run(abstracts, [(str(r["question"]), str(r["pmid"])) for r in rows
                                      if pubmedqa_split(str(r["pmid"])) == split and str(r["pmid"]) in abstracts])
    texts, questions = _hotpotqa_paragraphs(data_dir, split)
    out["hotpotqa"] = run(texts, questions)
    return out


def calibrate_second_paper(episodes: dict[str, list[tuple[float, float]]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The least gain for which a second paper is read: the point of :data:`GRID` (and "never")
    with the best mean change of paper-set F1, averaged over the sources (each counts the same, so
    HotpotQA's two-document questions weigh as much as the one-document sources together do not
    outvote them)."""
    curve = []
    for t in list(GRID[1:]) + [1.01]:
        row: dict[str, Any] = {"min_gain": t}
        for src, eps in episodes.items():
            row[f"{src}_f1_change"] = sum(d for g, d in eps if g >= t) / max(len(eps), 1)
            row[f"{src}_added"] = sum(g >= t for g, _ in eps) / max(len(eps), 1)
        row["mean_f1_change"] = sum(row[f"{s}_f1_change"] for s in episodes) / max(len(episodes), 1)
        curve.append(row)
    chosen = max(curve, key=lambda r: (round(r["mean_f1_change"], 6), r["min_gain"]))
    block = {**{k: round(v, 4) for k, v in chosen.items()}, "candidates": CANDIDATES,
             "questions": {s: len(e) for s, e in episodes.items()}}
    return block, curve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    args = ap.parse_args()
    block, curve = calibrate_second_paper(second_paper_episodes(Path(args.data)))
    sources = list(block["questions"])
    print("| min gain | " + " | ".join(f"{s} added | {s} F1 change" for s in sources) + " | mean F1 change |")
    print("|---:|" + "---:|---:|" * len(sources) + "---:|")
    for r in curve:
        print(f"| {r['min_gain']} | " + " | ".join(f"{r[f'{s}_added']:.3f} | {r[f'{s}_f1_change']:+.3f}" for s in sources)
              + f" | {r['mean_f1_change']:+.3f} |")
    print("best:", block)


if __name__ == "__main__":
    main()
