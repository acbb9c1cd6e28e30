"""Calibration of the reader's scores on the dev split (never on evaluation questions).

Three maps, all stored in the model's ``config.json`` under ``calibration``:

* ``relevance``: Platt scaling ``p = sigmoid(a * logit + b)`` of the relevance logit, fitted on
  every dev pair: "the probability that this text is evidence for the question".
* ``selection``: which evidence gets cited.  A candidate is cited when its calibrated relevance is
  at least ``threshold`` and within ``margin`` of the best candidate's (the best is always the
  first).  Chosen on QASPER dev questions (sentence candidates of the article) for the best F1 of
  cited evidence; the precision/recall curve of the threshold is kept for the report.
* ``answer``: the confidence of an answer, a logistic map of (best relevance logit, its margin to
  the runner-up, the answer-type probability) fitted to "the answer is right" on simulated
  episodes: each dev question over its own candidates (right when the top candidate is evidence
  and the read answer matches the gold span / yes-no) and over its negatives only (an off-corpus
  question: any answer is wrong).  Below ``abstain_below`` the agent abstains; the threshold is
  the one with the most right decisions (answer when right, abstain when not) on dev.  Its ECE
  and reliability diagram are cross-fitted (2 folds by question), so they are out-of-sample.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np

from .model import TYPES, sigmoid

GRID = [round(float(x), 2) for x in np.arange(0.05, 0.96, 0.05)]
MARGINS = (0.1, 0.2, 0.3, 0.5, 1.0)
ANSWER_RECALL = 0.9
# an answer is right when its token F1 against the reference reaches this (the answer map's label,
# and what `vectree eval` and benchmarks/dev_answer_confidence.py check the confidence against)
RIGHT_F1 = 0.5


def _tokens(s: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", s.lower())


def token_f1(pred: str, gold: str) -> float:
    p, g = _tokens(pred), _tokens(gold)
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if not common:
        return 0.0
    prec, rec = common / len(p), common / len(g)
    return 2 * prec * rec / (prec + rec)


def fit_logistic(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(x, np.float64).reshape(len(y), -1)
    if len(set(int(v) for v in y)) < 2:
        return np.zeros(x.shape[1]), float(np.log((y.mean() + 1e-3) / (1 - y.mean() + 1e-3)))
    model = LogisticRegression(C=10.0, max_iter=1000).fit(x, y)
    return model.coef_[0].astype(float), float(model.intercept_[0])


def ece(probs: np.ndarray, labels: np.ndarray, bins: int = 10) -> tuple[float, list[dict[str, float]]]:
    """Expected calibration error over equal-width bins, with the reliability-diagram bins."""
    probs, labels = np.asarray(probs, float), np.asarray(labels, float)
    edges = np.linspace(0, 1, bins + 1)
    total, out = 0.0, []
    for i in range(bins):
        m = (probs >= edges[i]) & ((probs < edges[i + 1]) if i < bins - 1 else (probs <= 1))
        if not m.any():
            continue
        conf, acc = float(probs[m].mean()), float(labels[m].mean())
        total += m.sum() / len(probs) * abs(conf - acc)
        out.append({"lo": float(edges[i]), "hi": float(edges[i + 1]), "n": int(m.sum()), "confidence": conf,
                    "accuracy": acc})
    return float(total), out


def answer_of(reading) -> tuple[str, str]:
    """The answer a reading gives: ("yes"|"no"|"extractive", text)."""
    kind = max(("yes", "no", "extractive"), key=lambda t: reading.type_probs[t])
    if kind in ("yes", "no"):
        return kind, kind.capitalize()
    return "extractive", reading.span


def answer_features(readings: Sequence) -> list[float]:
    """Confidence features of an episode from its candidates' readings (best first or not)."""
    if not readings:
        return [-10.0, 0.0, 0.0]
    order = sorted(readings, key=lambda r: -r.relevance)
    top = order[0]
    margin = top.relevance - order[1].relevance if len(order) > 1 else 2.0
    kind, _ = answer_of(top)
    return [top.relevance, min(margin, 5.0), top.type_probs[kind]]


