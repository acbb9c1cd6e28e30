"""Reports from ``results.json`` lists: a Markdown report with plots, and a short console table.

:func:`write_report` takes the results of one or several benchmarks and writes one Markdown
table per benchmark (systems x metrics, the best value of each column in bold -- highest, or
lowest for tokens and latency -- with n, seed, limit and the cutoffs stated), lists the systems
that were not run with the reason, the notes (LLM metrics not run, data facts), and links three
PNG plots per benchmark made with matplotlib:

* ``<benchmark>-pr.png``: precision against recall per system (evidence pages for paper QA,
  papers for synthesis, the k = 1, 3, 5 curve for sentence retrieval; recall@k against k for
  routing, which has one gold document and no precision);
* ``<benchmark>-latency.png``: the per-question latency distribution per system (box plot,
  log scale);
* ``<benchmark>-tokens.png``: mean tokens returned per question, stacked by layer.

Under each table, every system is paired with the first one question by question
(:mod:`.paired`): the difference and the ratio of the means with 95 % bootstrap intervals, so a
reader sees which gaps the run's few questions can tell apart.

:func:`console_table` is the short rich table ``vectree eval`` prints.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Sequence

from rich.table import Table

from .paired import QUALITY_KEYS, paired_rows, paired_table
from .runner import LOWER_IS_BETTER, METRIC_KEYS

COUNT_KEYS = ("n_with_evidence", "n_without_gold", "n_unanswerable")
SHORT = {"evidence_page_precision": "page P", "evidence_page_recall": "page R", "answer_f1": "answer F1",
         "tokens_total": "tokens", "latency_p50_ms": "p50 ms", "evidence_paper_precision": "paper P",
         "evidence_paper_recall": "paper R", "answer_cosine": "cosine", "answer_rouge_l": "ROUGE-L",
         "precision@5": "P@5", "recall@5": "R@5", "recall@1": "R@1", "recall@10": "R@10",
         "abstention_precision": "abstain P", "abstention_recall": "abstain R", "n_abstained": "abstained",
         "answer_right_rate": "right", "confidence_mean": "confidence", "confidence_ece": "conf. ECE"}
CONSOLE_KEYS = {
    "paper_qa": ("evidence_page_precision", "evidence_page_recall", "evidence_paper_precision",
                 "evidence_paper_recall", "answer_f1", "abstention_precision", "abstention_recall", "tokens_total",
                 "latency_p50_ms"),
    "routing": ("recall@1", "recall@5", "recall@10", "mrr", "latency_p50_ms"),
    "sentences": ("ie@1", "ie@3", "ie@5", "recall@5", "precision@5", "latency_p50_ms"),
    "synthesis": ("evidence_paper_precision", "evidence_paper_recall", "answer_cosine", "answer_rouge_l",
                  "latency_p50_ms"),
}


def _fmt(key: str, value: float) -> str:
    if key.startswith(("n_", "tokens_")):
        return f"{value:,.0f}"
    if key.endswith("_ms"):
        return f"{value:,.1f}"
    if key == "seconds_per_question":
        return f"{value:.3f}"
    return f"{value:.3f}"


def _by_benchmark(results: Sequence[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in results:
        out.setdefault(r["benchmark"], []).append(r)
    return out


SENTENCE_ORDER = ("ie@1", "ie@3", "ie@5", "recall@1", "recall@3", "recall@5", "precision@1", "precision@3",
                  "precision@5")


def _columns(rows: Sequence[dict]) -> list[str]:
    present = {k for r in rows for k in r.get("metrics", {})}
    first = [k for k in SENTENCE_ORDER if k in present] if "ie@1" in present else []
    ordered = first + [k for k in METRIC_KEYS if k in present and k not in first]
    extra = sorted(present - set(ordered) - set(COUNT_KEYS))
    return ordered + extra


def _best(rows: Sequence[dict], key: str) -> float | None:
    values = [r["metrics"][key] for r in rows if key in r["metrics"]]
    if len(values) < 2:
        return None
    return min(values) if key in LOWER_IS_BETTER else max(values)


def benchmark_table(rows: Sequence[dict]) -> str:
    """One Markdown table: systems that ran x the metrics any of them reported."""
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return "_no system ran_\n"
    cols = _columns(ok)
    lines = ["| system | n | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    best = {c: _best(ok, c) for c in cols}
    for r in ok:
        cells = []
        for c in cols:
            if c not in r["metrics"]:
                cells.append("–")
                continue
            v = r["metrics"][c]
            text = _fmt(c, v)
            cells.append(f"**{text}**" if best[c] is not None and _fmt(c, best[c]) == text else text)
        lines.append(f"| {r['system']} | {r['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _describe_config(rows: Sequence[dict]) -> str:
    cfg = next((r["config"] for r in rows if r.get("config") and r["status"] == "ok"),
               next((r["config"] for r in rows if r.get("config")), {}))
    seeds = sorted({r["config"].get("seed") for r in rows if r.get("config")}, key=str)
    parts = [f"n = {cfg.get('n_questions')} questions", f"{cfg.get('n_documents')} documents",
             f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}",
             f"limit {cfg.get('limit') if cfg.get('limit') is not None else 'none (all questions)'}",
             f"cutoffs {cfg.get('k')}", f"embedder {cfg.get('embedder')}", f"tokens: {cfg.get('token_rule')}"]
    counts = []
    for r in rows:
        for key in COUNT_KEYS:
            if key in r.get("metrics", {}):
                counts.append(f"{key.replace('_', ' ')} = {int(r['metrics'][key])}")
    if counts:
        parts.append(sorted(set(counts))[0] if len(set(counts)) == 1 else "; ".join(sorted(set(counts))))
    return "; ".join(parts) + "."


def write_report(results: Sequence[dict], path: str | Path, *, plots_dir: str | Path | None = None,
                 title: str = "vectree evaluation", intro: str = "") -> list[Path]:
    """Write the Markdown report (and the plots); returns the plot paths written."""
    path = Path(path)
    plots_dir = Path(plots_dir) if plots_dir is not None else path.parent
    path.parent.mkdir(parents=True, exist_ok=True)
    plots_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    out = [f"# {title}\n"]
    if intro:
        out.append(intro.strip() + "\n")
    for bench, rows in _by_benchmark(results).items():
        task = next((r["config"].get("task") for r in rows if r.get("config")), "")
        out.append(f"## {bench}\n")
        out.append(_describe_config(rows) + "\n")
        out.append(benchmark_table(rows))
        paired = paired_table(rows, task)
        if paired:
            out.append(paired)
        not_run = [r for r in rows if r["status"] != "ok"]
        for r in not_run:
            reason = next((n for n in reversed(r["notes"]) if n.startswith(("not run", "failed"))), None) or \
                (r["notes"][-1] if r["notes"] else "")
            reason = reason.splitlines()[0] if reason else ""
            for prefix in ("not run: ", "failed: "):
                reason = reason[len(prefix):] if reason.startswith(prefix) else reason
            out.append(f"- **{r['system']}**: {r['status'].replace('_', ' ')} -- {reason}")
        notes = sorted({n for r in rows if r["status"] == "ok" for n in r["notes"]})
        for n in notes:
            out.append(f"- {n}")
        if not_run or notes:
            out.append("")
        hashes = next((r["data_sha256"] for r in rows if r.get("data_sha256")), {})
        if hashes:
            out.append("Data: " + ", ".join(f"`{k}` {v[:12]}" for k, v in hashes.items()) + "\n")
        plots = make_plots(bench, task, [r for r in rows if r["status"] == "ok"], plots_dir)
        written.extend(plots)
        for p in plots:
            rel = os.path.relpath(p, path.parent)
            out.append(f"![{p.stem}]({rel})")
        out.append("")
    path.write_text("\n".join(out).rstrip() + "\n")
    return written


# ---- plots ----------------------------------------------------------------------------------
def make_plots(bench: str, task: str, rows: Sequence[dict], plots_dir: Path) -> list[Path]:
    if not rows:
        return []
    import matplotlib  # why local: matplotlib costs ~0.7 s to import; only reports with plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []

    def save(fig, name):
        p = plots_dir / f"{bench}-{name}.png"
        fig.tight_layout()
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)

    # precision-recall
    fig, ax = plt.subplots(figsize=(6, 4.2))
    drew = False
    for r in rows:
        m = r["metrics"]
        if task == "sentences":
            ks = [k for k in (1, 3, 5) if f"recall@{k}" in m]
            if ks:
                ax.plot([m[f"recall@{k}"] for k in ks], [m[f"precision@{k}"] for k in ks], "o-", label=r["system"])
                for k in ks:
                    ax.annotate(f"k={k}", (m[f"recall@{k}"], m[f"precision@{k}"]), fontsize=7,
                                xytext=(3, 3), textcoords="offset points")
                drew = True
        elif task == "routing":
            ks = [k for k in (1, 5, 10) if f"recall@{k}" in m]
            if ks:
                ax.plot(ks, [m[f"recall@{k}"] for k in ks], "o-", label=r["system"])
                drew = True
        else:
            pk, rk = (("evidence_page_precision", "evidence_page_recall") if task == "paper_qa"
                      else ("evidence_paper_precision", "evidence_paper_recall"))
            if pk in m and rk in m:
                ax.scatter([m[rk]], [m[pk]], s=60, label=r["system"])
                ax.annotate(r["system"], (m[rk], m[pk]), fontsize=8, xytext=(4, 4), textcoords="offset points")
                drew = True
    if drew:
        if task == "routing":
            ax.set(xlabel="k", ylabel="recall@k (gold document in the top k)", title=f"{bench}: recall at k",
                   ylim=(0, 1.02))
        else:
            what = {"paper_qa": "evidence pages", "synthesis": "cited papers", "sentences": "gold sentences, k = 1, 3, 5"}
            ax.set(xlabel="recall", ylabel="precision", title=f"{bench}: precision vs recall ({what.get(task, '')})",
                   xlim=(0, 1.02), ylim=(0, 1.02))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        save(fig, "pr")
    else:
        plt.close(fig)

    # latency distribution
    lat = [(r["system"], [i["latency_ms"] for i in r["per_item"] if "latency_ms" in i]) for r in rows]
    lat = [(s, v) for s, v in lat if v]
    if lat:
        fig, ax = plt.subplots(figsize=(max(5, 0.9 * len(lat) + 2), 4))
        ax.boxplot([[max(1e-3, x) for x in v] for _, v in lat], showfliers=True)
        ax.set_xticks(range(1, len(lat) + 1), [s for s, _ in lat], rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set(ylabel="latency per question (ms, log)", title=f"{bench}: latency distribution")
        ax.grid(alpha=0.3, axis="y")
        save(fig, "latency")

    # tokens per layer
    tok = [(r["system"], [r["metrics"].get(f"tokens_layer{i}", 0.0) for i in (0, 1, 2)]) for r in rows
           if any(f"tokens_layer{i}" in r["metrics"] for i in (0, 1, 2))]
    if tok:
        fig, ax = plt.subplots(figsize=(max(5, 0.9 * len(tok) + 2), 4))
        bottom = [0.0] * len(tok)
        for layer, label in enumerate(("layer 0 (search results)", "layer 1 (trees, summaries)",
                                       "layer 2 (full text)")):
            vals = [t[1][layer] for t in tok]
            ax.bar(range(len(tok)), vals, bottom=bottom, label=label)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_xticks(range(len(tok)), [s for s, _ in tok], rotation=30, ha="right", fontsize=8)
        ax.set(ylabel="tokens returned per question (mean)", title=f"{bench}: tokens per layer")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, axis="y")
        save(fig, "tokens")
    return written


# ---- console --------------------------------------------------------------------------------
# columns a narrow terminal loses first (they stay in --out and --report): cost, then the paired
# interval, then the abstention and paper columns; the quality metrics and the names always stay
_DROP_FIRST = (("tokens_total",), ("latency_p50_ms",), ("paired",), ("abstention_precision", "abstention_recall"),
               ("evidence_paper_precision", "evidence_paper_recall"), ("recall@5", "precision@5"))


def _min_width(header: str, cells: Sequence[str], wrap: bool = False) -> int:
    """Columns a column needs: its widest cell or header (a wrapping column: its longest word)."""
    parts = ([w for x in [header, *cells] for w in x.split()] if wrap else [header, *cells])
    return max((len(re.sub(r"\[/?[a-z ]*\]", "", w)) for w in parts), default=1) + 3  # padding + border


def console_table(results: Sequence[dict], width: int | None = None):
    """A rich Table: one row per system, the task's headline metrics.  With ``width`` (the
    terminal's), columns of :data:`_DROP_FIRST` are left out, in that order, until the rest fit
    without cutting a number; the caption names them."""
    task = next((r["config"].get("task") for r in results if r.get("config")), "")
    bench = next((r["benchmark"] for r in results), "")
    # a column no system reported (abstention on a benchmark without unanswerable questions, papers
    # on one asked of single papers) is left out
    keys = [k for k in CONSOLE_KEYS.get(task, ()) if any(k in r.get("metrics", {}) for r in results)
            or not k.startswith(("abstention_", "evidence_paper_"))]
    ok = [r for r in results if r["status"] == "ok"]
    columns: list[tuple[str, str, list[str]]] = []  # (key, header, cells)
    for k in keys:
        cells = []
        for r in results:
            if k not in r["metrics"]:
                cells.append("-")
                continue
            text = _fmt(k, r["metrics"][k])
            best = _best(ok, k)
            cells.append(f"[bold]{text}[/]" if best is not None and _fmt(k, best) == text else text)
        columns.append((k, SHORT.get(k, k), cells))
    # the first system's headline metric, paired question by question (report: every metric)
    headline = (QUALITY_KEYS.get(task) or (None,))[0]
    paired = {f["system"]: f for f in paired_rows(results, task) if f["metric"] == headline} if headline else {}
    if paired:
        found = [paired.get(r["system"]) for r in results]
        cells = [f"{f['diff']:+.3f} [{f['diff_lo']:+.3f}, {f['diff_hi']:+.3f}]" if f else "-" for f in found]
        columns.append(("paired", f"{SHORT.get(headline, headline)} vs {ok[0]['system']} [95 %]", cells))
    names = [r["system"] for r in results]
    statuses = [r["status"] if r["status"] == "ok" else f"[yellow]{r['status']}[/]" for r in results]
    fixed = _min_width("system", names) + _min_width("n", [str(r["n"]) for r in results]) + \
        _min_width("status", [r["status"] for r in results]) + 1
    dropped: list[str] = []

    def needed() -> int:
        return fixed + sum(_min_width(h, cs, wrap=k == "paired") for k, h, cs in columns)

    if width is not None:
        for group in _DROP_FIRST:
            if needed() <= width:
                break
            dropped += [h for k, h, _ in columns if k in group]
            columns = [c for c in columns if c[0] not in group]
    table = Table(title=f"{bench} ({task})")
    # the system's name is what a row is read by: never cut to "vectre..." in a narrow terminal
    table.add_column("system", no_wrap=True, min_width=max((len(n) for n in names), default=6))
    table.add_column("n", justify="right", no_wrap=True)
    for key, header, _ in columns:
        table.add_column(header, justify="right", no_wrap=key != "paired")
    table.add_column("status", no_wrap=True)
    for i, name in enumerate(names):
        table.add_row(name, str(results[i]["n"]), *[cs[i] for _, _, cs in columns], statuses[i])
    notes = []
    if any(k == "paired" for k, _, _ in columns):
        notes.append("[95 %]: bootstrap interval of the paired difference; one holding 0 is within the questions' noise")
    if dropped:
        notes.append(f"left out for the terminal's width (all are in --out and --report): {', '.join(dropped)}")
    table.caption = "\n".join(notes) or None
    return table


def load_results(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in paths:
        data = json.loads(Path(p).read_text())
        out.extend(data if isinstance(data, list) else [data])
    return out
