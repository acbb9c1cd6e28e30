"""``pubmedqa``: corpus-level routing over the 1,000 PQA-L abstracts.

Reuses :func:`vectree.evaluation.pubmedqa.load_pubmedqa` (the search engineer's loader) after the
layout check; a document's sections are its labelled parts (the conclusion is never in the
corpus), it has no title, and each question's gold document is the abstract it was written from.

Only the questions of the reader's held-back ``test`` split are asked by default
(:func:`vectree.retrieval.rerank.data.pubmedqa_split`, by pmid): the trained reranker saw the
``train`` part and was calibrated on ``dev``.  ``VECTREE_EVAL_PUBMEDQA_SPLIT`` = ``all``, ``train``
or ``dev`` asks others (all 1,000 documents stay in the corpus either way).
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
    import os

    from vectree.retrieval.rerank.data import pubmedqa_split

    from vectree.retrieval.config import load_settings

    split = load_settings().eval_pubmedqa_split  # validated there
    qs = [RoutingQuestion(q.pmid, q.question, q.pmid, q.final_decision, q.long_answer) for q in questions
          if split == "all" or pubmedqa_split(q.pmid) == split]
    return RoutingBenchmark("pubmedqa", documents, qs, files)
