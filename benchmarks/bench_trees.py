"""Offline section-tree extractor against the PDFs' own outlines.

On every PDF of ``../shared/data/pdfs`` that carries an embedded outline, the outline is the gold
standard: the layout extractor runs with the outline hidden, and its headings are scored.

Scoring (``vectree.retrieval.trees.evaluate``): a heading matches a gold entry when the titles are equal
after normalisation, with or without the section number; precision = matched / extracted, recall =
matched / gold, page accuracy = matched headings on the gold page / matched.  Gold entries that
are the paper's own title, or that are not printed as a heading anywhere in the text layer, are
left out (and listed).  ``P*``/``R*`` leave front/back matter (Abstract, References, ...) out on
both sides, since outlines list those inconsistently.

Over all papers it reports the verified fraction of the extracted entries (the same verifier as
the pipeline) and the time per paper of extraction + verification (parsing not included, shown
apart), for the layout path and for the production path (outline when present, else layout).

Run:  .venv/bin/python benchmarks/bench_trees.py [--pdfs DIR] [--show DOC_SUBSTRING]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from vectree.retrieval.pdf import parse_pdf  # noqa: E402
from vectree.retrieval.trees.evaluate import outline_gold, printed_as_heading, score  # noqa: E402
from vectree.retrieval.trees.offline import extract_offline  # noqa: E402
from vectree.retrieval.trees.verify import prepare_pages, verify_entries  # noqa: E402

TARGETS = {"precision": 0.8, "recall": 0.8, "verified": 0.9, "seconds": 1.0}
def run_path(parsed, *, use_outline: bool) -> tuple[list[dict], float, float]:
    record = {"title": parsed.title, "n_pages": parsed.n_pages, "outline": parsed.outline}
    started = time.perf_counter()
    result = extract_offline(record, parsed.pages, use_outline=use_outline)
    verdict = verify_entries(result.entries, prepare_pages([p["text"] for p in parsed.pages]))
    seconds = time.perf_counter() - started
    for e, c in zip(result.entries, verdict.checks):
        e["verified"] = c.verified
        e["note"] = c.verify_note
    frac = verdict.verified_fraction if verdict.checks else 1.0
    return result.entries, frac, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdfs", default=str(REPO.parent / "shared" / "data" / "pdfs"))
    ap.add_argument("--show", default=None, help="print gold vs extracted for papers whose path contains this")
    args = ap.parse_args()
    console = Console(width=160)
    paths = sorted(Path(args.pdfs).rglob("*.pdf"))
    if not paths:
        console.print(f"[red]no PDFs under {args.pdfs}[/]")
        sys.exit(2)
    table = Table(title="layout extractor vs embedded outline (outline hidden)", show_lines=False)
    for col in ("paper", "gold", "got", "P", "R", "page", "P*", "R*", "verified", "s"):
        table.add_column(col, justify="right" if col != "paper" else "left")
    strict_tot = {"gold": 0, "got": 0, "matched": 0, "pages_ok": 0}
    lenient_tot = dict(strict_tot)
    per_paper_p, per_paper_r = [], []
    layout_verified, layout_times, prod_verified, prod_times, parse_times = [], [], [], [], []
    layout_n = layout_ok = prod_n = prod_ok = 0
    failing = []
    n_unprinted = 0
    page_misses: list = []
    unprinted_notes: list = []
    for path in paths:
        t0 = time.perf_counter()
        parsed = parse_pdf(path)
        parse_times.append(time.perf_counter() - t0)
        if parsed.status != "ok":
            failing.append((path.name, f"status {parsed.status}: {parsed.error}"))
            continue
        entries, frac, secs = run_path(parsed, use_outline=False)
        layout_verified.append(frac)
        layout_times.append(secs)
        layout_n += len(entries)
        layout_ok += sum(e["verified"] for e in entries)
        prod_entries, pfrac, psecs = run_path(parsed, use_outline=True)
        prod_times.append(psecs)
        prod_n += len(prod_entries)
        prod_ok += sum(e["verified"] for e in prod_entries)
        name = f"{path.parent.name}/{path.name}"[:44]
        if args.show and args.show in str(path):
            console.rule(name)
            for e in entries:
                mark = "✓" if e["verified"] else f"✗ {e['note']}"
                console.print(f"  {'  ' * (e['level'] - 1)}{e['title']}  [dim]p{e['page_start']}-{e['page_end']}[/] {mark}")
                if e.get("summary"):
                    console.print(f"  {'  ' * (e['level'] - 1)}  [dim italic]{e['summary'][:150]}[/]")
        gold, unprinted = outline_gold(parsed.outline, parsed.title, [p["text"] for p in parsed.pages])
        if not gold:
            continue
        n_unprinted += len(unprinted)
        if unprinted:
            unprinted_notes.append((name, unprinted))
        s = score(gold, entries)
        ls = score(gold, entries, lenient=True)
        texts = [p["text"] for p in parsed.pages]
        for g, e in s["pairs"]:
            if g["page"] != e["page_start"]:
                # who is right? the page that prints the heading
                gold_prints = 1 <= g["page"] <= len(texts) and printed_as_heading(g["title"], [texts[g["page"] - 1]])
                ours_prints = printed_as_heading(g["title"], [texts[e["page_start"] - 1]])
                page_misses.append((name, g["title"], g["page"], e["page_start"], gold_prints, ours_prints))
        for tot, sc in ((strict_tot, s), (lenient_tot, ls)):
            for k in tot:
                tot[k] += sc[k]
        per_paper_p.append(s["precision"])
        per_paper_r.append(s["recall"])
        table.add_row(
            name, str(s["gold"]), str(s["got"]), f"{s['precision']:.2f}", f"{s['recall']:.2f}",
            f"{s['page_acc']:.2f}", f"{ls['precision']:.2f}", f"{ls['recall']:.2f}", f"{frac:.2f}", f"{secs:.2f}",
        )
        if s["precision"] < TARGETS["precision"] or s["recall"] < TARGETS["recall"]:
            why = []
            if s["misses"]:
                why.append("missed: " + "; ".join(f"{g['title'][:40]} (p{g['page']})" for g in s["misses"][:6]))
            if s["extras"]:
                why.append("extra: " + "; ".join(f"{e['title'][:40]} (p{e['page_start']})" for e in s["extras"][:6]))
            failing.append((name, " | ".join(why)))
        if args.show and args.show in str(path):
            for label, items in (("missed", s["misses"]), ("extra", s["extras"])):
                for it in items:
                    console.print(f"  [yellow]{label}[/] {it['title']} p{it.get('page', it.get('page_start'))}")
            for g, e in s["pairs"]:
                if g["page"] != e["page_start"]:
                    console.print(f"  [yellow]page[/] {g['title']}: gold p{g['page']} got p{e['page_start']}")

    def micro(t):
        p = t["matched"] / t["got"] if t["got"] else 0.0
        r = t["matched"] / t["gold"] if t["gold"] else 0.0
        a = t["pages_ok"] / t["matched"] if t["matched"] else 0.0
        return p, r, a

    p, r, a = micro(strict_tot)
    lp, lr, la = micro(lenient_tot)
    table.add_section()
    table.add_row(
        f"ALL ({len(per_paper_p)} papers, micro)", str(strict_tot["gold"]), str(strict_tot["got"]),
        f"{p:.2f}", f"{r:.2f}", f"{a:.2f}", f"{lp:.2f}", f"{lr:.2f}",
        f"{layout_ok / layout_n if layout_n else 1:.2f}", f"{statistics.mean(layout_times):.2f}",
    )
    table.add_row(
        "mean over papers (macro)", "", "", f"{statistics.mean(per_paper_p):.2f}", f"{statistics.mean(per_paper_r):.2f}",
        "", "", "", "", "",
    )
    console.print(table)
    console.print("P*/R*: lenient (front/back matter left out on both sides).  verified: fraction of extracted entries the verifier passes.")
    summary = Table(title=f"all {len(paths)} PDFs: verified fraction and time per paper")
    for col in ("path", "papers", "entries", "verified", "mean s/paper", "max s/paper"):
        summary.add_column(col, justify="right" if col != "path" else "left")
    summary.add_row("layout (outline hidden)", str(len(layout_times)), str(layout_n),
                    f"{layout_ok / layout_n if layout_n else 1:.3f}", f"{statistics.mean(layout_times):.3f}", f"{max(layout_times):.3f}")
    summary.add_row("production (outline if present)", str(len(prod_times)), str(prod_n),
                    f"{prod_ok / prod_n if prod_n else 1:.3f}", f"{statistics.mean(prod_times):.3f}", f"{max(prod_times):.3f}")
    summary.add_row("(parse_pdf, for scale)", str(len(parse_times)), "", "", f"{statistics.mean(parse_times):.3f}", f"{max(parse_times):.3f}")
    console.print(summary)
    checks = {
        "precision >= 0.8": p >= TARGETS["precision"], "recall >= 0.8": r >= TARGETS["recall"],
        "verified >= 0.9": (layout_ok / layout_n if layout_n else 1) >= TARGETS["verified"],
        "< 1 s/paper": statistics.mean(layout_times) < TARGETS["seconds"],
    }
    console.print("targets: " + ", ".join(f"{k} {'[green]met[/]' if v else '[red]missed[/]'}" for k, v in checks.items()))
    if page_misses:
        off = sum(1 for m in page_misses if not m[4] and m[5])
        console.print(f"\n[bold]{len(page_misses)} matched headings on another page than the outline says[/]; in {off} of them "
                      "the outline's page does not print the heading and ours does:")
        for name, title, gp, ep, gold_prints, ours_prints in page_misses:
            who = "outline off" if not gold_prints and ours_prints else ("extractor off" if gold_prints and not ours_prints else "both print it")
            console.print(f"  {name}: {title[:50]!r} outline p{gp}, extracted p{ep} ({who})")
    if unprinted_notes:
        console.print(f"\n[bold]{n_unprinted} outline entries are not printed in the text layer[/] (left out of recall):")
        for name, items in unprinted_notes:
            console.print(f"  {name}: " + "; ".join(f"{g['title'][:40]} (p{g['page']})" for g in items[:8])
                          + (f" ... {len(items) - 8} more" if len(items) > 8 else ""))
    if failing:
        console.print("\n[bold]papers below a target, and why[/]")
        for name, why in failing:
            console.print(f"  {name}: {why}")


if __name__ == "__main__":
    main()
