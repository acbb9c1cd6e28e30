"""Where the agent's evidence pages go wrong on a paper-QA benchmark (qasper, qasper_pdf).

For every question with gold evidence pages: the page recall of the within-paper candidates at
several depths (is the evidence found at all?), the rank of the first gold page, and the pages the
navigator cites.  A diagnostic for developers (reads evaluation questions: use it to find bugs,
never to choose thresholds).  The ingested store is kept under --work so re-runs are quick.

    .venv/bin/python benchmarks/diag_paperqa.py qasper --work /tmp/diag-qasper
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("benchmark", choices=["qasper", "qasper_pdf"])
    ap.add_argument("--data", default=None)
    ap.add_argument("--work", default="/tmp/diag-paperqa")
    ap.add_argument("--system", default="vectree")
    ap.add_argument("--json", default=None, help="write per-question rows here")
    args = ap.parse_args()
    from vectree.evaluation.loaders import load_benchmark
    from vectree.evaluation.systems.base import RunContext
    from vectree.evaluation.systems.vectree import VectreeAgentSystem
    from vectree.retrieval.embed import get_embedder

    data = Path(args.data or Path(__file__).resolve().parents[1].parent / "shared" / "data" / args.benchmark)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    bench = load_benchmark(args.benchmark, data, work_dir=work)
    system = VectreeAgentSystem(args.system)
    system.unavailable()
    system.prepare(bench, RunContext(work_dir=work, data_dir=data), [])
    tb = system.toolbox
    emb = get_embedder()
    rows = []
    for q in bench.questions:
        doc_id = system.doc_ids[q.paper_id]
        gold = set(q.evidence_pages)
        passages = tb.passages(doc_id)
        hits = passages.rank(q.question, emb.encode_query(q.question), 40)
        order = list(dict.fromkeys(h.page_no for h in hits))
        first_gold = next((n for n, p in enumerate(order) if p in gold), None)
        res = system.answer_paper(q, None)
        row = {"q": q.question, "gold": sorted(gold), "pages_ranked": order[:8], "first_gold_rank": first_gold,
               "cited": list(res.pages), "answer": res.answer[:80], "refs": [r.answer[:60] for r in q.references],
               "n_pages": len(tb.page_texts(doc_id)), "confidence": res.extra.get("confidence"),
               "abstained": res.extra.get("abstained")}
        for depth in (5, 12, 20, 40):
            pages = {h.page_no for h in hits[:depth]}
            row[f"cand_recall@{depth}"] = len(gold & pages) / len(gold) if gold else None
        rows.append(row)
    with_ev = [r for r in rows if r["gold"]]
    print(f"{args.benchmark}: {len(rows)} questions, {len(with_ev)} with evidence pages")
    for depth in (5, 12, 20, 40):
        vals = [r[f"cand_recall@{depth}"] for r in with_ev]
        print(f"  hybrid sentence candidates, page recall @{depth}: {sum(vals) / len(vals):.3f}")
    prec = [len(set(r["cited"]) & set(r["gold"])) / len(r["cited"]) if r["cited"] else 0.0 for r in with_ev]
    rec = [len(set(r["cited"]) & set(r["gold"])) / len(r["gold"]) for r in with_ev]
    print(f"  navigator cited pages: P {sum(prec) / len(prec):.3f} R {sum(rec) / len(rec):.3f}; "
          f"mean cited {sum(len(r['cited']) for r in with_ev) / len(with_ev):.2f}, "
          f"mean gold {sum(len(r['gold']) for r in with_ev) / len(with_ev):.2f}, "
          f"mean pages {sum(r['n_pages'] for r in with_ev) / len(with_ev):.1f}")
    for r in rows:
        print(f"- gold {r['gold']} cited {r['cited']} ranked {r['pages_ranked']} | {r['q'][:70]} -> {r['answer'][:50]!r}"
              f" (conf {r['confidence']})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
