"""Compare SproutRAG search settings on the dev split (never on evaluation questions).

    .venv/bin/python benchmarks/dev_search_params.py [--model FOLDER] [--data ../shared/data] \\
        --set tau=-100 --set single_paragraph=false ...

Scores the model's own search on the dev documents of its training sources (HotpotQA and QASPER
dev splits) with its configured settings and with each ``--set NAME=VALUE`` override applied on
its own, printing dev IE@1/3/5 per source and the mean (:func:`vectree.retrieval.sprout.train.dev_metrics`).

Measured 2026-12-06 with sprout-default-v3 (dev mean IE over HotpotQA, QASPER, QASPER-multi and
k = 1, 3, 5): as configured .2300; ``tau=-100`` (one candidate tier, the learned threshold
ordering nothing) .2332; ``fill_k=false`` (stop where the expected IE stops rising, fewer than k
nodes) .2550, HotpotQA IE@3 .445 vs .406.  Neither was adopted: the first makes the learned tau
idle for a gain within noise, the second breaks "k means k" (issue 17: k distinct nodes whenever
the documents have k leaves) and buys its IE@3/5 by returning fewer units.

``--choose-logit-scale`` runs the choice a training makes after stage 2
(:func:`vectree.retrieval.sprout.train.choose_logit_scale`: the greedy's logit scale with the best
mean dev IE) on the model as it is; ``--write`` stores the choice in the model folder's
``config.json`` (how ``sprout-default-v4`` got ``logit_scale`` 2.0 on 7 December, dev mean IE
.2616 at 1, .2656 at 1.5, .2697 at 2, .2696 at 3).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (default: the packaged default)")
    ap.add_argument("--data", default=None)
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--choose-logit-scale", action="store_true", help="choose search.logit_scale on dev")
    ap.add_argument("--write", action="store_true", help="with --choose-logit-scale: store it in the model's config.json")
    args = ap.parse_args()
    from vectree.retrieval.sprout.data import build_training_set
    from vectree.retrieval.sprout.encoder import embed_texts
    from vectree.retrieval.sprout.model import default_model_dir, load_model
    from vectree.retrieval.sprout.train import _DevCache, choose_logit_scale, dev_metrics

    cache_dir = Path.home() / ".cache" / "vectree-sprout-calib"
    dev = build_training_set(args.data, cache_dir=cache_dir).split("dev")
    dev.encode = lambda t: embed_texts(t, cache_dir=cache_dir)
    model = load_model(args.model or default_model_dir())
    cache = _DevCache(model, dev)
    if args.choose_logit_scale:
        folder = Path(args.model or default_model_dir())
        _, record = choose_logit_scale(model, cache, log=print)
        if args.write:
            path = folder / "config.json"
            config = json.loads(path.read_text())
            config["search"]["logit_scale"] = record["chosen"]
            config.setdefault("training", {})["logit_scale_dev"] = record
            path.write_text(json.dumps(config, indent=1))
            print(f"wrote search.logit_scale = {record['chosen']:g} to {path}")
        return
    variants = [("as configured", {})] + [(s, {s.split("=", 1)[0]: json.loads(s.split("=", 1)[1])}) for s in args.sets]
    print(f"model {model.config.model_id}")
    print("| setting | source | IE@1 | IE@3 | IE@5 |")
    print("|---|---|---:|---:|---:|")
    for name, over in variants:
        m = dev_metrics(model, params=model.search_params(**over), cache=cache)
        for src, v in m.items():
            if isinstance(v, dict):
                print(f"| {name} | {src} | {v['ie@1']:.4f} | {v['ie@3']:.4f} | {v['ie@5']:.4f} |")
        print(f"| {name} | **mean** | {m['mean_ie']} | | |")


if __name__ == "__main__":
    main()
