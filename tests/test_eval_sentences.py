"""The sentence-level scorer and the HotpotQA / DragonBall loaders, against hand-computed values."""

from __future__ import annotations

import json

import pytest

from vectree.evaluation.datasets import (
    DatasetLayoutError, load_dragonball, load_hotpotqa, matches_reference, normalise, token_f1,
)
from vectree.evaluation.sentences import SentenceScorer, Unit, aggregate, covered_sentences, score_units, split_sentences


def test_split_sentences_offsets_and_paragraphs():
    text = "The cell was cycled at 3.5 mV. Fig. 2 shows e.g. the fade!\nA new paragraph"
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == [
        "The cell was cycled at 3.5 mV.", "Fig. 2 shows e.g. the fade!", "A new paragraph"]
    # spans are trimmed and in order; nothing non-blank is lost
    assert all(text[a].strip() and text[b - 1].strip() for a, b in spans)
    assert split_sentences("") == [] and split_sentences("\n\n  \n") == []
    with pytest.raises(TypeError):
        split_sentences(None)


def test_coverage_is_half_of_the_sentence_characters():
    sentences = [(0, 10), (10, 20)]
    assert covered_sentences(sentences, [(0, 5)]) == [0]  # exactly half
    assert covered_sentences(sentences, [(0, 4)]) == []  # less than half
    assert covered_sentences(sentences, [(0, 3), (7, 9)]) == [0]  # 3 + 2 of 10, split spans
    assert covered_sentences(sentences, [(8, 16)]) == [1]  # 2/10 of the first, 6/10 of the second
    assert covered_sentences(sentences, [(0, 3), (2, 5)]) == [0]  # overlapping spans merge, not double count
    assert covered_sentences(sentences, []) == []


def _doc():
    # four sentences of 10 characters: [0,10) [11,21) [22,32) [33,43)
    text = "Aaaa aaaa. Bbbb bbbb. Cccc cccc. Dddd dddd."
    return {"d": text}


def test_score_units_hand_computed():
    scorer = SentenceScorer(_doc(), ks=(1, 2))
    assert scorer.sentences["d"] == [(0, 10), (11, 21), (22, 32), (33, 43)]
    gold = {("d", 1), ("d", 2)}
    small = Unit.of("d", [(11, 21)])  # sentence 1 only
    whole = Unit.of("d", [(0, 43)])  # all four
    m = scorer.score([small, whole], gold)
    # k=1: 1 of 2 gold, 1 sentence returned
    assert m["recall@1"] == 0.5 and m["precision@1"] == 1.0 and m["ie@1"] == 0.5
    # k=2: both gold found; 1 + 4 sentences returned (sentence 1 counted twice)
    assert m["recall@2"] == 1.0 and m["precision@2"] == pytest.approx(2 / 5) and m["ie@2"] == pytest.approx(0.4)


def test_duplicates_count_twice_and_empty_answers_score_zero():
    scorer = SentenceScorer(_doc(), ks=(1, 2, 3))
    gold = {("d", 1)}
    u = Unit.of("d", [(11, 21)])
    m = scorer.score([u, u], gold)
    assert m["precision@2"] == 0.5 and m["recall@2"] == 1.0
    # fewer units than k: the top-3 are the two returned
    assert m["ie@3"] == m["ie@2"] == 0.5
    none = scorer.score([], gold)
    assert none["recall@1"] == 0 and none["precision@1"] == 0 and none["ie@1"] == 0
    # a non-contiguous unit: sentences 0 and 3
    m = scorer.score([Unit.of("d", [(0, 10), (33, 43)])], {("d", 0), ("d", 1)})
    assert m["recall@1"] == 0.5 and m["precision@1"] == 0.5 and m["ie@1"] == 0.25
    assert scorer.sentence_count(Unit.of("d", [(0, 43)])) == 4


def test_score_rejects_bad_input():
    sentences = {"d": [(0, 10)]}
    with pytest.raises(ValueError, match="gold"):
        score_units([], set(), sentences)
    with pytest.raises(ValueError, match="not a sentence"):
        score_units([], {("d", 3)}, sentences)
    with pytest.raises(ValueError, match="unknown document"):
        score_units([Unit.of("x", [(0, 1)])], {("d", 0)}, sentences)


def test_aggregate_averages_queries_with_gold():
    out = aggregate([{"ie@1": 0.5}, None, {"ie@1": 0.25}])
    assert out == {"n": 2, "n_without_gold": 1, "ie@1": 0.375}


def test_reference_matching_rule():
    assert normalise("Hello,  World! 2021") == "hello world 2021"
    assert token_f1("a b c d", "a b c e") == pytest.approx(0.75)
    ref = "In March 2021, the company acquired Beta Corp for $10 million."
    assert matches_reference("In March 2021, the company acquired Beta Corp for $10 million.", ref)
    # a sentence contained in a longer reference (>= 20 normalised characters)
    assert matches_reference("The company acquired Beta Corp", "Then the company acquired Beta Corp, and grew.")
    # contained but too short to count
    assert not matches_reference("Beta Corp", "Then the company acquired Beta Corp, and grew.")
    # token F1 >= 0.8 without containment
    assert matches_reference("in march 2021 the firm acquired beta corp for 10 million", ref)
    assert not matches_reference("Revenue rose in 2022.", ref)


