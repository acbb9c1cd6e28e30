"""Does a question need a second paper?  When it names something the best paper lacks.

"Compare the acquisitions of CleanCo Housekeeping Services in 2018 and Retail Emporium in 2020"
is answered by two company reports.  The reader ranks CleanCo's report first and scores Retail
Emporium's (.36) no higher than the other companies' (.33-.45): a report is judged by its title and
one matched section, and each half of the question is only half relevant to it.  So relevance
alone (the calibrated paper threshold and margin) reads one report.

What tells the two apart is what the question *names*: :func:`named_terms` are the analysed words
the question writes with a capital or with digits ("CleanCo", "Retail", "Emporium", "H2O"), the
names of companies, people, places, datasets and methods.  When the best paper lacks some of them
and another of the Layer-0 candidates holds them, the question is about two things the corpus
keeps apart, and that candidate is read as well (:func:`second_paper`).  A question one paper
answers names what that paper holds, so it seldom adds one.

A broader rule was tried first (``benchmarks/dev_second_paper.py``'s history): add the candidate
that adds the most IDF-weighted coverage of *all* the question's words.  Its best point changed the
mean paper-set F1 of training-side dev questions by +.002 (QASPER -.033, PubMedQA -.023, HotpotQA
+.063): a one-document question's other candidates also hold some of its common words.  Restricted
to named words it gains +.046 on the same questions (QASPER -.002, PubMedQA -.019, HotpotQA +.158),
and +.032 on the training split, which chose nothing.  A question in title case capitalises
every word, so there only acronyms and names with digits count.  The navigator also holds the
paper read this way to the best paper's abstention rule (its relevance and its best evidence's,
averaged, must reach the calibrated threshold): a name alone does not make a paper the answer's
second half.

The least share of the named words' IDF weight the second paper must add is calibrated by
:func:`calibrate_second_paper` on :func:`second_paper_episodes` (dev questions of QASPER dev
articles and PubMedQA abstracts, which need one document, and HotpotQA's, which need two; each
source counts the same) and kept in the reader's config as ``calibration.second_paper``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

from vectree.retrieval.words import analyze

from .coverage import CANDIDATES, GRID, _bm25_ranker, dev_sources, question_terms, term_weights, text_terms

_TOKEN = re.compile(r"[A-Za-z0-9][\w\-'.&]*")


def named_terms(question: str) -> list[str]:
    """The question's analysed words (:func:`~.coverage.question_terms`) that it writes with a
    capital letter (its first word only when all capitals, an acronym) or with letters and digits
    mixed ("GPT-4", "H2O"): what it names, in order."""
    tokens = _TOKEN.findall(question)
    words = [t for t in tokens[1:] if t[0].isalpha() and len(analyze(t)) > 0]
    # a question in title case ("Can a Novel Surgical Approach Improve Access?") capitalises
    # everything: then only its acronyms and names with digits name something
    # (nearly every content word capitalised: "Compare the Board of Directors changes of Vanguard Media
    # Group and StrongBuild Construction" still has its "changes")
    title_case = len(words) >= 4 and sum(t[0].isupper() for t in words) >= 0.9 * len(words)
    named: list[str] = []
    for i, token in enumerate(tokens):
        acronym = token.isupper() and len(token) > 1
        mixed = any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
        if (i > 0 and token[0].isupper() and not title_case) or acronym or mixed:
            named.extend(analyze(token))
    asked = set(question_terms(question))
    return [t for t in dict.fromkeys(named) if t in asked]


def second_paper(named: Sequence[str], first: frozenset[str], others: Sequence[frozenset[str]],
                 candidates: Sequence[frozenset[str]]) -> tuple[int, float]:
    """``(index into others, share)``: the paper that holds the largest IDF-weighted share (IDF
    over ``candidates``, the first paper among them) of the ``named`` words that ``first`` lacks;
    ``(-1, 0.0)`` when ``first`` holds them all or no other paper holds any.  Ties go to the
    earlier (better ranked) paper."""
    if not named:
        return -1, 0.0
    weights = dict(zip(named, term_weights(named, candidates)))
    total = sum(weights.values())
    missing = [t for t in named if t not in first]
    best, share = -1, 0.0
    for j, other in enumerate(others):
        s = sum(weights[t] for t in missing if t in other) / total if total else 0.0
        if s > share:
            best, share = j, s
    return best, share


def paper_set_f1(chosen: Sequence[str], gold: frozenset[str]) -> float:
    """F1 of the papers read (``chosen``) against the papers that hold the answer."""
    hit = len(set(chosen) & gold)
    return 0.0 if not hit else 2 * hit / (len(chosen) + len(gold))


def second_paper_episodes(data_dir: Path, *, split: str = "dev") -> dict[str, list[tuple[float, float]]]:
    """Per source, ``(share, change of paper-set F1 when that paper is added)`` of each ``split``
    question over its :data:`~.coverage.CANDIDATES` best documents by BM25 (the first is the one
    read anyway).  QASPER dev-dictionary articles (never an evaluation paper) and PubMedQA abstracts
    need one document; HotpotQA's questions two."""

    def run(texts: dict[str, list[str]], questions) -> list[tuple[float, float]]:
        corpus = {k: text_terms(v) for k, v in texts.items()}
        rank, keys, out = _bm25_ranker(texts), list(texts), []
        for question, own in questions:
            own = frozenset([own]) if isinstance(own, str) else frozenset(own)
            top = rank(question, keys)[:CANDIDATES]
            if not question_terms(question) or len(top) < 2:
                continue
            cands = [corpus[k] for k in top]
            j, share = second_paper(named_terms(question), cands[0], cands[1:], cands)
            out.append((share, paper_set_f1(top[:1] + [top[1 + j]], own) - paper_set_f1(top[:1], own)
                        if j >= 0 else 0.0))
        return out

    return {src: run(texts, questions) for src, (texts, questions) in dev_sources(data_dir, split).items()}


def calibrate_second_paper(episodes: dict[str, list[tuple[float, float]]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The least share of the named words a second paper must add to be read: the point of
    :data:`~.coverage.GRID` (above 0; 1.01 is "never") with the best mean change of paper-set F1,
    the sources averaged (each counts the same, so two-document questions are not outvoted by
    the one-document sources); ties go to the higher, more cautious, share.  With the curve."""
    curve = []
    for t in [g for g in GRID if g > 0] + [1.01]:
        row: dict[str, Any] = {"min_share": t}
        for src, eps in episodes.items():
            row[f"{src}_added"] = sum(s >= t for s, _ in eps) / max(len(eps), 1)
            row[f"{src}_f1_change"] = sum(d for s, d in eps if s >= t) / max(len(eps), 1)
        row["mean_f1_change"] = sum(row[f"{s}_f1_change"] for s in episodes) / max(len(episodes), 1)
        curve.append(row)
    chosen = max(curve, key=lambda r: (round(r["mean_f1_change"], 3), r["min_share"]))
    block = {**{k: round(v, 4) for k, v in chosen.items()}, "candidates": CANDIDATES,
             "questions": {s: len(e) for s, e in episodes.items()}}
    return block, curve
