"""Does the corpus hold what a question names?  Off-corpus detection from the question's words.

A question about a paper that is not in the corpus usually names things (a dataset, a hospital, a
method) that no paper of the corpus contains, while the reader still finds near-topic sentences
and scores them as fairly relevant: in ``benchmarks/bench_ask_latency.py``'s store of 39 PDFs,
relevance alone answered 40 of 40 QASPER training questions about papers the store does not hold
(best-paper and best-evidence relevance .34 to .79, the calibrated floor .35).

:func:`coverage` is the IDF-weighted share of the question's words (Layer 0's analyser,
:mod:`vectree.retrieval.words`) that a paper contains, with the IDF taken over the candidate
papers themselves: a word every candidate holds ("model", "dataset") weighs little, a word none
holds weighs most.  The agent abstains when even the best-covered candidate falls below a floor
calibrated on training-side episodes (:func:`calibrate_coverage`): each dev question asked of a
corpus that holds its document (it must be answered) and of the same corpus without it (it should
not be).  The floor is the highest that still answers :data:`KEEP` of the questions whose
document is there, so a real question loses an answer rarely; what it buys off-corpus is measured
and kept with the floor.

The same question asked *of a paper that lacks the answer* (QASPER's unanswerable questions,
DragonBall's unsolvable ones: "What was the cash flow of Energex in 2021?" asked of Energex's
report) passes both floors: the paper is the right one and its sentences are on topic.  What is
missing is a passage holding what the question names.  :func:`passage_coverage` is the same
share, taken over the paper's passages (a window of :data:`WINDOW` neighbours either side; 0:
each passage alone) with the IDF over those passages: the company's name and the year are in every window and weigh little, "cash flow"
is in none and weighs most.  Its floor (``calibration.passage_coverage``) is chosen by the same
rule on training-side papers (:func:`passage_episodes`): the highest that still answers
:data:`KEEP` of the questions asked of their own document, per source; what it abstains on is
measured on the same questions asked of a document without their evidence.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

from vectree.retrieval.words import analyze

KEEP = 0.95  # the share of in-corpus dev questions the floor must still answer
CANDIDATES = 5  # the Layer-0 papers a question's coverage is measured over
# papers whose words count together: a question can need two (HotpotQA's bridge and comparison
# questions; "Compare A's and B's acquisitions" over two company reports).  One paper alone abstained
# on 29 % of HotpotQA dev questions whose two paragraphs were in the corpus (floor .35 chosen on
# single-document questions only) and on 21 of DragonBall's 69 two-report questions
TOGETHER = 2
# passages either side of one that make a window (passage_coverage).  Chosen on the training-side
# episodes of passage_episodes (radius 0 / 1 / 2 / 3: answerable-vs-unanswerable AUROC QASPER .581 /
# .570 / .564 / .559, HotpotQA .835 / .849 / .824 / .829, PubMedQA .925 / .902 / .888 / .876; floor at
# 95 % kept .20 / .10 / .10 / .05): one passage alone separates best, its neighbours add more words
# to the unanswerable windows than to the answerable ones
WINDOW = 0
GRID = tuple(round(0.05 * i, 2) for i in range(0, 20))


# the question words Tantivy's English stop list keeps: asked in every question, named by none
_ASKING = frozenset(analyze("what which who whom whose when where why how do does did can could would should"))


def question_terms(question: str) -> list[str]:
    """The question's distinct analysed words, in order (stop and question words gone, stemmed)."""
    return [t for t in dict.fromkeys(analyze(question)) if t not in _ASKING]


def text_terms(texts: Iterable[str]) -> frozenset[str]:
    """Every analysed word of ``texts`` (a paper's passages)."""
    out: set[str] = set()
    for t in texts:
        out.update(analyze(t))
    return frozenset(out)


def term_weights(terms: Sequence[str], candidates: Sequence[frozenset[str]]) -> list[float]:
    """BM25's IDF of each term over ``candidates`` (never negative): ``log(1 + (n - df + .5) / (df + .5))``."""
    n = len(candidates)
    return [math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            for df in (sum(1 for c in candidates if t in c) for t in terms)]


