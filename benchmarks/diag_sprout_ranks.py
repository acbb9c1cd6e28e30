"""What SproutRAG's 2nd..kth nodes add: per rank, the node's size (sentences) and precision, and
IE@k beside paragraph retrieval, on a sentence benchmark's split.

    .venv/bin/python benchmarks/diag_sprout_ranks.py dragonball --split train
    .venv/bin/python benchmarks/diag_sprout_ranks.py hotpotqa --split train

``--set "NAME=VALUE;NAME=VALUE"`` adds SproutRAG with those search settings (``SearchParams``).
Diagnostic (it reads gold): nothing here is a tuned setting.

Measured 7 December (session 11), shipped ``sprout-default-v4`` (never trained on DragonBall), on
DragonBall's ``train`` split (``dragonball_split``; not the held-out dev queries):

| system | IE@1 | IE@3 | IE@5 | sentences by rank 1..5 | precision by rank 1..5 |
|---|---:|---:|---:|---|---|
| sprout | .257 | .157 | .108 | 3.7 3.3 3.3 3.2 3.2 | .40 .16 .01 .04 .07 |
| sprout ``max_sentences=3`` | .261 | .174 | .129 | 2.6 2.3 2.3 2.3 2.2 | .41 .18 .03 .07 .06 |
| sprout ``tau=100`` (every pick from the fill tiers) | .258 | .155 | .104 | 3.7 3.4 3.4 3.3 3.3 | .40 .15 .01 .04 .02 |
| paragraphs | .228 | .153 | .107 | 3.1 3.0 3.0 3.3 3.0 | .37 .08 .14 .04 .02 |
| paragraphs-bm25 | .274 | .193 | .131 | 2.7 3.1 3.0 2.8 2.9 | .43 .19 .04 .05 .04 |

What it shows: past the second node almost nothing returned is evidence (precision .01-.07 at
ranks 3-5 for every system), so IE@3/5 are decided by how few sentences the later nodes cost.
Smaller nodes (``max_sentences=3``) lift DragonBall's IE@3/5 by 11 % / 19 %, but on the shipped
model's own dev split (``benchmarks/dev_search_params.py --set max_sentences=3``: HotpotQA and
QASPER dev) they cost mean IE .2593 -> .2414 (HotpotQA IE@1 .462 -> .362, whose evidence is whole
paragraphs): a corpus-specific granularity the shipped model cannot learn without DragonBall's
licence-restricted queries, so it was not adopted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]


def main() -> None:
    from _sentence_setup import sentence_arguments

    ap = sentence_arguments(__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
                    help="also run SproutRAG with this search setting")
    ap.add_argument("--systems", default="sprout,paragraphs,paragraphs-bm25")
    args = ap.parse_args()
    from _sentence_setup import load_sentence_benchmark

    from vectree.evaluation.sentences import covered_sentences, score_units, Unit
    from vectree.evaluation.systems import make_system as get_system
    from vectree.evaluation.systems.base import RunContext

    bench, questions, docs, emb, data = load_sentence_benchmark(args.benchmark, args.data, args.split)
    questions = questions[: args.limit] if args.limit else questions
    print(f"{args.benchmark} ({args.split}): {len(questions)} queries with gold")
    ctx = RunContext(seed=0, work_dir=Path("/tmp/s11/sr"), data_dir=data, _embedder=emb, docs=docs)
    sentences = bench.sentences()
    import json

    systems = {}
    for n in args.systems.split(","):
        s = get_system(n, "sentences")
        s.prepare(bench, ctx, docs)
        systems[n] = s
    for setting in args.sets:
        s = get_system("sprout", "sentences")
        s.prepare(bench, ctx, docs)
        base = s._params
        pairs = [(a.split("=", 1)[0], json.loads(a.split("=", 1)[1])) for a in setting.split(";")]

        def params(base=base, pairs=pairs):
            p = base()
            for name, value in pairs:
                setattr(p, name, value)
            return p

        s._params = params
        systems[f"sprout {setting}"] = s
    for n, s in systems.items():
        size = np.zeros(5); prec = np.zeros(5); cnt = np.zeros(5); ie = {1: [], 3: [], 5: []}
        for q in questions:
            hits = s.search(q.text, 5)
            units = [Unit.of(h.doc_id, list(h.spans)) for h in hits]
            sc = score_units(units, q.gold, sentences, (1, 3, 5))
            for k in ie:
                ie[k].append(sc[f"ie@{k}"])
            gold = set(q.gold)
            for r, u in enumerate(units):
                cov = [(u.doc_id, i) for i in covered_sentences(sentences[u.doc_id], u.spans)]
                size[r] += len(cov); prec[r] += len(set(cov) & gold) / max(1, len(cov)); cnt[r] += 1
        print(f"{n}: IE@1/3/5 " + " / ".join(f"{np.mean(ie[k]):.3f}" for k in ie) +
              " | size by rank " + " ".join(f"{size[r]/max(1,cnt[r]):.1f}" for r in range(5)) +
              " | precision by rank " + " ".join(f"{prec[r]/max(1,cnt[r]):.2f}" for r in range(5)), flush=True)


if __name__ == "__main__":
    main()
