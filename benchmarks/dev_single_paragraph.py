"""Does returning only nodes inside one paragraph help?  Decided on SproutRAG's dev split.

    .venv/bin/python benchmarks/dev_single_paragraph.py [--model FOLDER] [--data ../shared/data]

Scores the model's own search on the dev documents of its training sources (HotpotQA and QASPER
dev splits, never an evaluation question) with ``SearchParams.single_paragraph`` on and off, and
prints dev IE@1/3/5 per source (:func:`vectree.retrieval.sprout.train.dev_metrics`).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (default: the packaged default)")
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    from vectree.retrieval.sprout.data import build_training_set
    from vectree.retrieval.sprout.encoder import embed_texts
    from vectree.retrieval.sprout.model import default_model_dir, load_model
    from vectree.retrieval.sprout.train import dev_metrics

    cache = Path.home() / ".cache" / "vectree-sprout-calib"
    dev = build_training_set(args.data, cache_dir=cache).split("dev")
    dev.encode = lambda t: embed_texts(t, cache_dir=cache)
    model = load_model(args.model or default_model_dir())
    print(f"model {model.config.model_id}; dev: {dev.summary()}")
    base = model.search_params()
    rows = {}
    for flag in (False, True):
        m = dev_metrics(model, dev, params=replace(base, single_paragraph=flag))
        rows[flag] = m
    sources = sorted(k for k, v in rows[False].items() if isinstance(v, dict))
    print("| source | single_paragraph | IE@1 | IE@3 | IE@5 |")
    print("|---|---|---:|---:|---:|")
    for src in sources:
        for flag in (False, True):
            v = rows[flag][src]
            print(f"| {src} | {'on' if flag else 'off'} | {v['ie@1']:.4f} | {v['ie@3']:.4f} | {v['ie@5']:.4f} |")
    print(f"mean dev IE: off {rows[False]['mean_ie']}, on {rows[True]['mean_ie']}")


if __name__ == "__main__":
    main()
