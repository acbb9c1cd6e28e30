"""The harness's metrics against values computed by hand (no models, no data)."""

from __future__ import annotations

import math

import pytest

from vectree.evaluation import metrics as M
from vectree.evaluation.runner import aggregate


# ---- QASPER answers ---------------------------------------------------------------------------
def test_normaliser_is_qaspers_lower_punct_articles_whitespace():
    assert M.normalize_answer("The Cat,  sat!") == "cat sat"
    # punctuation goes before articles are matched: "a-b" -> "ab" is no article; "(the)" -> "the" -> removed
    assert M.normalize_answer("(The) a-b AN apple") == "ab apple"
    assert M.normalize_answer("  ") == ""
    # articles only as whole words
    assert M.normalize_answer("theory and anthem") == "theory and anthem"


def test_answer_f1_by_hand():
    # pred -> [cat, sat, on, mat] (4), gold -> [cat, on, mat] (3); common 3: P = 3/4, R = 1
    assert M.answer_f1("the cat sat on a mat", "Cat on the mat.") == pytest.approx(2 * 0.75 / 1.75)
    assert M.answer_f1("Yes", "yes") == 1.0
    assert M.answer_f1("No", "Yes") == 0.0
    assert M.answer_f1("", "Yes") == 0.0
    # repeated tokens count as a bag: pred [a1, a1] vs gold [a1]: common 1, P = 1/2, R = 1
    assert M.answer_f1("x x", "x") == pytest.approx(2 / 3)


def test_max_answer_f1_takes_the_best_reference():
    assert M.max_answer_f1("waggle dance", ["a dance", "the waggle dance", "Unanswerable"]) == 1.0
    assert M.max_answer_f1("anything", []) == 0.0


def test_qasper_reference_forms_follow_the_official_evaluator():
    assert M.qasper_reference_answer({"unanswerable": True}) == ("Unanswerable", "none")
    assert M.qasper_reference_answer({"unanswerable": False, "extractive_spans": ["a", "b"], "free_form_answer": "x",
                                      "yes_no": None}) == ("a, b", "extractive")
    assert M.qasper_reference_answer({"unanswerable": False, "extractive_spans": [], "free_form_answer": "free",
                                      "yes_no": None}) == ("free", "abstractive")
    assert M.qasper_reference_answer({"unanswerable": False, "extractive_spans": [], "free_form_answer": "",
                                      "yes_no": True}) == ("Yes", "boolean")
    assert M.qasper_reference_answer({"unanswerable": False, "extractive_spans": [], "free_form_answer": "",
                                      "yes_no": False}) == ("No", "boolean")
    with pytest.raises(ValueError):
        M.qasper_reference_answer({"unanswerable": False, "extractive_spans": [], "free_form_answer": "",
                                   "yes_no": None})


# ---- evidence pages -------------------------------------------------------------------------
def test_evidence_pages_both_empty_is_perfect():
    assert M.evidence_page_scores([], []) == (1.0, 1.0)


@pytest.mark.parametrize("cited,gold,expected", [
    ([1, 2], [2, 3], (0.5, 0.5)),
    ([3], [3], (1.0, 1.0)),
    ([1, 2, 3, 4], [2], (0.25, 1.0)),
    ([2, 2, 5], [2], (0.5, 1.0)),  # sets: a page cited twice counts once
    ([1], [], (0.0, 0.0)),  # citing pages for a question without evidence
    ([], [4], (0.0, 0.0)),  # citing nothing for a question with evidence
    ([1], [2], (0.0, 0.0)),
])
def test_evidence_page_scores(cited, gold, expected):
    assert M.evidence_page_scores(cited, gold) == pytest.approx(expected)


# ---- ranking ----------------------------------------------------------------------------------
def test_rank_recall_mrr():
    ranking = ["a", "b", "c", "d", "e", "f"]
    assert M.rank_of(ranking, "c") == 3
    assert M.rank_of(ranking, "z") is None
    assert [M.recall_at_k(3, k) for k in (1, 3, 5)] == [0.0, 1.0, 1.0]
    assert M.recall_at_k(None, 10) == 0.0
    assert M.reciprocal_rank(3) == pytest.approx(1 / 3)
    assert M.reciprocal_rank(None) == 0.0
    with pytest.raises(ValueError):
        M.recall_at_k(1, 0)