def coverage(terms: Sequence[str], paper: frozenset[str], candidates: Sequence[frozenset[str]]) -> float:
    """The IDF-weighted share of ``terms`` found in ``paper`` (IDF over ``candidates``); 1.0 when
    the question has no terms (nothing it names is missing)."""
    if not terms:
        return 1.0
    return _scorer(terms, candidates)(paper)


def _scorer(terms: Sequence[str], candidates: Sequence[frozenset[str]]):
    """:func:`coverage` against fixed ``candidates`` as a function of the words held, the weights
    computed once (a paper's passages are hundreds of candidates: per call they cost O(n))."""
    weights = term_weights(terms, candidates)
    total = sum(weights)

    def share(words: frozenset[str]) -> float:
        return sum(w for t, w in zip(terms, weights) if t in words) / total if total else 1.0

    return share


def best_coverage(terms: Sequence[str], candidates: Sequence[frozenset[str]], together: int = 1) -> float:
    """The best :func:`coverage` among the candidates, or among unions of up to ``together`` of
    them (a question that compares two companies is answered by two reports, each naming one);
    0.0 without candidates."""
    if not terms:
        return 1.0 if candidates else 0.0
    share = _scorer(terms, candidates)
    best = max((share(c) for c in candidates), default=0.0)
    if together >= 2:
        for a, b in itertools.combinations(range(len(candidates)), 2):
            best = max(best, share(candidates[a] | candidates[b]))
    return best


def passage_windows(passage_terms: Sequence[frozenset[str]], radius: int = 0) -> list[frozenset[str]]:
    """The words of each passage together with its ``radius`` neighbours on either side (an
    answer often takes two sentences: "X acquired Y." "The deal was worth ...")."""
    n = len(passage_terms)
    return [frozenset().union(*passage_terms[max(0, i - radius):i + radius + 1]) for i in range(n)]


def passage_coverage(terms: Sequence[str], passage_terms: Sequence[frozenset[str]], radius: int = WINDOW) -> float:
    """The best IDF-weighted share of ``terms`` held by one window of a paper's passages (IDF over
    the windows); 1.0 for a question without terms, 0.0 for a paper without passages."""
    return papers_passage_coverage(terms, [passage_terms], radius)


def papers_passage_coverage(terms: Sequence[str], papers: Sequence[Sequence[frozenset[str]]],
                            radius: int = WINDOW, shortlist: int = 16) -> float:
    """:func:`passage_coverage` of a question read in several papers: the best window of any paper,
    or the union of two windows of *different* papers (each report of a comparison holds its own
    half), with the IDF over every window of those papers; 0.0 without passages.  Pairs are tried
    among each paper's ``shortlist`` best windows (one paper: the best window alone)."""
    if not terms:
        return 1.0
    windows = [passage_windows(p, radius) for p in papers]
    every = [w for ws in windows for w in ws]
    if not every:
        return 0.0
    share = _scorer(terms, every)
    best = max(share(w) for w in every)
    short = [sorted(ws, key=lambda w: -share(w))[:shortlist] for ws in windows]
    for i, j in itertools.combinations(range(len(short)), 2):
        for a in short[i]:
            for b in short[j]:
                best = max(best, share(a | b))
    return best


# ---- calibration (training-side data only) ---------------------------------------------------
def _episodes(corpus: dict[str, frozenset[str]], questions: Sequence[tuple[str, str | frozenset[str]]], rank
              ) -> tuple[list[float], list[float]]:
    """``(in-corpus, off-corpus)`` best coverage (up to :data:`TOGETHER` documents together) of each
    ``(question, own doc key or keys)``: the question's :data:`CANDIDATES` best documents by
    ``rank(question, keys) -> keys`` with and without its own."""
    keys = list(corpus)
    inside, outside = [], []
    for question, own in questions:
        own = frozenset([own]) if isinstance(own, str) else frozenset(own)
        terms = question_terms(question)
        if not terms:
            continue
        with_own = rank(question, keys)[:CANDIDATES]
        without = rank(question, [k for k in keys if k not in own])[:CANDIDATES]
        inside.append(best_coverage(terms, [corpus[k] for k in with_own], TOGETHER))
        outside.append(best_coverage(terms, [corpus[k] for k in without], TOGETHER))
    return inside, outside


