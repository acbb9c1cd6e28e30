"""Which answer form scores best on QASPER *training-side* questions (never the evaluation papers)?

For every QASPER dev-dictionary question of the reader's dev split (by article, the split the reader
card names) and every pagebench row on a non-evaluation paper, take the gold evidence sentence and
compare answer forms against the reference with QASPER's token F1:

* ``span``: the reader's span head (what the navigator answers when the span passes its checks),
* ``clause``: the navigator's clause rule,
* ``policy``: span unless it fails the navigator's checks, then clause (today's navigator),
* ``sentence``: the whole evidence sentence,
* ``span-clause``: the clause of the sentence that holds the span (split at , ; : and brackets,
  and before relative words), the span itself when it crosses clauses, the policy's answer when
  the span fails the checks.

Result (6 December, shipped reader; QASPER token F1 with the gold evidence sentence given):

| source | n | span | clause | policy | sentence | span-clause |
|---|---:|---:|---:|---:|---:|---:|
| QASPER dev split, extractive references | 141 | .344 | .289 | .352 | .363 | .352 |
| pagebench rows on non-evaluation papers | 19 | .161 | .101 | .138 | .200 | .146 |

The whole sentence scores a little higher than the navigator's span policy (.343 vs .327 over
all 160), but the product answers with a short span (the issue asks for one; the sentence is the
first citation's quote), so the policy stays.  With the right sentence the span policy reaches .35,
so the evaluation's answer F1 (.15-.17) is lost mostly to reading the wrong sentence.

Usage: ``python benchmarks/dev_answer_form.py [--data ../shared/data] [--limit N]``.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from statistics import mean

from vectree.agent.navigator import OfflineNavigator, echoes, span_clause
from vectree.evaluation.metrics import max_answer_f1
from vectree.retrieval.datasets import matches_reference
from vectree.retrieval.rerank.data import _qasper_split, eval_article_ids, sentences_of
from vectree.retrieval.rerank.model import get_reader


def qasper_items(data: Path, excluded: set[str], split: str = "dev"):
    """(question, gold evidence sentence, references, source) of the QASPER dev-dictionary questions
    of the reader's ``split`` (by article; ``"all"``: every split) that have extractive answers."""
    d = json.loads((data / "qasper/dev-questions/dev_question_dict.json").read_text(encoding="utf-8"))
    for qid in sorted(d):
        q = d[qid]
        art = str(q["article_id"])
        if art in excluded or (split != "all" and _qasper_split(art) != split):
            continue
        hl = [h for h in q.get("highlighted_evidence", []) if h.strip() and not h.startswith("FLOAT")]
        spans = [s for s in q.get("extractive_spans", []) if s.strip()]
        if not hl or not spans:
            continue
        sents = [s for p in q.get("evidence", []) for s in sentences_of(" ".join(str(p).split()))]
        gold = next((s for s in sents if any(matches_reference(s, h) for h in hl)), None)
        if gold:
            yield q["text"], gold, spans + [", ".join(spans)], "qasper-extractive"


def pagebench_items(data: Path, excluded: set[str]):
    rows = csv.DictReader(open(data / "qasper/pagebench/0b_qa_pairs.csv", newline="", encoding="utf-8"))
    for r in rows:
        if r["target_file"].removesuffix(".pdf") in excluded or not r["evidence_text"].strip():
            continue
        ev = r["evidence_text"].strip()
        if ev.startswith("FLOAT") or r["reference_answer"].strip().lower() in ("yes", "no", "unanswerable"):
            continue
        sents = sentences_of(" ".join(ev.split()))
        yield r["question"], sents[0] if sents else ev, [r["reference_answer"]], "pagebench"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    data = Path(args.data)
    excluded = eval_article_ids(data)
    reader = get_reader()
    nav = OfflineNavigator.__new__(OfflineNavigator)
    items = list(qasper_items(data, excluded)) + list(pagebench_items(data, excluded))
    if args.limit:
        items = items[: args.limit]
    rows: dict[str, dict[str, list[float]]] = {}
    for q, sent, refs, src in items:
        r = reader.read(q, [sent])[0]
        span = r.span
        bad = not span or len(span.split()) > 12 or echoes(span, q)
        clause = nav._clause_answer(q, sent)
        policy = clause if bad else span
        forms = {"span": span, "clause": clause, "policy": policy, "sentence": sent,
                 "span-clause": policy if bad else span_clause(sent, span)}
        for name, text in forms.items():
            rows.setdefault(src, {}).setdefault(name, []).append(max_answer_f1(text, refs))
            rows.setdefault("all", {}).setdefault(name, []).append(max_answer_f1(text, refs))
    print("| source | n | " + " | ".join(forms) + " |")
    print("|---|---:|" + "---:|" * len(forms))
    for src, by in rows.items():
        print(f"| {src} | {len(by['span'])} | " + " | ".join(f"{mean(v):.3f}" for v in by.values()) + " |")


if __name__ == "__main__":
    main()