# ---- text similarity, latency ---------------------------------------------------------------
def test_rouge_l_by_hand():
    # pred [the, cat, sat], ref [the, cat, on, the, mat]: LCS 2 -> P 2/3, R 2/5 -> F 0.5
    assert M.rouge_l("The cat sat.", "the cat on the mat") == pytest.approx(0.5)
    assert M.rouge_l("a b c", "a b c") == 1.0
    assert M.rouge_l("", "a") == 0.0


def test_cosine():
    assert M.cosine([1, 0], [0, 1]) == 0.0
    assert M.cosine([1, 1], [2, 2]) == pytest.approx(1.0)
    assert M.cosine([0, 0], [1, 0]) == 0.0


def test_percentiles_interpolate_linearly():
    assert M.percentile([4, 1, 3, 2], 50) == 2.5
    assert M.percentile([1, 2, 3, 4], 95) == pytest.approx(1 + 0.95 * 3)
    assert M.latency_metrics([0.001, 0.002, 0.003]) == {"latency_p50_ms": pytest.approx(2.0),
                                                         "latency_p95_ms": pytest.approx(2.9)}
    assert M.latency_metrics([]) == {}
    with pytest.raises(ValueError):
        M.percentile([], 50)


def test_mean_skips_missing_values_and_is_none_when_nothing_was_measured():
    assert M.mean([1.0, None, 0.0]) == 0.5
    assert M.mean([None, None]) is None


# ---- aggregation: what averages over what, absent-not-zero --------------------------------------
def _item(p, r, has, f1, tokens=None, ms=10.0):
    out = {"evidence_page_precision": p, "evidence_page_recall": r, "has_evidence": has, "answer_f1": f1,
           "latency_ms": ms}
    if tokens is not None:
        out.update({f"tokens_layer{k}": v for k, v in tokens.items()}, tokens_total=sum(tokens.values()))
    return out


def test_paper_qa_aggregate_averages_evidence_over_questions_with_evidence():
    items = [_item(1.0, 0.5, True, 0.2, {2: 100}), _item(0.0, 0.0, True, 0.4, {2: 300}),
             _item(0.0, 0.0, False, 0.6, {2: 200})]  # no evidence: in answer F1, not in page P/R
    m = aggregate("paper_qa", items)
    assert m["evidence_page_precision"] == pytest.approx(0.5)
    assert m["evidence_page_recall"] == pytest.approx(0.25)
    assert m["answer_f1"] == pytest.approx(0.4)
    assert m["n_with_evidence"] == 2
    assert m["tokens_layer2"] == pytest.approx(200)
    # layers the system never returned are absent, not zero; so are unmeasured LLM metrics
    assert "tokens_layer0" not in m and "tokens_layer1" not in m
    assert "llm_judge_correctness" not in m
    assert m["latency_p50_ms"] == pytest.approx(10.0)


def test_abstention_precision_and_recall_over_unanswerable_questions():
    def item(abstained, unanswerable):
        return {**_item(0.0, 0.0, False, 0.0), "abstained": abstained, "unanswerable": unanswerable}

    m = aggregate("paper_qa", [item(True, True), item(True, False), item(False, True), item(False, True),
                               item(False, False)])
    assert m["abstention_precision"] == pytest.approx(0.5)  # 1 of the 2 abstentions was on an unanswerable
    assert m["abstention_recall"] == pytest.approx(1 / 3)  # 1 of the 3 unanswerable
    assert (m["n_abstained"], m["n_unanswerable"]) == (2, 3)
    # never abstaining: recall 0, precision not measured (absent, not 0)
    m = aggregate("paper_qa", [item(False, True), item(False, False)])
    assert m["abstention_recall"] == 0.0 and "abstention_precision" not in m
    # a benchmark without unanswerable questions and a system that never abstains: nothing to say
    assert "abstention_recall" not in aggregate("paper_qa", [item(False, False)])


