"""``pubmedqa``: corpus-level routing over the 1,000 PQA-L abstracts.

Reuses :func:`vectree.evaluation.pubmedqa.load_pubmedqa` (the search engineer's loader) after the
layout check; a document's sections are its labelled parts (the conclusion is never in the
corpus), it has no title, and each question's gold document is the abstract it was written from.
"""

from __future__ import annotations

from pathlib import Path

from ..layouts import LayoutError, validate_layout
from ..pubmedqa import load_pubmedqa
from .base import RoutingBenchmark, RoutingDoc, RoutingQuestion


def load_pubmedqa_routing(folder: str | Path) -> RoutingBenchmark:
    folder = Path(folder)
    files = validate_layout("pubmedqa", folder)
    try:
        docs, questions = load_pubmedqa(folder)
    except (ValueError, KeyError) as exc:
        raise LayoutError(f"{folder}/corpus.jsonl or questions.jsonl: {exc}") from None
    documents = {d.pmid: RoutingDoc(d.pmid, "", tuple(d.sections)) for d in docs}
    if len(documents) != len(docs):
        raise LayoutError(f"{files['corpus.jsonl']}: duplicate pmids")
    qs = [RoutingQuestion(q.pmid, q.question, q.pmid, q.final_decision, q.long_answer) for q in questions]
    return RoutingBenchmark("pubmedqa", documents, qs, files)
