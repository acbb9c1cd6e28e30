"""Definitional questions ("What is CiteSee?") are answered from the sentence where the paper
defines the term (agent.navigator.definition_term / definition_sentence): an abstract's "This
paper introduces CiteSee, a paper reading tool that ...", not a sentence that only uses the name."""

from __future__ import annotations

from pathlib import Path

import pytest

from vectree.agent.navigator import definition_sentence, definition_term
from vectree.retrieval.passages import passage_rows
from vectree.retrieval.pdf import parse_pdf

SHIPPED = Path(__file__).resolve().parents[1] / "vectree" / "models" / "reader" / "config.json"


@pytest.mark.parametrize("question, term", [
    ("What is CiteSee?", "CiteSee"),
    ("what are the baselines?", "baselines"),
    ("What is the GhostVLAD approach?", "GhostVLAD approach"),
    ("What is Multi-LexSum", "Multi-LexSum"),
    ("What is the size of the dataset?", None),   # a property of something, not a term
    ("What is the accuracy?", None),              # a quantity
    ("What is used to train the model?", None),
    ("How does CiteSee rank citations?", None),
    ("Is CiteSee a browser extension?", None),
    ("What is it?", None),                        # a pronoun names nothing to look up
    ("What are these?", None),
])
def test_definition_term(question, term):
    assert definition_term(question) == term


def test_the_first_defining_sentence_wins_and_mentions_do_not_define():
    texts = ["To support this, CiteSee allows",                      # uses the name, defines nothing
             "CiteSee is significantly more effective than three baselines.",  # "is" without a/an
             "We introduce S2ORC,1 a large corpus of 81.1M English-language academic papers.",
             "This paper introduces CiteSee, a paper reading tool that leverages a user's reading history.",
             "CiteSee is a Chrome extension."]
    assert definition_sentence("CiteSee", texts) == (3, "a paper reading tool that leverages a user's reading history")
    assert definition_sentence("S2ORC", texts) == (2, "a large corpus of 81.1M English-language academic papers")
    assert definition_sentence("GhostVLAD", ["GhostVLAD is an extension of the NetVLAD approach."]) == \
        (0, "an extension of the NetVLAD approach")
    assert definition_sentence("Paper Plain", ["We evaluate Paper Plain, finding that readers use it."]) is None
    long = "We present X-Tool, a toolkit " + "that does things " * 20 + "."
    assert definition_sentence("X-Tool", [long])[1].endswith("…")


@pytest.mark.parametrize("pdf, term, words", [
    ("papermage/2302.07302v1.pdf", "CiteSee", "paper reading tool"),
    ("papermage/papermage.pdf", "PaperMage", "toolkit"),
    ("papermage/2020.acl-main.447.pdf", "S2ORC", "large corpus"),
    ("papermage/2206.10883v3.pdf", "Multi-LexSum", "expert-authored summaries"),
])
def test_real_papers_define_their_own_contribution_on_page_one(shared_data, pdf, term, words):
    # the paper's passages as ingestion makes them (PyMuPDF pages, hyphenation joined, sentences)
    parsed = parse_pdf(shared_data / "pdfs" / pdf)
    rows = passage_rows(parsed.pages, [])
    texts, page_of = [r["text"] for r in rows], [r["page_no"] for r in rows]
    found = definition_sentence(term, texts)
    assert found is not None, term
    i, definition = found
    assert page_of[i] == 1 and words in definition, (page_of[i], texts[i])


@pytest.mark.skipif(not SHIPPED.exists(), reason="no shipped reader model")
def test_the_navigator_answers_what_a_demo_paper_defines(demo_store):
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox

    answer = OfflineNavigator(Toolbox(demo_store)).answer("What is HELIX-212?")
    assert answer.answer.startswith("an open dataset of 212 cylindrical"), answer.answer
    first = answer.citations[0]
    assert first["valid"] and "We present HELIX-212, an open dataset" in first["quote"], answer.citations
    # a question that is not definitional keeps the reader's span
    other = OfflineNavigator(Toolbox(demo_store)).answer("How many cells are in HELIX-212?")
    assert "212" in other.answer and "open dataset" not in other.answer, other.answer