# ---- loaders on tiny folders in the shared layout ------------------------------------------
def _write_hotpot(folder):
    folder.mkdir()
    row = {
        "question_id": "q1", "question_text": "Who?", "answers_objects": [{"spans": ["Ann"]}],
        "contexts": [
            {"id": "0", "title": "A", "paragraph_text": "Ann was born in Oslo.  She sang.", "is_supporting": True},
            {"id": "1", "title": "B", "paragraph_text": "Bob is a cat.", "is_supporting": False},
        ],
    }
    (folder / "ircot_format_dev_subsampled.jsonl").write_text(json.dumps(row) + "\n")
    dis = [{
        "_id": "q2", "question": "Where?", "answer": "Oslo", "type": "bridge", "level": "hard",
        "supporting_facts": [["C", 1], ["Missing", 0]],
        "context": [["C", ["Carl lives here.", " He moved to Oslo in 1990.", " He is tall."]], ["D", ["Dee is far."]]],
    }]
    (folder / "hotpot_distractor_sample.json").write_text(json.dumps(dis))


def test_load_hotpotqa_gold_sentences(tmp_path):
    _write_hotpot(tmp_path / "hotpotqa")
    bench = load_hotpotqa(tmp_path / "hotpotqa")
    ircot = next(q for q in bench.queries if q.source == "ircot")
    doc = bench.documents[ircot.doc_ids[0]]
    assert doc.text == "Ann was born in Oslo.  She sang.\n\nBob is a cat."
    assert [p.title for p in doc.paragraphs] == ["A", "B"]
    gold_text = sorted(doc.text[a:b] for a, b in (doc.sentences[i] for _, i in ircot.gold))
    assert gold_text == ["Ann was born in Oslo.", "She sang."]  # every sentence of the supporting paragraph
    dis = next(q for q in bench.queries if q.source == "distractor")
    ddoc = bench.documents[dis.doc_ids[0]]
    assert [ddoc.text[a:b] for a, b in (ddoc.sentences[i] for _, i in dis.gold)] == ["He moved to Oslo in 1990."]
    # a supporting fact whose paragraph is absent from the context cannot be gold
    assert len(dis.gold) == 1


def test_load_dragonball_gold_and_scope(tmp_path):
    folder = tmp_path / "dragonball"
    folder.mkdir()
    docs = [
        {"domain": "Finance", "language": "en", "doc_id": 1, "company_name": "Acme",
         "content": "Acme was founded in 2001.\nIn March 2021, Acme acquired Beta Corp for $10 million. Revenue grew."},
        {"domain": "Law", "language": "en", "doc_id": 2, "court_name": "X", "content": "A court case."},
        {"domain": "Finance", "language": "zh", "doc_id": 3, "company_name": "Z", "content": "中文。"},
    ]
    (folder / "dragonball_docs.jsonl").write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs))
    queries = [
        {"domain": "Finance", "language": "en", "query": {"query_id": 7, "query_type": "Factual Question",
                                                           "content": "What did Acme acquire?"},
         "ground_truth": {"doc_ids": [1], "content": "Beta Corp",
                          "references": ["In March 2021, Acme acquired Beta Corp for $10 million."], "keypoints": []}},
        {"domain": "Finance", "language": "en", "query": {"query_id": 8, "query_type": "Irrelevant Unsolvable Question",
                                                           "content": "What is the CEO's dog called?"},
         "ground_truth": {"doc_ids": [], "content": "Unable to answer", "references": [], "keypoints": []}},
    ]
    (folder / "queries_finance_en.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    bench = load_dragonball(folder)
    assert sorted(bench.documents) == ["dragonball-1", "dragonball-2"]  # English only, every domain
    q7, q8 = bench.queries
    assert q7.doc_ids == ("dragonball-1", "dragonball-2")  # every query searches every document
    doc = bench.documents["dragonball-1"]
    assert [doc.text[a:b] for a, b in (doc.sentences[i] for _, i in q7.gold)] == [
        "In March 2021, Acme acquired Beta Corp for $10 million."]
    assert not q8.gold and len(bench.queries_with_gold) == 1


def test_layout_errors_name_the_file(tmp_path):
    with pytest.raises(DatasetLayoutError, match="does not exist"):
        load_dragonball(tmp_path / "nope")
    (tmp_path / "dragonball").mkdir()
    with pytest.raises(DatasetLayoutError, match="dragonball_docs.jsonl"):
        load_dragonball(tmp_path / "dragonball")
    (tmp_path / "hotpotqa").mkdir()
    (tmp_path / "hotpotqa" / "ircot_format_dev_subsampled.jsonl").write_text("{not json\n")
    with pytest.raises(DatasetLayoutError, match="line 1"):
        load_hotpotqa(tmp_path / "hotpotqa", sources=("ircot",))