def _bm25_ranker(corpus_texts: dict[str, list[str]]):
    """Documents ranked by BM25 of the question over each document's words (Layer 0's lexical half)."""
    from collections import Counter

    bags = {k: Counter(w for t in texts for w in analyze(t)) for k, texts in corpus_texts.items()}
    lengths = {k: sum(b.values()) for k, b in bags.items()}
    avg = sum(lengths.values()) / max(len(lengths), 1)
    df: Counter = Counter()
    for b in bags.values():
        df.update(b.keys())
    n = len(bags)

    def rank(question: str, keys: Sequence[str]) -> list[str]:
        terms = question_terms(question)

        def score(k: str) -> float:
            b, s = bags[k], 0.0
            for t in terms:
                tf = b.get(t, 0)
                if tf:
                    idf = math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[k] / avg))
            return s

        return sorted(keys, key=lambda k: (-score(k), k))

    return rank


def dev_sources(data_dir: Path, split: str = "dev") -> dict[str, tuple[dict[str, list[str]], list[tuple[str, Any]]]]:
    """The reader's training-side document collections, each ``(texts by document key, questions of
    split with their own key or keys)``: QASPER dev-dictionary articles (their evidence paragraphs
    among the rest; never an evaluation paper) and PubMedQA abstracts, one document per question,
    and HotpotQA paragraphs, two per question (:func:`_hotpotqa_paragraphs`)."""
    from vectree.retrieval.sprout.data import qasper_docs

    from .data import eval_article_ids, pubmedqa_split, read_pubmedqa

    data_dir = Path(data_dir)
    excluded = eval_article_ids(data_dir)
    docs = [d for d in qasper_docs(data_dir) if d.key not in excluded]
    out: dict[str, tuple[dict[str, list[str]], list[tuple[str, Any]]]] = {
        "qasper": ({d.key: list(d.chunks) for d in docs},
                   [(q.text, d.key) for d in docs if d.split == split for q in d.queries])}
    abstracts, rows = read_pubmedqa(data_dir)
    out["pubmedqa"] = (abstracts, [(str(r["question"]), str(r["pmid"])) for r in rows
                                   if pubmedqa_split(str(r["pmid"])) == split and str(r["pmid"]) in abstracts])
    out["hotpotqa"] = _hotpotqa_paragraphs(data_dir, split)
    return out


def training_episodes(data_dir: Path, *, split: str = "dev") -> dict[str, tuple[list[float], list[float]]]:
    """In- and off-corpus best coverage per source of :func:`dev_sources` (for HotpotQA's
    two-document questions both supporting paragraphs are taken out for the off-corpus episode);
    the questions of ``split`` only (the reader's split of each source)."""
    return {src: _episodes({k: text_terms(v) for k, v in texts.items()}, questions, _bm25_ranker(texts))
            for src, (texts, questions) in dev_sources(data_dir, split).items()}


def _hotpotqa_paragraphs(data_dir: Path, split: str) -> tuple[dict[str, list[str]], list[tuple[str, frozenset[str]]]]:
    """HotpotQA's IRCoT paragraphs of the reader's train and dev questions as documents (keyed by
    title) and the ``split`` questions with their two supporting titles: multi-document questions."""
    from vectree.retrieval.datasets import read_hotpotqa_ircot
    from vectree.retrieval.sprout.data import hotpotqa_split

    texts: dict[str, list[str]] = {}
    questions = []
    for row in read_hotpotqa_ircot(Path(data_dir) / "hotpotqa"):
        which = hotpotqa_split(row.question_id)
        if which == "test":  # never read: the SproutRAG and reader test questions
            continue
        own = set()
        for title, para, supporting in row.paragraphs:
            texts.setdefault(title, [f"{title}: {' '.join(para.split())}"])
            if supporting:
                own.add(title)
        if which == split and own:
            questions.append((row.question, frozenset(own)))
    return texts, questions