# the features of the simulated-episode map (:func:`calibrate`), in its coefficients' order
LEGACY_ANSWER_FEATURES = ("top_relevance_logit", "margin_to_second", "answer_type_prob")


def answer_confidence(features: Mapping[str, float] | Sequence[float], calibration: dict[str, Any]) -> float:
    """The calibrated probability that an answer is right: ``calibration["answer"]``'s logistic map
    of the features it names (``features``: a mapping by name, as the navigator computes them, or
    a sequence in the map's own order)."""
    a = calibration.get("answer") or {}
    names = a.get("features") or LEGACY_ANSWER_FEATURES
    x = [float(features.get(n, 0.0)) for n in names] if isinstance(features, Mapping) else list(features)
    coef = np.asarray(a.get("coef") or [1.0] + [0.0] * (len(x) - 1), float)
    mean, scale = a.get("mean"), a.get("scale")
    if mean is not None and scale is not None:  # a map fitted on standardised features
        x = (np.asarray(x, float) - np.asarray(mean, float)) / np.asarray(scale, float)
    return float(sigmoid(float(np.dot(coef, x)) + float(a.get("intercept", 0.0))))


def relevance_prob(logits, calibration: dict[str, Any], cosines=None) -> np.ndarray:
    """Calibrated relevance: the reader's logit fused with the bi-encoder cosine when both are
    known (``relevance``), else the logit alone (``relevance_logit_only``)."""
    logits = np.asarray(logits, float)
    r = calibration.get("relevance") or {"a": 1.0, "b": 0.0}
    if cosines is not None and "c" in r:
        return sigmoid(r["a"] * logits + r["c"] * np.asarray(cosines, float) + r["b"])
    r = calibration.get("relevance_logit_only") or r
    return sigmoid(r["a"] * logits + r["b"])


def select(probs: Sequence[float], threshold: float, margin: float) -> list[int]:
    """Indices cited: the best, plus every candidate at least ``threshold`` and within ``margin``."""
    if not len(probs):
        return []
    probs = list(probs)
    best = max(range(len(probs)), key=lambda i: probs[i])
    return sorted({best} | {i for i, p in enumerate(probs) if p >= threshold and p >= probs[best] - margin})


def _fit_selection(dev, probs, groups, source: str):
    """Threshold and margin with the best F1 of selected evidence over ``source``'s dev questions."""
    chosen_groups = [idx for idx in groups.values() if dev[idx[0]].source == source and any(dev[i].rel for i in idx)]
    curves: dict[str, list] = {}
    best = {"dev_f1": -1.0, "threshold": 0.5, "margin": 0.3, "precision": 0.0, "recall": 0.0}
    for m in MARGINS:
        curve = []
        for t in GRID:
            tp = fp = fn = 0
            for idx in chosen_groups:
                chosen = {idx[j] for j in select([probs[i] for i in idx], t, m)}
                pos = {i for i in idx if dev[i].rel}
                tp += len(chosen & pos)
                fp += len(chosen - pos)
                fn += len(pos - chosen)
            p = tp / max(1, tp + fp)
            r = tp / max(1, tp + fn)
            f = 2 * p * r / max(1e-9, p + r)
            curve.append({"threshold": t, "precision": p, "recall": r, "f1": f})
            if f > best["dev_f1"] + 1e-9:
                best = {"dev_f1": f, "threshold": t, "margin": m, "precision": p, "recall": r}
        curves[str(m)] = curve
    best["questions"] = len(chosen_groups)
    return best, curves


