"""Lexical evidence for SproutRAG's node scorer: BM25 of the query's words in each node's chunks.

MiniLM's cosine misses what a word match sees: on DragonBall's finance reports a company's name,
a year or an event word decides which paragraph answers, and ranking paragraphs by the cosine plus
a share of their BM25 score lifts IE@1 from .228 to .275 on the training queries
(``benchmarks/dev_lexical_units.py``).  The learned node scorer gets three features from it
(:func:`node_lexical`), and learns how much they count:

* ``lex_cover``: the IDF-weighted share of the query's words that occur in the node;
* ``lex_max_vs_best`` / ``lex_mean_vs_best``: the best and the sentence-weighted mean BM25 of the
  node's chunks, divided by the best chunk's BM25 in the whole search.

All three are ratios, so they mean the same whether the IDF comes from one paper or a corpus.

Words are those of Layer 0's BM25 (:mod:`vectree.retrieval.words`: lower case, ASCII folding,
English stop words, Porter stemming).  A tree's chunk statistics (:class:`LeafTerms`)
are computed once per tree; per query, :class:`QueryLexicon` turns the searched trees' statistics
into per-chunk BM25 scores, with document frequencies summed over those trees (chunks are BM25's
documents, ``k1`` 1.2, ``b`` 0.75).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from vectree.retrieval.words import analyze

from .tree import range_reduce, range_sum

K1, B = 1.2, 0.75
LEXICAL_FEATURES = ("lex_cover", "lex_max_vs_best", "lex_mean_vs_best")


@dataclass
class LeafTerms:
    """One tree's chunk words: ``postings[word] = (chunk ids, counts)``, ``df`` the number of chunks
    holding each word, ``lengths`` each chunk's word count."""

    postings: dict[str, tuple[np.ndarray, np.ndarray]]
    df: Counter
    lengths: np.ndarray

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> "LeafTerms":
        rows: dict[str, tuple[list[int], list[int]]] = {}
        lengths = np.zeros(len(texts), dtype=np.float64)
        for i, text in enumerate(texts):
            counts = Counter(analyze(text))
            lengths[i] = sum(counts.values())
            for word, c in counts.items():
                ids, cs = rows.setdefault(word, ([], []))
                ids.append(i)
                cs.append(c)
        postings = {w: (np.asarray(ids, dtype=np.int64), np.asarray(cs, dtype=np.float64)) for w, (ids, cs) in rows.items()}
        return cls(postings, Counter({w: len(ids) for w, (ids, _) in postings.items()}), lengths)

    @property
    def n_leaves(self) -> int:
        return len(self.lengths)


@dataclass
class LeafLexical:
    """One tree's chunks against one query: ``present[c, t]`` word ``t`` occurs in chunk ``c``,
    ``idf[t]``, ``bm25[c]``."""

    present: np.ndarray  # (n_leaves, n_words) float
    idf: np.ndarray  # (n_words,)
    bm25: np.ndarray  # (n_leaves,)


def query_words(query: str) -> list[str]:
    """The query's distinct BM25 words, in order."""
    return list(dict.fromkeys(analyze(query)))


class QueryLexicon:
    """The searched trees' chunks against one query: IDF and the mean chunk length over all of
    ``terms`` (the trees searched together), each tree's :class:`LeafLexical` computed on first use
    (a corpus-wide search reads only the routed documents' chunks)."""

    def __init__(self, terms: Sequence[LeafTerms], query: str):
        self.terms = terms
        self.words = query_words(query)
        n = sum(t.n_leaves for t in terms)
        self.avg = max(sum(float(t.lengths.sum()) for t in terms) / max(n, 1), 1e-9)
        df = np.array([sum(t.df.get(w, 0) for t in terms) for w in self.words], dtype=np.float64)
        self.idf = np.log1p((n - df + 0.5) / (df + 0.5)) if self.words else np.zeros(0)
        self._cache: dict[int, LeafLexical] = {}

    def __getitem__(self, i: int) -> LeafLexical:
        hit = self._cache.get(i)
        if hit is None:
            t = self.terms[i]
            tf = np.zeros((t.n_leaves, len(self.words)), dtype=np.float64)
            for j, w in enumerate(self.words):
                post = t.postings.get(w)
                if post is not None:
                    tf[post[0], j] = post[1]
            norm = K1 * (1 - B + B * t.lengths / self.avg)
            bm25 = (tf * (K1 + 1) / (tf + norm[:, None]) * self.idf[None, :]).sum(axis=1)
            hit = self._cache[i] = LeafLexical((tf > 0).astype(np.float64), self.idf, bm25)
        return hit


def node_lexical(tree, lex: LeafLexical | None, best_bm25: float) -> np.ndarray:
    """``(n_nodes, 3)``: :data:`LEXICAL_FEATURES` of every node of ``tree`` (zeros without ``lex``)."""
    out = np.zeros((tree.n_nodes, len(LEXICAL_FEATURES)), dtype=np.float64)
    if lex is None or not lex.present.shape[1]:
        return out
    order, lo, hi = tree.leaf_order, tree.lo, tree.hi
    held = range_sum(lex.present[order], lo, hi) > 0  # (n_nodes, n_words): the word is under the node
    total = float(lex.idf.sum())
    out[:, 0] = (held * lex.idf[None, :]).sum(axis=1) / total if total > 0 else 0.0
    if best_bm25 > 0:
        s = lex.bm25[order]
        w = tree.weight[: tree.n_leaves][order]
        out[:, 1] = range_reduce(s, lo, hi, np.maximum) / best_bm25
        out[:, 2] = range_sum(w * s, lo, hi) / np.maximum(range_sum(w, lo, hi), 1e-9) / best_bm25
    return out
