"""A paper's own abbreviations widen within-paper search (retrieval.acronyms): the question's long
form finds the sentences that use the short form, and the other way round (real Schwartz-Hearst,
real Tantivy, real MiniLM, a real arXiv PDF)."""

from __future__ import annotations

import pyarrow as pa
import pymupdf

from vectree.retrieval.acronyms import definitions, expand
from vectree.retrieval.embed import get_embedder
from vectree.retrieval.sentences import split_sentences
from vectree.retrieval.passages import PASSAGES_SCHEMA, PaperPassages

SENTENCES = [
    (1, "We propose a Random kitchen sink (RKS) based approach for offensive language detection."),
    (1, "Tweets were collected from the shared task and labelled by three annotators."),
    (2, "Support vector machines with linear kernels serve as the baseline classifier."),
    (3, "RKS explicitly maps data vectors to a space where linear separation is possible."),
    (3, "The results improve as the mapping dimension grows."),
    (4, "The authors thank the organisers of the shared task."),
]


def _passages() -> PaperPassages:
    texts = [t for _, t in SENTENCES]
    vecs = get_embedder().encode_documents(texts)
    rows = [{"passage_id": i, "page_no": p, "block": 0, "node_id": f"s{p}", "text": t, "vector": v.tolist()}
            for i, ((p, t), v) in enumerate(zip(SENTENCES, vecs))]
    return PaperPassages(pa.Table.from_pylist(rows, schema=PASSAGES_SCHEMA))


def test_definitions_are_read_from_the_text_and_filtered():
    found = definitions([
        "We use a Random kitchen sink (RKS) mapping and a support vector machine (SVM).",
        "Each tweet is labelled offensive (OFF) or not offensive (NOT).",
        "The model (see above) is trained for ten epochs (x) on two cores.",
    ])
    assert found["RKS"] == "Random kitchen sink"
    assert found["SVM"] == "support vector machine"
    assert "x" not in found  # a parenthesised letter is no acronym
    assert "see above" not in found.values()
    assert "OFF" not in found  # a one-word long form: the label, not a term to expand


def test_expand_adds_the_missing_form_once_and_is_idempotent():
    defined = {"RKS": "Random kitchen sink", "NOT": "not offensive", "SVM": "support vector machine"}
    long_q = "What is the Random Kitchen Sink approach?"
    assert expand(long_q, defined) == "What is the Random Kitchen Sink approach? (RKS)"
    assert expand("How does RKS compare with an SVM?", defined) == \
        "How does RKS compare with an SVM? (Random kitchen sink; support vector machine)"
    # a short form matches case-sensitively and as a whole word: "not" and "SVMs" are not terms here
    assert expand("Why is it not faster?", defined) == "Why is it not faster?"
    assert expand("Which SVMs are used?", defined) == "Which SVMs are used?"
    # both forms present, or nothing defined: unchanged
    assert expand("Is RKS (Random kitchen sink) fast?", defined) == "Is RKS (Random kitchen sink) fast?"
    assert expand(long_q, {}) == long_q
    once = expand(long_q, defined)
    assert expand(once, defined) == once


def test_the_long_form_question_finds_the_abbreviated_sentence():
    pp = _passages()
    assert pp.acronyms == {"RKS": "Random kitchen sink"}
    q = "How does the random kitchen sink method separate the data?"
    hits = pp.bm25(q, 10)
    assert 3 in hits[:2], [SENTENCES[i][1] for i in hits]
    # without the paper's definition the abbreviated sentence shares no term with the question
    pp._acronyms = {}
    assert 3 not in pp.bm25("random kitchen sink", 10)


def test_definitions_of_a_real_paper(shared_data):
    path = shared_data / "qasper_pdf" / "pdfs" / "2001.03131.pdf"
    with pymupdf.open(path) as pdf:
        pages = [page.get_text() for page in pdf]
    # sentences, as the paper's passages are (the algorithm reads a sentence at a time)
    texts = [t[a:b] for t in pages for a, b in split_sentences(t)]
    found = definitions(texts)
    assert found.get("RKS", "").lower() == "random kitchen sink"
    assert found.get("DMD", "").lower() == "dynamic mode decomposition"
    assert "(RKS)" in expand("What is the Random Kitchen Sink approach?", found)
