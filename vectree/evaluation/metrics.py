"""Metrics of the evaluation harness: plain functions, each checked against hand-computed values.

* **Answers** (QASPER): :func:`normalize_answer` and :func:`answer_f1` are QASPER's official
  answer normaliser and token F1 (allenai/qasper ``qasper_evaluator.py``: lower-case, drop
  punctuation, drop the articles a/an/the, collapse whitespace; F1 of the bags of tokens, 0 when
  nothing is shared).  A prediction is scored against every reference answer and the best one
  counts (:func:`max_answer_f1`), as the official evaluator does.
* **Evidence pages**: :func:`evidence_page_scores` -- precision = cited gold pages / cited pages,
  recall = cited gold pages / gold pages, computed on *sets* of pages.  The both-empty case
  (no gold evidence, nothing cited) scores 1 and 1, and any other case with nothing in common
  scores 0 and 0: the convention of QASPER's evidence F1.  The harness averages these over the
  questions that have evidence pages, so the convention only shows in the per-question records.
* **Ranking** (corpus routing): :func:`rank_of` (1-based rank of the gold id, ``None`` when it is
  not ranked), :func:`recall_at_k` and :func:`reciprocal_rank`.
* **Sets** (paper-level evidence): :func:`set_precision_recall`.
* **Text similarity**: :func:`rouge_l` (ROUGE-L F1 over lower-cased alphanumeric tokens, the LCS
  of the two token sequences) and :func:`cosine`.
* **Latency**: :func:`percentile` -- linear interpolation between closest ranks (numpy's default),
  so p50 of ``[1, 2, 3, 4]`` is 2.5.
* :func:`mean` -- the mean of the values that exist (``None`` ones are left out), ``None`` when
  there are none, so a metric that was not measured stays absent instead of becoming 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Collection, Iterable, Sequence

import numpy as np

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ROUGE_TOKEN = re.compile(r"[a-z0-9]+")


# ---- answers (QASPER) ----------------------------------------------------------------------
def normalize_answer(text: str) -> str:
    """QASPER's (and SQuAD's) answer normaliser: lower case, punctuation removed, articles
    removed, whitespace collapsed -- applied in that order."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_f1(prediction: str, reference: str) -> float:
    """QASPER's token F1 of one prediction against one reference (after :func:`normalize_answer`)."""
    pred = normalize_answer(prediction).split()
    gold = normalize_answer(reference).split()
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def max_answer_f1(prediction: str, references: Iterable[str]) -> float:
    """The best :func:`answer_f1` over the reference answers (0 when there are none)."""
    return max((answer_f1(prediction, r) for r in references), default=0.0)


def qasper_reference_answer(answer: dict) -> tuple[str, str]:
    """``(answer text, type)`` of one QASPER annotation, exactly as the official evaluator forms
    it: ``Unanswerable`` / the extractive spans joined by ``", "`` / the free-form answer /
    ``Yes`` or ``No``.  Raises ``ValueError`` for an annotation that gives no answer."""
    if answer.get("unanswerable"):
        return "Unanswerable", "none"
    if answer.get("extractive_spans"):
        return ", ".join(answer["extractive_spans"]), "extractive"
    if answer.get("free_form_answer"):
        return answer["free_form_answer"], "abstractive"
    if answer.get("yes_no"):
        return "Yes", "boolean"
    if answer.get("yes_no") is not None:
        return "No", "boolean"
    raise ValueError("QASPER annotation gives no answer (no span, free-form, yes/no or unanswerable)")


# ---- evidence pages ------------------------------------------------------------------------
def evidence_page_scores(cited: Collection[int], gold: Collection[int]) -> tuple[float, float]:
    """``(precision, recall)`` of cited pages against gold evidence pages (sets; see module doc:
    both empty -> ``(1.0, 1.0)``; nothing in common otherwise -> ``(0.0, 0.0)``)."""
    cited, gold = set(cited), set(gold)
    if not cited and not gold:
        return 1.0, 1.0
    hit = len(cited & gold)
    if hit == 0:
        return 0.0, 0.0
    return hit / len(cited), hit / len(gold)


def set_precision_recall(predicted: Collection, gold: Collection) -> tuple[float, float]:
    """``(precision, recall)`` of two sets with the same both-empty convention as
    :func:`evidence_page_scores`."""
    return evidence_page_scores(predicted, gold)


# ---- ranking -------------------------------------------------------------------------------
def rank_of(ranking: Sequence, gold) -> int | None:
    """1-based rank of ``gold`` in ``ranking`` (``None`` when it is absent)."""
    for i, item in enumerate(ranking, 1):
        if item == gold:
            return i
    return None


def recall_at_k(rank: int | None, k: int) -> float:
    """1 when the single gold item is ranked within the top ``k``, else 0."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return 1.0 if rank is not None and rank <= k else 0.0


def reciprocal_rank(rank: int | None) -> float:
    """``1 / rank``, 0 when the gold item is not ranked."""
    return 0.0 if rank is None else 1.0 / rank


# ---- text similarity -----------------------------------------------------------------------
def _lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    if not a or not b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F1: longest common subsequence of the lower-cased alphanumeric tokens."""
    pred = _ROUGE_TOKEN.findall(prediction.lower())
    ref = _ROUGE_TOKEN.findall(reference.lower())
    lcs = _lcs_length(pred, ref)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(pred), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two vectors (0 when either is all zeros)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 0.0
    return float(a @ b / (na * nb))


# ---- aggregation ---------------------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (``q`` in [0, 100]) with linear interpolation between ranks."""
    if not len(values):
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be within [0, 100], got {q}")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not ``None``; ``None`` when there are none."""
    kept = [float(v) for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def latency_metrics(seconds: Sequence[float]) -> dict[str, float]:
    """``latency_p50_ms`` and ``latency_p95_ms`` of per-question wall times (empty: no keys)."""
    if not len(seconds):
        return {}
    ms = [1000.0 * s for s in seconds]
    return {"latency_p50_ms": percentile(ms, 50), "latency_p95_ms": percentile(ms, 95)}
