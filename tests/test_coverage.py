"""The off-corpus floor (vectree.retrieval.rerank.coverage): the IDF-weighted share of a question's words
that the corpus's best papers hold, its calibration on training-side episodes, and the navigator's
abstention when a question names what no candidate paper holds."""

import json
import math
import os
from pathlib import Path

import pytest

from vectree.retrieval.rerank.coverage import (KEEP, best_coverage, calibrate_coverage, coverage, question_terms,
                                        term_weights, text_terms)
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
    covered = best_coverage(question_terms(question), [tb.paper_terms(d) for d in top])
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
    # off-corpus questions of another field are mostly caught; near-topic ones far less
    assert block["pubmedqa_abstained_off"] > 0.5 > block["qasper_abstained_off"]
