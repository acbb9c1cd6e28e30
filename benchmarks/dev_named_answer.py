"""Should "What/Which <kind> ...?" questions be answered by the names the evidence gives?

    .venv/bin/python benchmarks/dev_named_answer.py [--data ../shared/data] [--split dev|train|all]

QASPER asks for a named thing in 40 % of its dev-dictionary questions ("What datasets do they
use?", "Which baselines ...?", "What evaluation metric ...?"): the kind of thing is named, the
answer is the name (a corpus, a model, a metric).  For each such
question of the QASPER dev dictionary (never an evaluation paper; ``--split`` by article, the
reader card's split) and its gold evidence sentence, compare QASPER token F1 of:

* ``policy``: the navigator's answer today (the reader's span unless it fails the checks, then the
  clause rule) -- as :mod:`benchmarks.dev_answer_form`;
* ``named``: :func:`vectree.agent.navigator.named_answer` (the names in the sentence that the
  question does not already hold), the policy where the sentence names nothing new;
* ``named-or-span``: the names only when the reader's span holds none of them.

* ``clause (no reader)`` / ``named, else clause (no reader)``: the same without the reader (the
  path of ``VECTREE_RERANKER=off``).

Measured 7 December (shipped reader; the reader's ``dev`` split is its held-out questions, its
``train`` split the questions its span head was trained on, so the policy is flattered there):

| split | kind questions | names found | policy | named | named-or-span | clause | named, else clause |
|---|---:|---:|---:|---:|---:|---:|---:|
| dev | 64 of 141 | 46 | .331 | **.465** | .392 | .230 | .439 |
| train | 206 of 495 | 154 | .461 | .432 | .473 | .278 | .407 |

Adopted (``named``, decided on dev; the rule has no fitted number): the navigator answers such a
question with the names of its evidence sentence.  Tried and not adopted: ending a name with the
kind the question asks for when it follows ("the Europarl corpus"): dev .455, train .435.
Kept: an author citation ("See et al.") is no name (dev unchanged).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dev_answer_form import qasper_items  # noqa: E402

from vectree.agent.navigator import OfflineNavigator, asks_for_name, echoes, named_answer  # noqa: E402
from vectree.evaluation.metrics import max_answer_f1  # noqa: E402
from vectree.retrieval.rerank.data import eval_article_ids  # noqa: E402
from vectree.retrieval.rerank.model import get_reader  # noqa: E402


def items(data: Path, split: str):
    """(question, gold sentence, references) of the split's QASPER dev-dictionary questions."""
    for question, gold, refs, _ in qasper_items(data, eval_article_ids(data), split):
        yield question, gold, refs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--split", default="dev", choices=["dev", "train", "all"])
    args = ap.parse_args()
    reader = get_reader()
    nav = OfflineNavigator.__new__(OfflineNavigator)
    rows: dict[str, list[float]] = {}
    fired = 0
    n_all = 0
    examples = []
    for q, sent, refs in items(Path(args.data), args.split):
        n_all += 1
        if not asks_for_name(q):
            continue
        r = reader.read(q, [sent])[0]
        span = r.span
        bad = not span or len(span.split()) > 12 or echoes(span, q)
        policy = nav._clause_answer(q, sent) if bad else span
        names = named_answer(q, sent)
        fired += names is not None
        named = names or policy
        named_or_span = policy if names is None or (not bad and any(n.lower() in span.lower() for n in names.split(", "))) else names
        clause = nav._clause_answer(q, sent)
        for key, text in (("policy", policy), ("named", named), ("named-or-span", named_or_span),
                          ("clause (no reader)", clause), ("named, else clause (no reader)", names or clause)):
            rows.setdefault(key, []).append(max_answer_f1(text, refs))
        if len(examples) < 12 and names:
            examples.append((q, policy, names, refs[0]))
    n = len(rows.get("policy", []))
    print(f"QASPER dev dictionary, split {args.split}: {n} of {n_all} questions ask for a named kind; "
          f"the rule found names in {fired}")
    print("| answer | token F1 |\n|---|---:|")
    for key, v in rows.items():
        print(f"| {key} | {mean(v):.3f} |")
    for q, p, nm, ref in examples:
        print(f"- {q!r}: policy {p!r} / named {nm!r} / reference {ref!r}")


if __name__ == "__main__":
    main()
