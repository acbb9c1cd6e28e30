"""The off-corpus floor (vectree.retrieval.rerank.coverage): the IDF-weighted share of a question's words
that the corpus's best papers hold, its calibration on training-side episodes, and the navigator's
abstention when a question names what no candidate paper holds."""

import json
import math
import os
from pathlib import Path

import pytest

from vectree.retrieval.rerank.coverage import (KEEP, best_coverage, calibrate_coverage, coverage, passage_coverage,
                                               passage_windows, question_terms, term_weights, text_terms)
from vectree.retrieval.words import analyze
from vectree.retrieval.rerank.model import SHIPPED_DIR

SHARED = Path(os.environ.get("VECTREE_TRAINING_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data")


def test_question_terms_are_the_analysed_content_words():
    assert question_terms("What is the size of the Penn Treebank dataset?") == ["size", "penn", "treebank", "dataset"]
    assert question_terms("what is the?") == []


def test_a_word_every_candidate_holds_weighs_little_and_a_missing_one_most():
    a = text_terms(["The dataset has 40k sentences.", "A model of parsing."])
    b = text_terms(["Our dataset covers chemistry."])
    w = term_weights(["dataset", "chemistri", "treebank"], [a, b])
    assert w[0] < w[1] < w[2]  # df 2, 1, 0 of 2 candidates
    assert w[2] == pytest.approx(math.log(1 + 2.5 / 0.5))
    # the paper with the rare word covers more of the question than the one with the common word
    terms = question_terms("Which treebank sentences and dataset?")
    assert coverage(terms, a, [a, b]) > coverage(terms, b, [a, b])
    assert coverage([], a, [a]) == 1.0 and best_coverage(terms, []) == 0.0
    assert best_coverage(terms, [a, b]) == coverage(terms, a, [a, b])


def test_two_papers_together_cover_a_question_that_names_both():
    glacier = text_terms(["Glacier Corp acquired a mine in 2019."])
    bakery = text_terms(["Bakery Ltd acquired a rival chain in 2019."])
    other = text_terms(["A tide table for 2019."])
    terms = question_terms("What did Glacier Corp and Bakery Ltd acquire in 2019?")
    alone = best_coverage(terms, [glacier, bakery, other])
    assert alone < 0.6
    assert best_coverage(terms, [glacier, bakery, other], together=2) == 1.0  # every word, held by the two
    assert best_coverage(terms, [glacier], together=2) == best_coverage(terms, [glacier])


def test_passages_of_several_papers_cover_together_one_paper_alone_as_before():
    from vectree.retrieval.rerank.coverage import papers_passage_coverage

    glacier = [frozenset(analyze(t)) for t in ("Glacier Corp acquired a mine in 2019.", "Glacier Corp hired staff.")]
    bakery = [frozenset(analyze(t)) for t in ("Bakery Ltd acquired a rival chain in 2019.", "Bakery Ltd sells bread.")]
    terms = question_terms("What did Glacier Corp and Bakery Ltd acquire in 2019?")
    assert max(passage_coverage(terms, glacier), passage_coverage(terms, bakery)) < 0.6
    assert papers_passage_coverage(terms, [glacier, bakery]) == 1.0  # the two acquisition passages together
    assert papers_passage_coverage(terms, [glacier]) == passage_coverage(terms, glacier)
    assert papers_passage_coverage([], [glacier, bakery]) == 1.0


def test_passage_coverage_finds_the_passage_that_holds_the_rare_words():
    report = ["Energex Corporation reported revenue of 12 million in 2021.",
              "In 2021 Energex Corporation acquired SolarCo.",
              "Energex Corporation appointed a new board in 2021."]
    words = [frozenset(analyze(t)) for t in report]
    asked = question_terms("Which company did Energex Corporation acquire in 2021?")
    missing = question_terms("What was the cash flow of Energex Corporation in 2021?")
    # the company and the year are in every passage and weigh little; "acquire" is in one, "company"
    # in none: the acquisition passage holds (3 x .134 + .981) / (2.079 + 3 x .134 + .981) of the question
    assert passage_coverage(asked, words) == pytest.approx(1.382 / 3.461, abs=1e-3)
    assert passage_coverage(missing, words) < 0.1 < 0.3 < passage_coverage(asked, words)
    # "cash flow" is in no passage: what is held is only the words every passage has
    assert passage_coverage(missing, words) == pytest.approx(
        coverage(missing, words[0], words))
    assert passage_coverage([], words) == 1.0 and passage_coverage(asked, []) == 0.0
    # windows join neighbours: with radius 1 the middle window holds all three passages' words
    assert passage_windows(words, 1)[1] == words[0] | words[1] | words[2]
    assert passage_windows(words, 0) == words


def test_the_floor_is_the_highest_that_keeps_enough_of_every_source():
    inside = {"x": [0.9] * 19 + [0.1], "y": [0.8] * 20}
    outside = {"x": [0.2] * 20, "y": [0.5] * 20}
    block, curve = calibrate_coverage({s: (inside[s], outside[s]) for s in inside}, keep=0.95)
    # x keeps 95 % up to 0.9; y keeps everything up to 0.8: the highest floor both allow
    assert block["min_coverage"] == 0.8 and block["x_answered_in"] == 0.95 and block["y_answered_in"] == 1.0
    assert block["x_abstained_off"] == 1.0 and block["y_abstained_off"] == 1.0
    assert [r["threshold"] for r in curve] == sorted(r["threshold"] for r in curve)


needs_shipped = pytest.mark.skipif(not (SHIPPED_DIR / "config.json").exists(), reason="no shipped reader model")


@needs_shipped
def test_the_navigator_abstains_below_the_floor_and_names_the_candidates(demo_store, monkeypatch):
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox

    tb = Toolbox(demo_store)
    question = "Which solvent gave the highest yield in the Suzuki coupling?"
    floor = tb.reranker().config.calibration["coverage"]
    top = [r["doc_id"] for r in tb.search_papers(question, 5).data["results"]][:floor["candidates"]]
    covered = best_coverage(question_terms(question), [tb.paper_terms(d) for d in top], floor["together"])
    assert 0.0 < covered < 1.0  # "solvent" and "yield" are in battery papers, "Suzuki coupling" is not
    nav = OfflineNavigator(tb)
    monkeypatch.setitem(floor, "min_coverage", covered + 0.01)
    above = nav.answer(question)
    assert above.abstained and above.citations == [] and "of what it names" in above.answer
    assert above.possibly_relevant and {p["doc_id"] for p in above.possibly_relevant} <= set(top)
    assert all(p["text"] and p["relevance"] >= 0 for p in above.possibly_relevant)  # what `vectree ask` prints
    monkeypatch.setitem(floor, "min_coverage", covered - 0.01)
    assert "of what it names" not in nav.answer(question).answer  # the floor no longer decides
    # a question of one paper is never judged by the corpus's words: the user chose the paper
    monkeypatch.setitem(floor, "min_coverage", 1.0)
    assert "of what it names" not in nav.answer(question, paper=top[0]).answer


@needs_shipped
def test_the_navigator_abstains_when_no_passage_of_the_paper_holds_the_question(demo_store, monkeypatch):
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox

    tb = Toolbox(demo_store)
    floor = tb.reranker().config.calibration["passage_coverage"]
    nav = OfflineNavigator(tb)
    question = "Which electrolyte additive gave the longest cycle life?"
    paper = tb.search_papers(question, 1).data["results"][0]["doc_id"]
    held = passage_coverage(question_terms(question), tb.passage_terms(paper), floor["window"])
    assert 0.0 < held < 1.0
    monkeypatch.setitem(floor, "min_coverage", held + 0.01)
    above = nav.answer(question, paper=paper)
    assert above.abstained and above.citations == [] and "of the question's words" in above.answer
    assert above.possibly_relevant and all(p["doc_id"] == paper and p["page"] for p in above.possibly_relevant)
    monkeypatch.setitem(floor, "min_coverage", held - 0.01)
    below = nav.answer(question, paper=paper)
    assert not below.abstained and below.citations
    # the corpus-wide question is judged by the same floor over the papers it reads
    monkeypatch.setitem(floor, "min_coverage", 1.01)
    assert nav.answer(question).abstained


needs_shared = pytest.mark.skipif(not (SHARED / "pubmedqa").exists() and os.environ.get("CI") != "true",
                                  reason=f"workplace training data not at {SHARED}")


@needs_shipped
@needs_shared
def test_the_shipped_floor_is_reproduced_from_the_training_data():
    from vectree.retrieval.rerank.coverage import training_episodes

    episodes = training_episodes(SHARED)
    block, _ = calibrate_coverage(episodes)
    shipped = json.loads((SHIPPED_DIR / "config.json").read_text())["calibration"]["coverage"]
    assert block == shipped
    assert all(block[f"{s}_answered_in"] >= KEEP for s in episodes)
    # two-document questions (HotpotQA) are among those the floor must answer, so two papers count together
    assert "hotpotqa" in episodes and block["together"] == 2
    # what it still catches off-corpus is measured, and it is little: words are shared across papers
    assert all(0 < block[f"{s}_abstained_off"] < 0.5 for s in episodes)


@needs_shipped
@needs_shared
def test_the_shipped_in_paper_floor_is_reproduced_from_the_training_data():
    from vectree.retrieval.rerank.coverage import calibrate_passage_coverage

    block, _ = calibrate_passage_coverage(SHARED)
    shipped = json.loads((SHIPPED_DIR / "config.json").read_text())["calibration"]["passage_coverage"]
    assert block == shipped
    sources = list(block["questions"])
    assert sources == ["qasper", "hotpotqa", "pubmedqa"]
    assert all(block[f"{s}_answered_in"] >= KEEP for s in sources)
    # what it buys is measured, not assumed: each source loses some answers without their evidence
    assert all(block[f"{s}_abstained_off"] > 0 for s in sources)