def passage_episodes(data_dir: Path, *, split: str = "dev") -> dict[str, tuple[list[float], list[float]]]:
    """Per source, :func:`passage_coverage` of each ``split`` question over its own document
    (``answerable``) and over a document without its evidence (``unanswerable``):

    * QASPER dev-dictionary articles as the dev papers of :func:`.pages.dev_papers` (the question's
      evidence paragraphs among other articles' paragraphs; never an evaluation paper); without
      its evidence: the same paper with the question's evidence chunks taken out;
    * HotpotQA (the reader's split by question): the question's ten paragraphs; without: the eight
      distractors, chosen by the dataset for sharing the question's words;
    * PubMedQA (split by pmid): the question's abstract; without: the abstract BM25 ranks first
      among the others.
    """
    from vectree.retrieval.sprout.data import hotpotqa_docs

    from .data import pubmedqa_split, read_pubmedqa
    from .pages import dev_papers

    data_dir = Path(data_dir)
    out: dict[str, tuple[list[float], list[float]]] = {}

    def episode(terms, texts, keep_mask) -> tuple[float, float]:
        words = [frozenset(analyze(t)) for t in texts]
        return (passage_coverage(terms, words),
                passage_coverage(terms, [w for w, keep in zip(words, keep_mask) if keep]))

    answerable, unanswerable = [], []
    for paper in dev_papers(data_dir, split=split):
        for (question, _), evidence in zip(paper.questions, paper.evidence):
            terms = question_terms(question)
            if not terms or not evidence:
                continue
            a, u = episode(terms, paper.chunks, [i not in evidence for i in range(len(paper.chunks))])
            answerable.append(a)
            unanswerable.append(u)
    out["qasper"] = (answerable, unanswerable)

    answerable, unanswerable = [], []
    for doc in hotpotqa_docs(data_dir):
        if doc.split != split:
            continue
        for q in doc.queries:
            terms = question_terms(q.text)
            if not terms or not q.positives:
                continue
            gone = {doc.para[i] for i in q.positives}
            a, u = episode(terms, doc.chunks, [p not in gone for p in doc.para])
            answerable.append(a)
            unanswerable.append(u)
    out["hotpotqa"] = (answerable, unanswerable)

    abstracts, rows = read_pubmedqa(data_dir)
    rank = _bm25_ranker(abstracts)
    keys = list(abstracts)
    answerable, unanswerable = [], []
    for r in rows:
        pmid = str(r["pmid"])
        if pubmedqa_split(pmid) != split or pmid not in abstracts:
            continue
        terms = question_terms(str(r["question"]))
        if not terms:
            continue
        nearest = next(k for k in rank(str(r["question"]), keys) if k != pmid)
        answerable.append(passage_coverage(terms, [frozenset(analyze(t)) for t in _sentences(abstracts[pmid])]))
        unanswerable.append(passage_coverage(terms, [frozenset(analyze(t)) for t in _sentences(abstracts[nearest])]))
    out["pubmedqa"] = (answerable, unanswerable)
    return out


def _sentences(parts: Sequence[str]) -> list[str]:
    from .data import sentences_of

    return [s for part in parts for s in sentences_of(part)]


def calibrate_coverage(episodes: dict[str, tuple[list[float], list[float]]], *, keep: float = KEEP,
                       candidates: int | None = CANDIDATES) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The floor: the highest of :data:`GRID` that answers at least ``keep`` of the in-corpus
    questions of *every* source; with what it answers and abstains on, per source, and the curve.
    (For :func:`passage_episodes` "in-corpus" reads "asked of its own document".)"""
    curve = []
    for t in GRID:
        row: dict[str, Any] = {"threshold": t}
        for src, (inside, outside) in episodes.items():
            row[f"{src}_answered_in"] = sum(c >= t for c in inside) / max(len(inside), 1)
            row[f"{src}_abstained_off"] = sum(c < t for c in outside) / max(len(outside), 1)
        curve.append(row)
    allowed = [r for r in curve if all(r[f"{s}_answered_in"] >= keep for s in episodes)]
    chosen = max(allowed, key=lambda r: r["threshold"]) if allowed else curve[0]
    block = {"min_coverage": chosen["threshold"], "keep": keep,
             **({"candidates": candidates, "together": TOGETHER} if candidates else {}),
             "questions": {s: len(v[0]) for s, v in episodes.items()},
             **{k: round(v, 4) for k, v in chosen.items() if k != "threshold"}}
    return block, curve


def calibrate_passage_coverage(data_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The in-paper floor (``calibration.passage_coverage``): :func:`calibrate_coverage` over
    :func:`passage_episodes`, with the window it was measured with."""
    block, curve = calibrate_coverage(passage_episodes(Path(data_dir)), candidates=None)
    return {**block, "window": WINDOW}, curve
