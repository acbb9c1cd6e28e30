"""`vectree ask` latency end to end (offline agent, Layer 0 included), with and without the reranker.

    .venv/bin/python benchmarks/bench_ask_latency.py [--store /tmp/vt-ask-store] [--n 60]

Builds (once) a store from real PDFs: ``../shared/data/pdfs`` (the parser fixtures, 37 PDFs) and
the two ``qasper_pdf`` arXiv papers, with ``vectree ingest``'s own path.  Then asks questions as
``vectree ask`` does without ``--paper`` (the offline navigator through the Toolbox: query
encoding, Layer-0 hybrid search, paper reranking, within-paper search, reading, page selection),
warm (the models loaded once, as in the service or an MCP session), one at a time:

* the ``qasper_pdf`` questions, then the pageBench questions (QASPER train papers; most are not
  in this store, which is what a user's off-corpus questions cost: the agent still routes, reads
  and abstains);
* each question with the shipped reranker and reader (``VECTREE_RERANKER=default``) and with
  them off (``off``), in the same run, on the same Toolbox store.

Prints p50 / p95 ms per setting and the share of questions answered (not abstained).  The
issue's target: p50 <= 500 ms per question on 2 cores, query encoding and reranking included.
A process's first question also pays for loading the models; that cold start is printed apart.

Measured 2026-12-06 (2 CPU cores, otherwise idle; 39 papers, built in 619 s; 60 questions):

| reranker + reader | n | first question, cold (ms) | p50 ms | p95 ms | answered |
|---|---:|---:|---:|---:|---:|
| default (shipped) | 60 | 671 | 430 | 682 | 0.97 |
| off | 60 | 179 | 136 | 275 | 1.00 |

Session 8 (7 December, after the second-paper rule), interleaved with the session-7 code
(144bcc8, a worktree on the same store) on the same machine, whose load varied (1 to 2): p50 over
six runs of the current code 403-565 ms (median 476), of the session-7 code 431-558 ms over four
(median 474); answered .80 against .78.  No measurable change; the 500 ms target holds at the
median, not in every run on this machine.

The p50 target (500 ms) is met with the reranker.  Most pageBench questions are about papers that
are not in this store, yet 97 % were answered rather than abstained on: the store's NLP papers
are near enough in topic that the calibrated abstention rarely fires (no label says which of
these answers are wrong, so this is a caution, not a measured error rate).

Again on 2026-12-06 (evening), with the off-corpus floor (``retrieval/rerank/coverage.py``), the
store already built:

| reranker + reader | n | first question, cold (ms) | p50 ms | p95 ms | answered |
|---|---:|---:|---:|---:|---:|
| default (shipped) | 60 | 6,615 | 370 | 593 | 0.78 |
| off | 60 | 190 | 121 | 295 | 1.00 |

The floor abstains on more of the off-corpus pageBench questions (answered .97 -> .78) and an
abstention skips the within-paper reading, so p50 fell.  The cold figure now includes importing
torch and transformers (7.6 s of a profiled 9.1 s first question): the earlier run had built the
store in the same process, which had imported them already.

Again on 2026-12-06 (night), with the in-paper floor and the off-corpus floor on one or two papers
(``bench_offcorpus_store.py``), the store already built, machine otherwise idle:

| reranker + reader | n | first question, cold (ms) | p50 ms | p95 ms | answered |
|---|---:|---:|---:|---:|---:|
| default (shipped) | 60 | 8,448 | 399 | 691 | 0.78 |
| off | 60 | 204 | 133 | 323 | 1.00 |

7 December (session 15): the reader reads its pairs in batches of 8 of similar token length
(``rerank.model.Reader._forward``; it was one padded batch of up to 32), same outputs (logits equal
to 1e-6, the same spans).  On a store of the shared PDFs (``--store`` of an earlier session's
ingest), 60 questions, the old code and the new one run back to back on the same idle machine:
``search_within_paper`` median 244 -> 168 ms, ``search_papers`` 207 -> 181 ms (its paper entries
are long, so they pad little either way), the question p50 457 -> 384 ms.  Three runs of this
script that day (new, old, new): p50 378 / 421 / 442 ms with the reranker against 147 / 143 / 191 ms
without it, the machine's drift showing in the second.

7 December (session 16), a fresh store of the same 39 papers (built in 635 s; ingest builds the
package's SproutRAG trees), with the third setting: SproutRAG's vote inside papers
(`vectree-sprout`, ``within_paper=sprout``: the navigator searches each paper twice, cites the plain
passages' pages and lets SproutRAG's order pick the answer sentence), and recent query vectors
remembered (``Embedder.encode_query``: Layer 0, the node search and each within-paper search encode
the same question):

| reranker + reader, within-paper mode | n | p50 ms | p95 ms | answered |
|---|---:|---:|---:|---:|
| default, within_paper=auto (plain passages; shipped) | 60 | 376 | 502 | 0.80 |
| default, within_paper=sprout | 60 | 543 | 838 | 0.80 |
| off | 60 | 78 | 182 | 1.00 |

Before the query memory, the same store: 378 / 579 / 119 ms.  The second search reads the
sentences the first did not (about 60 ms a paper: the reader is compute-bound, 12 sentences of up
to 96 word pieces take 139 ms on 2 cores) and the node search adds 20 ms, so SproutRAG's vote
would put `vectree ask` above issue 16's 500 ms p50 for +.006 qasper answer F1 (dev +.017): it
stays the `vectree-sprout` system, not the default.

Later the same evening, the reader through ONNX Runtime (``VECTREE_READER_BACKEND``; the same
answers) against torch, the same store, runs in turn torch / onnx / torch / onnx on a machine
whose load had risen (torch's default p50 406-456 ms here against 376 earlier):

| backend | default p50 / p95 ms | within_paper=sprout p50 / p95 ms |
|---|---:|---:|
| torch | 456 / 656, 406 / 588 | 638 / 1,108, 579 / 858 |
| onnx | **321** / 475, **337** / 517 | 475 / 850, 482 / 832 |

With ONNX Runtime SproutRAG's vote comes under 500 ms p50, by less than this machine's run-to-run
spread, so the default stays plain passages.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = REPO.parent / "shared" / "data"


def questions(n: int) -> list[str]:
    out = [json.loads(line)["question"] for line in (DATA / "qasper_pdf" / "questions.jsonl").read_text().splitlines()
           if line.strip()]
    with open(DATA / "qasper" / "pagebench" / "0b_qa_pairs.csv", newline="", encoding="utf-8") as f:
        out += [row["question"] for row in csv.DictReader(f)]
    return out[:n]


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="/tmp/vt-ask-store")
    ap.add_argument("--n", type=int, default=60)
    args = ap.parse_args()

    from vectree.retrieval.config import set_offline_model_env

    set_offline_model_env()
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox
    from vectree.pipelines.ingest import ingest_paths

    store = Path(args.store)
    if not store.exists():
        t0 = time.perf_counter()
        _, report = ingest_paths([DATA / "pdfs", DATA / "qasper_pdf" / "pdfs"], store)
        print(f"built {store} in {time.perf_counter() - t0:.0f} s ({len(report.plan.add)} papers)")
    qs = questions(args.n)
    rows = []
    per_tool: dict[str, list[float]] = {}
    # the shipped default (with the reader, "auto" is plain passages), the same with SproutRAG's
    # vote (`vectree-sprout`: two searches a paper, see agent/navigator.py), and without the reranker
    for reranker, within in (("default", "auto"), ("default", "sprout"), ("off", "auto")):
        t0 = time.perf_counter()
        tb = Toolbox(store, reranker="auto" if reranker == "default" else "off", within_paper=within)
        nav = OfflineNavigator(tb)
        first = nav.answer(qs[0])
        cold = (time.perf_counter() - t0) * 1000
        times, answered = [], 0
        for q in qs:
            a = nav.answer(q)
            times.append(a.seconds * 1000)
            answered += not a.abstained
            if (reranker, within) == ("default", "auto"):  # where a question's time goes: each tool's ms (its calls summed)
                spent: dict[str, float] = {}
                for step in a.trace["steps"]:
                    spent[step["tool"]] = spent.get(step["tool"], 0.0) + step["ms"]
                for tool, ms in spent.items():
                    per_tool.setdefault(tool, []).append(ms)
        rows.append((f"{reranker}, within_paper={within}", len(qs), cold, statistics.median(times), percentile(times, 95), answered / len(qs)))
        del tb, nav, first
    print(f"{len(qs)} questions, store {store}")
    sprout = (store / "sprout" / "trees").exists()
    print(f"SproutRAG trees in the store: {'yes' if sprout else 'no (within_paper=sprout fails)'}")
    print("| reranker + reader, within-paper mode | n | first question, cold (ms) | p50 ms | p95 ms | answered |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:,.0f} | {r[3]:,.0f} | {r[4]:,.0f} | {r[5]:.2f} |")
    print("\nwith the reranker, per tool (the questions that called it):")
    print("| tool | questions | median ms | p95 ms |")
    print("|---|---:|---:|---:|")
    for tool, ms in per_tool.items():
        print(f"| {tool} | {len(ms)} | {statistics.median(ms):,.0f} | {percentile(ms, 95):,.0f} |")


if __name__ == "__main__":
    main()
