"""Which candidate should the navigator read the answer from?  Training-side dev papers only.

The navigator reads the answer from the first readable candidate in the tools' order (the hybrid
order and the reader's calibrated relevance, fused by reciprocal rank).  On the dev papers of
:mod:`vectree.retrieval.rerank.pages` (QASPER dev-split articles, evidence spread among other
articles' paragraphs), every question's 8 candidates are read and the answer is taken, with the
navigator's span policy, from the candidate chosen by each rule; QASPER token F1 against the
question's extractive spans, and how often the chosen candidate is an evidence chunk.

Result (6 December, shipped reader, 141 dev questions; candidates under five words skipped, as the
navigator does), no change made:

| read the answer from | answer F1 | candidate is evidence |
|---|---:|---:|
| first (the navigator's rule) | .120 | .298 |
| highest calibrated relevance of the first 3 | .124 | .298 |
| highest span score of the first 3 | .128 | .227 |
| highest extractive-type probability of the first 3 | .096 | .213 |

The candidate read is evidence for 30 % of the questions whatever the rule; with the gold sentence
the same span policy reaches .35 (``dev_answer_form.py``): ranking, not reading, loses the F1.

Added 7 December (session 13): ``first of the first stage`` (the candidate the hybrid BM25 + cosine
order ranks best, before the reranker): dev .141 / .312 against .120 / .298; the reader's own
``--split train`` questions level (.137 / .340 against .139 / .337).  Built into the navigator (the
answer read from each paper's candidates in first-stage order) and measured once on the evaluation,
it lost: qasper answer F1 .193 -> .164 and page precision .330 -> .319 (``vectree-sprout`` .194 ->
.149, .323 -> .281; 15 and 18 of 55 answers changed), because the navigator also quotes and cites
the sentence it reads from, which this rule does not model.  Reverted; nothing is claimed from it.

Usage: ``python benchmarks/dev_answer_holder.py [--data ../shared/data]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import mean

from vectree.agent.navigator import NUMERIC_QUESTION, OfflineNavigator, echoes, numeric_answer
from vectree.evaluation.embedcache import cached_embedder
from vectree.evaluation.metrics import max_answer_f1
from vectree.retrieval.passages import PaperPassages, passages_table
from vectree.retrieval.rerank.apply import rerank_passages
from vectree.retrieval.rerank.model import get_reader
from vectree.retrieval.rerank.pages import dev_papers

READ_TOP = 3


def answer_from(nav, question: str, hit) -> str:
    r = hit["reading"]
    if NUMERIC_QUESTION.search(question):
        number = numeric_answer(question, [hit["text"]])
        if number:
            return number
    span = r.span
    bad = not span or len(span.split()) > 12 or echoes(span, question)
    return nav._clause_answer(question, hit["text"]) if bad else span


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--split", default="dev")
    args = ap.parse_args()
    data = Path(args.data)
    refs = json.loads((data / "qasper/dev-questions/dev_question_dict.json").read_text(encoding="utf-8"))
    spans_of = {q["text"]: [s for s in q.get("extractive_spans", []) if s.strip()] for q in refs.values()}
    emb, reader = cached_embedder(), get_reader()
    nav = OfflineNavigator.__new__(OfflineNavigator)
    rules = {
        "first (navigator)": lambda hits: hits[0],
        "highest relevance": lambda hits: max(hits[:READ_TOP], key=lambda h: h["relevance"]),
        "highest span score": lambda hits: max(hits[:READ_TOP], key=lambda h: h["reading"].span_score),
        "highest extractive prob": lambda hits: max(hits[:READ_TOP], key=lambda h: h["reading"].type_probs["extractive"]),
        "first of the first stage": lambda hits: min(hits, key=lambda h: h["first_stage"]),
    }
    f1 = {k: [] for k in rules}
    on_evidence = {k: [] for k in rules}
    for paper in dev_papers(data, split=args.split):
        rows = [{"passage_id": i, "page_no": p, "block": 0, "node_id": None, "text": t}
                for i, (t, p) in enumerate(zip(paper.chunks, paper.pages))]
        passages = PaperPassages(passages_table(rows, emb.encode_documents(paper.chunks)))
        texts = {t: i for i, t in enumerate(paper.chunks)}
        for (question, _), qv, gold in zip(paper.questions, emb.encode_queries([q for q, _ in paper.questions]),
                                           paper.evidence):
            refs_q = spans_of.get(question) or []
            if not refs_q:
                continue
            refs_q = refs_q + [", ".join(refs_q)]
            aq = reader.adapt_query(qv)
            first = {h.passage_id: n for n, h in enumerate(passages.rank(question, aq, 12))}
            hits = [{**h, "first_stage": first.get(passages.ids[h["i"]], 99)}
                    for h in rerank_passages(reader, passages, question, aq, 8) if len(h["text"].split()) >= 5]
            if not hits:
                continue
            for name, rule in rules.items():
                h = rule(hits)
                f1[name].append(max_answer_f1(answer_from(nav, question, h), refs_q))
                on_evidence[name].append(float(texts.get(h["text"], -1) in gold))
    print(f"{len(f1['first (navigator)'])} dev questions")
    print("| read the answer from | answer F1 | candidate is evidence |")
    print("|---|---:|---:|")
    for name in rules:
        print(f"| {name} | {mean(f1[name]):.3f} | {mean(on_evidence[name]):.3f} |")


if __name__ == "__main__":
    main()