def _fit_abstention(dev, probs, groups, sources):
    """Threshold on the best candidate's relevance: keep answering at least ANSWER_RECALL of the dev
    questions whose evidence is there, and among those thresholds take the most right decisions."""
    ev_p, ev_y = [], []
    for idx in groups.values():
        if not any(dev[i].rel for i in idx) or (sources and dev[idx[0]].source not in sources):
            continue
        top = max(idx, key=lambda i: probs[i])
        ev_p.append(probs[top])
        ev_y.append(float(dev[top].rel))
        negs = [i for i in idx if not dev[i].rel]
        if negs:
            ev_p.append(max(probs[i] for i in negs))
            ev_y.append(0.0)
    p, y = np.asarray(ev_p), np.asarray(ev_y)
    if not len(p):  # no dev question of these sources (a tiny sample): the lowest threshold, abstain least
        return GRID[0], [{"threshold": GRID[0], "decision_accuracy": 0.0, "answered": 1.0,
                          "answered_with_evidence": 0.0, "abstained_without": 0.0, "questions": 0}]
    curve = []
    for t in GRID:
        kept = p >= t
        curve.append({"threshold": t, "decision_accuracy": float(np.mean(np.where(kept, y == 1, y == 0))),
                      "answered": float(kept.mean()),
                      "answered_with_evidence": float(kept[y == 1].mean()) if (y == 1).any() else 0.0,
                      "abstained_without": float((~kept)[y == 0].mean()) if (y == 0).any() else 0.0})
    # abstaining on a question whose evidence is there costs more than a weak answer that says so
    allowed = [d for d in curve if d["answered_with_evidence"] >= ANSWER_RECALL] or curve[:1]
    best = max(allowed, key=lambda d: (d["decision_accuracy"], -d["threshold"]))
    return best["threshold"], curve


def _fold(group: str) -> int:
    return int(hashlib.sha256(group.encode()).hexdigest()[:4], 16) % 2


