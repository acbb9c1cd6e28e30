"""Paired differences between the systems of one run: is a gap larger than the questions' noise?

Every system of a ``vectree eval`` run answers the same questions, so two systems are best
compared question by question.  :func:`paired_bootstrap` resamples the questions (with
replacement, the same draw for both systems) and reports the mean difference and the ratio of
the means with their 95 % percentile intervals.  An interval that holds 0 (or 1 for the ratio)
says the run cannot tell the two systems apart: with 55 QASPER questions a page-precision gap of
.05 is usually inside it.

Which questions count is the metric's own rule (:func:`vectree.evaluation.runner.aggregate`):
evidence-page precision and recall over the questions with evidence pages, answer F1 over the
questions with a reference, sentence metrics over the queries with gold sentences.  A question
is compared only when both systems scored it.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

QUALITY_KEYS = {
    "paper_qa": ("evidence_page_precision", "evidence_page_recall", "answer_f1"),
    "routing": ("recall@1", "mrr"),
    "sentences": ("ie@1", "ie@3", "ie@5"),
    "synthesis": ("evidence_paper_precision", "evidence_paper_recall"),
}
BOOTSTRAP_DRAWS = 2000


def per_question(row: Mapping[str, Any], key: str, task: str) -> dict[str, float]:
    """``question_id -> value`` of ``key`` over the questions that metric averages."""
    out: dict[str, float] = {}
    seen: dict[str, int] = {}
    for item in row.get("per_item") or []:
        # the same question can be asked twice (QASPER's two copies of one paper): every
        # occurrence is its own question, as in the averages
        qid = f"{item.get('paper_id', '')}/{item['question_id']}"
        seen[qid] = seen.get(qid, 0) + 1
        qid = f"{qid}#{seen[qid]}"
        if task == "paper_qa" and key.startswith("evidence_page_") and not item.get("has_evidence"):
            continue
        if task == "sentences" and not item.get("n_gold"):
            continue
        value = item.get(key)
        if value is None:
            continue
        out[qid] = float(value)
    return out


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, draws: int = BOOTSTRAP_DRAWS,
                     seed: int = 0) -> dict[str, float]:
    """Mean of ``a - b`` and ``mean(a) / mean(b)`` with 95 % percentile intervals from ``draws``
    resamples of the paired questions (``ratio`` keys are absent when ``b``'s mean is 0)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape or a.ndim != 1 or not len(a):
        raise ValueError("paired_bootstrap needs two equally long, non-empty lists of per-question values")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(draws, len(a)))
    ma, mb = a[idx].mean(1), b[idx].mean(1)
    diff = ma - mb
    out = {"n": float(len(a)), "diff": float(a.mean() - b.mean()),
           "diff_lo": float(np.percentile(diff, 2.5)), "diff_hi": float(np.percentile(diff, 97.5))}
    if b.mean() > 0:
        ratio = np.divide(ma, mb, out=np.full_like(ma, np.nan), where=mb > 0)
        ratio = ratio[np.isfinite(ratio)]
        out.update(ratio=float(a.mean() / b.mean()), ratio_lo=float(np.percentile(ratio, 2.5)),
                   ratio_hi=float(np.percentile(ratio, 97.5)))
    return out


def paired_rows(rows: Sequence[Mapping[str, Any]], task: str, reference: str | None = None,
                *, seed: int = 0) -> list[dict[str, Any]]:
    """Every other system against ``reference`` (default: the first system that ran), per quality
    metric of ``task``: ``{system, reference, metric, n, diff, diff_lo, diff_hi, ratio, ...}``."""
    ok = [r for r in rows if r.get("status") == "ok" and r.get("per_item")]
    if len(ok) < 2:
        return []
    ref = next((r for r in ok if r["system"] == reference), None) if reference else ok[0]
    if ref is None:
        raise ValueError(f"no system {reference!r} ran in this benchmark")
    out = []
    for key in QUALITY_KEYS.get(task, ()):
        base = per_question(ref, key, task)
        for r in ok:
            if r is ref:
                continue
            mine = per_question(r, key, task)
            common = [q for q in base if q in mine]
            if not common:
                continue
            stats = paired_bootstrap([mine[q] for q in common], [base[q] for q in common], seed=seed)
            out.append({"system": r["system"], "reference": ref["system"], "metric": key, **stats})
    return out


def paired_table(rows: Sequence[Mapping[str, Any]], task: str, reference: str | None = None) -> str:
    """The Markdown table of :func:`paired_rows` ('' when fewer than two systems ran)."""
    found = paired_rows(rows, task, reference)
    if not found:
        return ""
    ref = found[0]["reference"]
    lines = [f"Paired against `{ref}`, question by question (95 % bootstrap intervals, "
             f"{BOOTSTRAP_DRAWS} resamples; an interval holding 0, or 1 for the ratio, is within the questions' noise):",
             "", "| system | metric | n | difference | 95 % interval | ratio | 95 % interval |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for f in found:
        ratio = (f"{f['ratio']:.2f}x", f"[{f['ratio_lo']:.2f}, {f['ratio_hi']:.2f}]") if "ratio" in f else ("–", "–")
        lines.append(f"| {f['system']} | {f['metric']} | {int(f['n'])} | {f['diff']:+.3f} | "
                     f"[{f['diff_lo']:+.3f}, {f['diff_hi']:+.3f}] | {ratio[0]} | {ratio[1]} |")
    return "\n".join(lines) + "\n"
