"""What the navigator answers from: names for "What/Which <kind>" questions, never a heading, a
line of code or a citation line, and never a DOI's digits as a quantity
(agent.navigator.named_answer / asks_for_name / NOT_PROSE / numeric_answer, passages.is_heading)."""

from __future__ import annotations

import pytest

from vectree.agent.navigator import NOT_PROSE, asks_for_name, named_answer, numeric_answer
from vectree.retrieval.passages import is_heading, passage_rows
from vectree.retrieval.pdf import parse_pdf


@pytest.mark.parametrize("question, asks", [
    ("What datasets do they use?", True),
    ("Which baselines are compared?", True),
    ("what evaluation metric do they use?", True),
    ("What dataset does PaSa use for evaluation?", True),
    ("What are the baselines?", True),
    ("What is the size of the dataset?", False),   # a quantity
    ("How many datasets are used?", False),
    ("What do they conclude?", False),
    ("Why does the model fail?", False),
])
def test_asks_for_name(question, asks):
    assert asks_for_name(question) is asks


def test_names_the_question_does_not_hold():
    q = "What datasets do they use?"
    assert named_answer(q, "We use the Europarl German-English parallel corpus BIBREF22 and the OPUS corpus.") \
        == "Europarl German-English, OPUS"  # placeholders of the extraction (BIBREF22) are no names
    # a name that opens the sentence, with a number inside it
    assert named_answer(q, "Ontonotes Release 5 English corpus is used for the experiments.") == "Ontonotes Release 5 English"
    # what the question already names is not an answer; sentence openers are not names
    assert named_answer("Which model does BERT outperform?", "We find that BERT outperforms ELMo.") == "ELMo"
    assert named_answer(q, "We use the data described above.") is None
    # an author citation is not the name of a thing
    assert named_answer("Which baselines do they compare to?", "We compare to See et al. (2017) and PGNet.") == "PGNet"
    assert named_answer(q, "Table 2 shows the results in Section 4.") is None


def test_a_real_paper_names_its_evaluation_dataset(shared_data):
    parsed = parse_pdf(shared_data / "pdfs" / "paper-qa" / "pasa.pdf")
    texts = [r["text"] for r in passage_rows(parsed.pages, [])]
    sentence = next(t for t in texts if "To evaluate PaSa in more realistic scenarios" in t)
    assert named_answer("What dataset does PaSa use for evaluation?", sentence).startswith("RealScholarQuery")


def test_headings_code_and_citation_lines_answer_nothing(shared_data):
    # a section's heading, however long, as PyMuPDF extracts it from the real paper; the verified
    # tree cuts the title short ("3 The LONGEVAL guidelines for")
    parsed = parse_pdf(shared_data / "pdfs" / "papermage" / "2023.eacl-main.121.pdf")
    texts = [r["text"] for r in passage_rows(parsed.pages, [])]
    heading = next(t for t in texts if t.startswith("3 The LONGEVAL guidelines for"))
    assert is_heading(heading, "3 The LONGEVAL guidelines for")
    assert not is_heading("The LONGEVAL guidelines for faithfulness human evaluation recommend that annotators "
                          "rate each summary unit separately.", "3 The LONGEVAL guidelines for")
    assert NOT_PROSE.search("1 >>> from papermage import Document")
    assert NOT_PROSE.search("doi:10.1186/1752-2897-4-1 Cite this article as: Datta et al.: Complications ...")
    assert not NOT_PROSE.search("We import the documents from arXiv and define a schema.")


def test_a_doi_is_not_a_quantity():
    evidence = ["doi:10.1186/1752-2897-4-1 Cite this article as: Datta et al.",
                "Sixteen studies were included, with 1,542 patients in all."]
    assert numeric_answer("How many patients were included in the studies?", evidence) == "1,542"
    assert numeric_answer("How many patients were included?", ["See https://example.org/12345 for 300 patients."]) \
        == "300"


def test_counts_written_in_words():
    # QASPER's papers write small counts in words
    assert numeric_answer("How many annotators tagged each text?",
                          ["Each text was tagged by three annotators, with an agreement of 0.821."]) == "three"
    assert numeric_answer("How many annotators participated?", ["In all, 21 annotators took part."]) == "21"
    # a count the question already states is not the answer, nor "one" as a pronoun
    assert numeric_answer("How many of the two models converge?", ["Only one of the two models converges."]) is None
    assert numeric_answer("How many papers does the corpus hold?", ["It holds 81.1M papers."]) == "81.1M papers"


def test_the_span_grows_to_its_clause():
    from vectree.agent.navigator import span_clause

    sentence = ("Novelty is scored as the mean distance between each generated caption and its nearest "
                "training caption, which we compute with cosine distance.")
    assert span_clause(sentence, "mean distance between each generated caption") == \
        "Novelty is scored as the mean distance between each generated caption and its nearest training caption"
    assert span_clause("We train with Adam; the rate is 0.001.", "Adam") == "We train with Adam"
    assert span_clause("We train with Adam.", "SGD") == "SGD"  # not in the sentence: the span itself


def test_an_abbreviation_of_the_questions_own_words_is_no_answer():
    """A user asked which datasets evaluate a model the question names in full; the evidence
    sentence also gives the model's abbreviation, which is the question's own thing, not an answer."""
    from vectree.agent.navigator import abbreviates

    question = "Which corpora are used to evaluate Gated-Graph Networks?"
    sentence = "We evaluate gated-graph networks (G-GN) on the Velmor-Tides and Ostrav Speech corpora."
    assert named_answer(question, sentence) == "Velmor-Tides, Ostrav Speech"
    assert abbreviates("G-GN", question) and abbreviates("LDA", "How is latent Dirichlet allocation trained?")
    # function words spell nothing, and a name the question does not spell stays an answer
    assert not abbreviates("DT", "Which tagger do they use?")
    assert not abbreviates("CRF", "Which tagger do they use?")
    assert named_answer("Which tagger do they use?", "Tags come from a CRF trained on the news section.") == "CRF"