def calibrate(dev: Sequence, readings: Sequence, cosines: Sequence[float] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The calibration block and the dev figures (curves, bins, summary).  With ``cosines`` (the
    bi-encoder's cosine of each dev pair) relevance is a logistic fusion of logit and cosine."""
    logits = np.asarray([r.relevance for r in readings], float)
    labels = np.asarray([e.rel for e in dev], float)
    (a,), b = fit_logistic(logits[:, None], labels)
    logit_only = {"a": float(a), "b": float(b)}
    if cosines is not None:
        cos = np.asarray(cosines, float)
        (a2, c2), b2 = fit_logistic(np.stack([logits, cos], 1), labels)
        rel_cal = {"a": float(a2), "c": float(c2), "b": float(b2)}
        probs = sigmoid(a2 * logits + c2 * cos + b2)
    else:
        rel_cal = logit_only
        probs = sigmoid(a * logits + b)
    rel_ece, rel_bins = ece(probs, labels)

    groups: dict[str, list[int]] = {}
    for i, e in enumerate(dev):
        groups.setdefault(e.group, []).append(i)

    # ---- selection: QASPER sentences (evidence within a paper), HotpotQA paragraphs (several papers)
    selection, curves = _fit_selection(dev, probs, groups, "qasper")
    papers, paper_curves = _fit_selection(dev, probs, groups, "hotpotqa")

    # ---- abstention: the best candidate's calibrated relevance, own candidates vs an off-corpus
    # episode (the same question over its negatives only); sentences (all sources) for evidence,
    # paragraphs (HotpotQA, PubMedQA) for Layer-0 papers
    evidence_abstain, ev_curve = _fit_abstention(dev, probs, groups, None)
    paper_abstain, _ = _fit_abstention(dev, probs, groups, ("hotpotqa", "pubmedqa"))
    papers["abstain_below"] = paper_abstain

    # ---- answers: simulated episodes (own candidates; negatives only = off-corpus)
    feats, right, fold = [], [], []
    for g, idx in groups.items():
        gold_types = [dev[i].type for i in idx if dev[i].rel and dev[i].type in (0, 1, 2)]
        if not gold_types:
            continue
        rs = [readings[i] for i in idx]
        top_i = idx[int(np.argmax([r.relevance for r in rs]))]
        kind, text = answer_of(readings[top_i])
        e = dev[top_i]
        ok = bool(e.rel) and e.type in (0, 1, 2)
        if ok:
            if e.type in (0, 1):
                ok = kind == TYPES[e.type]
            elif e.span is not None:
                ok = kind == "extractive" and token_f1(text, e.text[e.span[0]:e.span[1]]) >= RIGHT_F1
            else:
                ok = kind == "extractive"
        feats.append(answer_features(rs))
        right.append(float(ok))
        fold.append(_fold(g))
        negs = [readings[i] for i in idx if not dev[i].rel]
        if negs:
            feats.append(answer_features(negs))
            right.append(0.0)
            fold.append(_fold(g))
    x, y, fold_a = np.asarray(feats, float), np.asarray(right, float), np.asarray(fold)
    oof = np.zeros(len(y))
    for f in (0, 1):
        tr, te = fold_a != f, fold_a == f
        coef, icpt = fit_logistic(x[tr], y[tr])
        oof[te] = sigmoid(x[te] @ coef + icpt)
    coef, icpt = fit_logistic(x, y)
    ans_ece, ans_bins = ece(oof, y)
    decisions = []
    for t in GRID:
        answered = oof >= t
        acc = float(np.mean(np.where(answered, y == 1, y == 0)))
        decisions.append({"threshold": t, "decision_accuracy": acc, "answered": float(answered.mean()),
                          "precision_answered": float(y[answered].mean()) if answered.any() else 0.0})
    abstain = max(decisions, key=lambda d: (d["decision_accuracy"], -abs(d["threshold"] - 0.5)))["threshold"]
    calibration = {"relevance": rel_cal, "relevance_logit_only": logit_only, "selection": selection, "papers": papers,
                   "evidence": {"abstain_below": evidence_abstain},
                   "answer": {"coef": [float(c) for c in coef], "intercept": icpt,
                              "features": list(LEGACY_ANSWER_FEATURES),
                              "abstain_below": abstain}}
    fused = group_metrics(dev, probs)
    summary = {"relevance_ece": round(rel_ece, 4), "answer_ece": round(ans_ece, 4),
               "fused_mrr": round(fused["mrr"], 4), "fused_p_at_1": round(fused["p_at_1"], 4),
               "answer_episodes": int(len(y)), "answer_right_rate": round(float(y.mean()), 4) if len(y) else 0.0,
               "selection_threshold": selection["threshold"], "selection_margin": selection["margin"],
               "selection_f1": round(selection["dev_f1"], 4),
               "selection_precision": round(selection["precision"], 4), "selection_recall": round(selection["recall"], 4),
               "papers_threshold": papers["threshold"], "papers_margin": papers["margin"],
               "papers_precision": round(papers["precision"], 4), "papers_recall": round(papers["recall"], 4),
               "abstain_below": abstain, "evidence_abstain_below": evidence_abstain,
               "evidence_decision_accuracy": next(d["decision_accuracy"] for d in ev_curve
                                                  if d["threshold"] == evidence_abstain),
               "papers_abstain_below": paper_abstain}
    figures = {"summary": summary, "selection_curve": curves[str(selection["margin"])], "selection_curves": curves,
               "papers_curve": paper_curves.get(str(papers["margin"]), []),
               "relevance_bins": rel_bins, "answer_bins": ans_bins, "abstain_curve": decisions,
               "evidence_curve": ev_curve}
    return calibration, figures


def group_metrics(examples: Sequence[Example], scores: np.ndarray) -> dict[str, float]:
    """MRR and P@1 of the first positive within each group (groups with a positive and a negative)."""
    groups: dict[str, list[tuple[float, int]]] = {}
    for e, s in zip(examples, scores):
        groups.setdefault(e.group, []).append((float(s), e.rel))
    rr, p1 = [], []
    for items in groups.values():
        if not any(r for _, r in items) or all(r for _, r in items):
            continue
        ranked = sorted(items, key=lambda t: -t[0])
        first = next(i for i, (_, r) in enumerate(ranked) if r)
        rr.append(1.0 / (first + 1))
        p1.append(1.0 if first == 0 else 0.0)
    return {"mrr": float(np.mean(rr)) if rr else 0.0, "p_at_1": float(np.mean(p1)) if p1 else 0.0,
            "groups": len(rr)}
