"""Plots of the trained reader's dev calibration (from the model's ``dev_curves.json``):

* ``reader-selection-pr.png``: precision / recall of cited evidence as the selection threshold
  moves (QASPER dev questions), the chosen threshold marked; the same for the paper threshold
  (HotpotQA dev); and, when the model has a page-level calibration, page precision / recall of
  the navigator's citations on the dev papers of ``retrieval.rerank.pages``, chosen point marked;
* ``reader-reliability.png``: reliability diagrams of the calibrated relevance and of the answer
  confidence (cross-fitted), with their ECE.

Usage: ``python benchmarks/plot_reader_calibration.py [MODEL_DIR] [OUT_DIR]`` (defaults: the
shipped model, ``docs/eval``).  Prints a Markdown block for the report.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _pr_axes(ax, title: str, unit: str = "", fontsize: int = 8) -> None:
    """A precision / recall panel's axes: both from 0 to 1, titled, with its legend."""
    ax.set_xlabel(f"{unit}recall")
    ax.set_ylabel(f"{unit}precision")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.legend(fontsize=fontsize)


def main(model_dir: Path, out_dir: Path) -> str:
    curves = json.loads((model_dir / "dev_curves.json").read_text())
    config = json.loads((model_dir / "config.json").read_text())
    s = curves["summary"]
    out_dir.mkdir(parents=True, exist_ok=True)

    pages = curves.get("page_selection_curve") or []
    fig, axes = plt.subplots(1, 3 if pages else 2, figsize=(15 if pages else 10, 4))
    if pages:
        # the navigator's cited evidence on the pages of dev papers (retrieval.rerank.pages): one
        # sweep of the threshold per (margin, most cited); the chosen point marked
        ps = config["calibration"]["page_selection"]
        ax = axes[2]
        for key in sorted({(d["margin"], d["max_cited"]) for d in pages}):
            sweep = [d for d in pages if (d["margin"], d["max_cited"]) == key]
            chosen_line = key == (ps["margin"], ps["max_cited"])
            ax.plot([d["recall"] for d in sweep], [d["precision"] for d in sweep], marker="." if chosen_line else None,
                    color="C0" if chosen_line else "lightgrey", zorder=2 if chosen_line else 1,
                    label=f"margin {key[0]}, at most {key[1]} cited" if chosen_line else None)
        before = ps.get("sentence_level") or {}
        if before:
            ax.scatter([before["recall"]], [before["precision"]], color="black", marker="x", zorder=3, s=50,
                       label=f"sentence-level choice (P {before['precision']:.2f}, R {before['recall']:.2f})")
        ax.scatter([ps["recall"]], [ps["precision"]], color="red", zorder=3, s=60,
                   label=f"chosen: threshold {ps['threshold']} (P {ps['precision']:.2f}, R {ps['recall']:.2f})")
        _pr_axes(ax, f"cited pages ({ps['papers']} QASPER dev papers)", "page ", fontsize=7)
    for ax, key, thr, title in ((axes[0], "selection_curve", s["selection_threshold"], "evidence sentences (QASPER dev)"),
                                (axes[1], "papers_curve", s["papers_threshold"], "papers (HotpotQA dev paragraphs)")):
        c = curves.get(key) or []
        if not c:
            continue
        ax.plot([p["recall"] for p in c], [p["precision"] for p in c], marker=".", label="threshold sweep")
        chosen = next(p for p in c if abs(p["threshold"] - thr) < 1e-9)
        ax.scatter([chosen["recall"]], [chosen["precision"]], color="red", zorder=3, s=60,
                   label=f"chosen: threshold {thr} (P {chosen['precision']:.2f}, R {chosen['recall']:.2f})")
        _pr_axes(ax, title)
    fig.tight_layout()
    fig.savefig(out_dir / "reader-selection-pr.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, ece, title in ((axes[0], "relevance_bins", s["relevance_ece"], "relevance (all dev pairs)"),
                                (axes[1], "answer_bins", s["answer_ece"], "answer confidence (dev episodes, cross-fitted)")):
        bins = curves.get(key) or []
        ax.plot([0, 1], [0, 1], color="grey", linestyle="--", label="perfect calibration")
        ax.bar([(b["lo"] + b["hi"]) / 2 for b in bins], [b["accuracy"] for b in bins], width=0.09, alpha=0.6,
               label="observed frequency")
        ax.plot([b["confidence"] for b in bins], [b["accuracy"] for b in bins], marker="o", color="C1",
                label="mean predicted vs observed")
        for b in bins:
            ax.annotate(str(b["n"]), ((b["lo"] + b["hi"]) / 2, b["accuracy"]), fontsize=7, ha="center", va="bottom")
        ax.set_xlabel("predicted probability")
        ax.set_ylabel("observed frequency")
        ax.set_title(f"{title}: ECE {ece:.3f}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "reader-reliability.png", dpi=110)
    plt.close(fig)

    t = config["training"]
    before, after = t.get("before", {}), t.get("after", {})
    lines = [
        f"Model `{config['model_id']}` (`vectree/models/reader/`, card: `MODEL_CARD.md`); every figure below is on "
        "the dev split (questions no weight was trained on; calibration is fitted on it, the ECE of the answer "
        "confidence is cross-fitted).", "",
        "| dev figure | value |", "|---|---:|",
        f"| evidence MRR: MiniLM cosine / reader logit / fused (what ranks) | {before.get('cosine_mrr', 0):.3f} / "
        f"{after.get('mrr', 0):.3f} / {s.get('fused_mrr', 0):.3f} |",
        f"| evidence P@1: cosine / logit / fused | {before.get('cosine_p_at_1', 0):.3f} / {after.get('p_at_1', 0):.3f} / "
        f"{s.get('fused_p_at_1', 0):.3f} |",
        f"| answer-type accuracy / span token F1 | {after.get('type_accuracy', 0):.3f} / {after.get('span_f1', 0):.3f} |",
        f"| relevance ECE | {s['relevance_ece']:.3f} |",
        f"| answer-confidence ECE (target ≤ .10) | {s['answer_ece']:.3f} |",
        f"| evidence selection: threshold / margin → P / R | {s['selection_threshold']} / {s['selection_margin']} → "
        f"{s['selection_precision']:.3f} / {s['selection_recall']:.3f} |",
        f"| papers: threshold / margin → P / R | {s['papers_threshold']} / {s['papers_margin']} → "
        f"{s['papers_precision']:.3f} / {s['papers_recall']:.3f} |",
        f"| abstain below (best evidence relevance) / right decisions | {s['evidence_abstain_below']} / "
        f"{s['evidence_decision_accuracy']:.3f} |",
    ]
    ps = config["calibration"].get("page_selection")
    if ps:
        lines.append(f"| cited pages on dev papers: threshold / margin / at most → P / R / mean page F1 | "
                     f"{ps['threshold']} / {ps['margin']} / {ps['max_cited']} → {ps['precision']:.3f} / "
                     f"{ps['recall']:.3f} / {ps['mean_f1']:.3f} (sentence-level choice: "
                     f"{ps['sentence_level']['precision']:.3f} / {ps['sentence_level']['recall']:.3f} / "
                     f"{ps['sentence_level']['mean_f1']:.3f}) |")
    lines += [
        "",
        "![reader selection PR](reader-selection-pr.png)", "![reader reliability](reader-reliability.png)",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    model = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "vectree" / "models" / "reader"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs" / "eval"
    print(main(model, out))
