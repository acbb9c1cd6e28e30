"""How much should SproutRAG's nodes weigh in within-paper search?  Calibrated on training data.

    .venv/bin/python benchmarks/calibrate_within_paper.py [--model FOLDER] [--data ../shared/data]

Builds SproutRAG's training set (its cache under ~/.cache/vectree-sprout-calib), takes the QASPER
documents of its ``dev`` split (never the evaluation papers), and ranks each question's passages
(the documents' chunks, each document followed by the next ones up to a short paper's length) as
``search_within_paper`` does -- BM25 + cosine + the SproutRAG nodes' vote -- at every weight and
passages-per-node setting of the grid, printing recall of the gold chunks at 5 and at 12 (what the
reader reranks): :func:`vectree.retrieval.passages.calibrate_sprout_weight`.

Measured 2026-12-06 with sprout-default-v2 (141 QASPER dev questions): plain passages (weight 0)
.418, the nodes' vote at weight 1 over all their passages .470 (the best), so the packaged default
keeps weight 1.  On the qasper evaluation (55 questions, full papers, reader reranking and page
selection after this first stage) the same vote still costs a little: vectree .330 / .583 / F1
.152 against vectree-sprout .306 / .559 / .135 (weight 1) and .302 / .559 / .134 (weight 2, an
earlier calibration on unpadded documents): the dev gain does not carry over.

With the reader in the loop (default; ``--no-reader`` for the first stage only): every setting's
first stage is also reranked by the live reader as ``search_within_paper`` does
(``rerank.apply.passage_reranker``), scored by the gold chunks' recall among the first reranked
sentence (the answer's) and the first 8 (those read).  Measured 2026-12-06, sprout-default-v3 and
the shipped reader, 141 QASPER dev questions: plain passages .286 (recall@1 .151, @8 .421), the
best vote weight 4 over all of a node's passages .320 (.165 / .475): on dev the nodes still help
after reranking.  Recorded in the model and measured once on the qasper evaluation (55 questions,
one run): vectree-sprout .309 / .469 / F1 .138 against vectree .344 / .497 / .167, below the
first-stage calibration's .333 / .510 / .138 (weight 2, best 3 per node).  The padded QASPER dev
documents (evidence paragraphs among other papers' paragraphs, where a topical node separates the
paper from its padding) do not stand for a full paper, whose text is all on one topic, with or
without the reader; so the reader-side choice was not recorded in the shipped model and the agent's
default (``within_paper=auto``) stays plain passages whenever a reader is active.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (default: the packaged default)")
    ap.add_argument("--data", default=None)
    ap.add_argument("--split", default="dev", choices=["train", "dev"])
    ap.add_argument("--write", action="store_true",
                    help="record the chosen first-stage weight in the model folder's config.json and card (how "
                    "the packaged default got its weight; newly trained models are calibrated by training)")
    ap.add_argument("--padding", default="next", choices=["next", "similar"],
                    help="pad each dev document with the next documents (default) or the most similar ones")
    ap.add_argument("--no-reader", action="store_true",
                    help="calibrate the first stage only (default: also with the live reader reranking)")
    args = ap.parse_args()
    from vectree.retrieval.passages import calibrate_sprout_weight
    from vectree.retrieval.sprout.data import build_training_set
    from vectree.retrieval.sprout.encoder import embed_texts
    from vectree.retrieval.sprout.model import default_model_dir, load_model

    t0 = time.perf_counter()
    cache = Path.home() / ".cache" / "vectree-sprout-calib"
    ts = build_training_set(args.data, cache_dir=cache, sources=("qasper",)).split(args.split)
    model = load_model(args.model or default_model_dir())
    from vectree.retrieval.rerank.apply import passage_reranker
    from vectree.retrieval.rerank.model import get_reader

    reader = None if args.no_reader else get_reader()
    out = calibrate_sprout_weight(model, ts.docs, ts.x, ts.xq, lambda t: embed_texts(t, cache_dir=cache),
                                  rerank=passage_reranker(reader) if reader else None, padding=args.padding)
    print(f"model {model.config.model_id}; {out['queries']} QASPER {args.split} questions; padding {args.padding}"
          + (f"; reader {reader.config.model_id}" if reader else "; no reader"))
    rk, rd = f"recall@{out['k']}", f"recall@{out['depth']}"
    r = out.get("reader") or {}
    rs = r.get("scores") or {}
    print(f"| weight / passages per node | first stage recall@{out['k']} | recall@{out['depth']} | score "
          + ("| reranked: recall@1 | recall@8 | score (reader) " if rs else "") + "|")
    print("|---|---:|---:|---:|" + ("---:|---:|---:|" if rs else ""))
    for w, s in out["scores"].items():
        row = f"| {w} | {s[rk]:.4f} | {s[rd]:.4f} | {s['score']:.4f} |"
        if rs:
            v = rs[w]
            row += f" {v['read_recall@1']:.4f} | {v['read_recall@8']:.4f} | {v['score']:.4f} |"
        print(row)
    print(f"chosen weight {out['weight']}, passages per node {out['per_node'] or 'all'}"
          + (f"; with the reader: weight {r['weight']}, passages per node {r['per_node'] or 'all'}" if r else "")
          + f" ({time.perf_counter() - t0:.0f} s)")
    if args.write:
        if args.split != "dev":
            raise SystemExit("--write records a dev-split calibration only")
        import json

        from vectree.retrieval.sprout.model import CONFIG_FILE, write_model_card

        folder = Path(args.model or default_model_dir())
        cfg = json.loads((folder / CONFIG_FILE).read_text())
        cfg["within_paper_weight"], cfg["within_paper_calibration"] = float(out["weight"]), out
        cfg["within_paper_per_node"] = out["per_node"]
        out.pop("reader", None)  # an instrument only (see above): not part of the model
        (folder / CONFIG_FILE).write_text(json.dumps(cfg, indent=1, sort_keys=True))
        write_model_card(folder, load_model(folder))
        print(f"recorded in {folder / CONFIG_FILE}")


if __name__ == "__main__":
    main()
