"""The sentence-level scorer: one function for every system (recall, precision, IE at k).

The rule, stated once and used for every document of every benchmark:

* **Sentences.**  A document's paragraphs are its maximal runs of characters without a newline.
  Each paragraph is segmented by pysbd (English, ``clean=False``, so offsets stay those of the
  original text); each segment is trimmed of surrounding whitespace; any non-blank text pysbd
  leaves uncovered becomes a sentence of its own, so no character is lost.  See
  :func:`split_sentences`.
* **Coverage.**  A returned unit is a set of character spans in one document (a node of a
  SproutRAG tree may join non-contiguous sentences).  It *covers* a sentence when at least half of
  that sentence's characters lie inside the union of its spans (:func:`covered_sentences`).
* **Metrics at k** over the top-k units of one query with gold sentences ``G``:
  ``recall@k`` = distinct gold sentences covered by the top-k units / ``|G|``;
  ``precision@k`` = the same count / the sum over the top-k units of the number of sentences each
  covers (a sentence returned twice, by a node and by its child, counts twice; a system that
  returns nothing has precision 0); ``ie@k`` = ``recall@k x precision@k``.  A system may return
  fewer than k units; then its top-k are the units it returned.
* **Aggregation.**  Every metric is averaged over the queries that have gold sentences
  (:func:`aggregate`); queries without gold are left out and counted separately.

Systems hand in :class:`Unit` objects (document id plus character spans), never text, so the
scorer does not depend on how a system chunked or normalised the document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Iterable, Mapping, Sequence

import numpy as np

DEFAULT_KS = (1, 3, 5)

from vectree.retrieval.datasets import covered_sentences, merge_spans as _merge  # noqa: F401  (the coverage rule)
from vectree.retrieval.sentences import Span
from vectree.retrieval.sentences import split_sentences as _split

def split_sentences(text: str) -> list[Span]:
    """Character spans ``(start, end)`` of the sentences of ``text``, in order (the rule above,
    implemented once in :mod:`vectree.retrieval.sentences`)."""
    if not isinstance(text, str):
        raise TypeError(f"split_sentences expects a str, got {type(text).__name__}")
    return _split(text)


@dataclass(frozen=True)
class Unit:
    """One returned retrieval unit: character spans in one document (half-open, may be several)."""

    doc_id: str
    spans: tuple[Span, ...]

    @classmethod
    def of(cls, doc_id: str, spans: Iterable[Sequence[int]]) -> "Unit":
        return cls(doc_id, tuple((int(a), int(b)) for a, b in spans))


def score_units(
    units: Sequence[Unit],
    gold: Collection[tuple[str, int]],
    sentences: Mapping[str, Sequence[Span]],
    ks: Sequence[int] = DEFAULT_KS,
) -> dict[str, float]:
    """``recall@k``, ``precision@k`` and ``ie@k`` of one ranked list of units for one query.

    ``gold`` holds ``(doc_id, sentence_index)`` pairs indexing ``sentences[doc_id]``; it must not
    be empty (queries without gold are left out of IE, see :func:`aggregate`).
    """
    gold = set(gold)
    if not gold:
        raise ValueError("score_units needs at least one gold sentence; leave queries without gold out")
    for doc_id, idx in gold:
        if doc_id not in sentences or not 0 <= idx < len(sentences[doc_id]):
            raise ValueError(f"gold sentence ({doc_id!r}, {idx}) is not a sentence of that document")
    out: dict[str, float] = {}
    per_unit: list[list[tuple[str, int]]] = []
    for u in units[: max(ks)]:
        if u.doc_id not in sentences:
            raise ValueError(f"unit from unknown document {u.doc_id!r}")
        per_unit.append([(u.doc_id, i) for i in covered_sentences(sentences[u.doc_id], u.spans)])
    for k in ks:
        top = per_unit[:k]
        hit = {s for cov in top for s in cov} & gold
        returned = sum(len(cov) for cov in top)
        recall = len(hit) / len(gold)
        precision = len(hit) / returned if returned else 0.0
        out[f"recall@{k}"] = recall
        out[f"precision@{k}"] = precision
        out[f"ie@{k}"] = recall * precision
    return out


def aggregate(per_query: Sequence[Mapping[str, float] | None]) -> dict[str, float]:
    """Mean of every metric over the queries that were scored (``None`` entries: queries without
    gold, counted in ``n_without_gold``)."""
    scored = [m for m in per_query if m is not None]
    out: dict[str, float] = {"n": len(scored), "n_without_gold": len(per_query) - len(scored)}
    if scored:
        for key in scored[0]:
            out[key] = float(np.mean([m[key] for m in scored]))
    return out


class SentenceScorer:
    """Sentences of a set of documents, split once, and scoring against them.

    ``documents`` maps doc id to text.  ``score(units, gold)`` is :func:`score_units`;
    ``sentence_count(unit)`` is the number of sentences a unit covers (its size in IE terms).
    """

    def __init__(self, documents: Mapping[str, str], ks: Sequence[int] = DEFAULT_KS):
        self.ks = tuple(ks)
        self.sentences: dict[str, list[Span]] = {d: split_sentences(t) for d, t in documents.items()}

    def score(self, units: Sequence[Unit], gold: Collection[tuple[str, int]]) -> dict[str, float]:
        return score_units(units, gold, self.sentences, self.ks)

    def sentence_count(self, unit: Unit) -> int:
        return len(covered_sentences(self.sentences[unit.doc_id], unit.spans))