def test_an_abstention_is_scored_as_qaspers_unanswerable():
    from vectree.evaluation.loaders import PaperQuestion, Reference
    from vectree.evaluation.runner import _score_paper_qa
    from vectree.evaluation.systems.base import PaperAnswer

    class Abstains:
        def answer_paper(self, q, doc):
            return PaperAnswer("The corpus holds no good evidence for this question.", (), extra={"abstained": True})

    none = PaperQuestion("q1", "p", "Do they use BERT?", (Reference("Unanswerable", "none"),), ())
    answered = PaperQuestion("q2", "p", "Which corpus?", (Reference("Wikipedia", "extractive"),), (3,))
    a, b = (_score_paper_qa(Abstains(), None, {"p": None}, q) for q in (none, answered))
    assert (a["answer_f1"], a["abstained"], a["unanswerable"]) == (1.0, True, True)
    assert (b["answer_f1"], b["abstained"], b["unanswerable"]) == (0.0, True, False)
    assert b["answer"].startswith("The corpus holds")  # the text shown stays the agent's


def test_a_corpus_question_is_scored_on_paper_page_pairs_and_on_papers():
    from vectree.evaluation.loaders import PaperQuestion, Reference
    from vectree.evaluation.runner import _score_paper_qa
    from vectree.evaluation.systems.base import PaperAnswer

    class Cites:
        def answer_corpus(self, q):
            return PaperAnswer("answer", (("a", 1), ("a", 2), ("c", 1)))

    q = PaperQuestion("m1", "", "Compare a and b", (Reference("answer", "abstractive"),), (("a", 1), ("b", 4)),
                      meta={"gold_docs": ["a", "b"]})
    item = _score_paper_qa(Cites(), None, {}, q)
    assert item["evidence_page_precision"] == pytest.approx(1 / 3) and item["evidence_page_recall"] == 0.5
    assert (item["cited_papers"], item["evidence_paper_precision"], item["evidence_paper_recall"]) == (["a", "c"], 0.5, 0.5)
    m = aggregate("paper_qa", [item])
    assert m["evidence_paper_precision"] == 0.5 and m["evidence_page_recall"] == 0.5
    # a single-paper benchmark has no paper columns
    assert "evidence_paper_precision" not in aggregate("paper_qa", [_item(1.0, 1.0, True, 0.5)])


def test_answer_confidence_is_checked_against_the_answers_that_were_right():
    """Answered questions only; right = token F1 >= 0.5 (the rule the confidence was fitted with)."""
    def item(conf, f1, abstained=False):
        return {**_item(0.0, 0.0, False, f1), "confidence": conf, "abstained": abstained}

    m = aggregate("paper_qa", [item(0.9, 1.0), item(0.9, 0.6), item(0.1, 0.0), item(0.1, 0.4),
                               item(0.9, 0.0, abstained=True)])  # the abstention is not judged
    assert m["answer_right_rate"] == 0.5 and m["confidence_mean"] == pytest.approx(0.5)
    # two bins: 0.9 where both were right (gap .1), 0.1 where neither was (gap .1)
    assert m["confidence_ece"] == pytest.approx(0.1)
    overconfident = aggregate("paper_qa", [item(0.9, 0.0), item(0.9, 0.0)])
    assert overconfident["confidence_ece"] == pytest.approx(0.9)
    # a system without a confidence (a baseline) reports none
    assert "confidence_ece" not in aggregate("paper_qa", [_item(1.0, 1.0, True, 0.5)])


def test_paper_qa_aggregate_without_evidence_questions_has_no_page_metrics():
    m = aggregate("paper_qa", [_item(1.0, 1.0, False, 0.0)])
    assert "evidence_page_precision" not in m and "evidence_page_recall" not in m
    assert "tokens_total" not in m


def test_sentence_aggregate_leaves_queries_without_gold_out():
    items = [{"n_gold": 2, "recall@1": 0.5, "precision@1": 1.0, "ie@1": 0.5, "latency_ms": 1.0},
             {"n_gold": 0, "latency_ms": 1.0}]
    m = aggregate("sentences", items)
    assert m["ie@1"] == 0.5 and m["n_without_gold"] == 1
    assert "ie@3" not in m


def test_routing_aggregate():
    items = [{"recall@1": 1.0, "recall@5": 1.0, "recall@10": 1.0, "mrr": 1.0, "latency_ms": 2.0},
             {"recall@1": 0.0, "recall@5": 1.0, "recall@10": 1.0, "mrr": 0.25, "latency_ms": 4.0}]
    m = aggregate("routing", items)
    assert m["recall@1"] == 0.5 and m["mrr"] == pytest.approx(0.625)
    assert m["seconds_per_question"] == pytest.approx(0.003)
    assert not math.isnan(m["latency_p95_ms"])
