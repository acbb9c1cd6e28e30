"""Cited evidence calibrated on the pages of dev papers (retrieval.rerank.pages): the grid, the dev
papers built from training-side QASPER articles only, and the navigator honouring the calibration."""

from __future__ import annotations

import copy

import pytest

from vectree.retrieval.rerank.pages import Episode, cited_pages, dev_papers, fit, score


def test_cited_pages_keep_the_best_and_at_most_max_cited():
    pages, rel = [3, 5, 3, 7], [0.9, 0.85, 0.5, 0.2]
    assert cited_pages(pages, rel, 0.95, 0.1, 4) == {3}  # nothing passes: the best alone
    assert cited_pages(pages, rel, 0.3, 0.5, 4) == {3, 5}
    assert cited_pages(pages, rel, 0.1, 1.0, 4) == {3, 5, 7}
    assert cited_pages(pages, rel, 0.1, 1.0, 1) == {3}


def test_fit_picks_the_point_with_the_best_mean_page_f1():
    # a runner-up at .8 is right in one question and wrong in the other; the third candidate never is
    eps = [Episode([2, 4, 9], [0.9, 0.8, 0.3], {2, 4}), Episode([1, 6, 8], [0.9, 0.8, 0.3], {1})]
    best, curve = fit(eps)
    assert best["mean_f1"] == max(d["mean_f1"] for d in curve)
    assert len(curve) == len({(d["threshold"], d["margin"], d["max_cited"]) for d in curve})
    # the best alone (F1 2/3 and 1) and the two best (1 and 2/3) tie at .833: fewer pages wins;
    # three (.8 and .5) is worse
    assert best["mean_f1"] == pytest.approx(0.8333, abs=1e-3) and best["pages"] == 1.0
    three = score(eps, 0.05, 1.0, 3)
    assert three["pages"] == 3.0 and three["mean_f1"] < best["mean_f1"]
    assert score(eps, 0.05, 1.0, 2)["recall"] == 1.0


def test_dev_papers_come_from_training_side_articles_only(shared_data):
    from vectree.retrieval.rerank.data import _qasper_split, eval_article_ids

    papers = dev_papers(shared_data, limit=3)
    assert len(papers) == 3
    excluded = eval_article_ids(shared_data)
    for p in papers:
        assert p.key not in excluded and _qasper_split(p.key) == "dev"
        assert len(p.chunks) >= 200 and len(p.pages) == len(p.chunks)
        assert p.pages == sorted(p.pages) and p.pages[-1] > 3  # several pages, in reading order
        assert p.questions and all(gold and gold <= set(p.pages) for _, gold in p.questions)
        # the gold pages are the pages of each question's evidence chunks
        assert [gold for _, gold in p.questions] == [{p.pages[i] for i in ev} for ev in p.evidence]
    # the article's own paragraphs (its questions' evidence) are spread among the padding, not packed
    # on the first page
    assert any(max(gold) > 2 for p in papers for _, gold in p.questions)
    assert [p.chunks for p in dev_papers(shared_data, limit=3)] == [p.chunks for p in papers]  # seeded


def test_the_navigator_cites_what_the_page_calibration_allows(demo_store):
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox
    from vectree.retrieval.rerank.model import get_reader

    shipped = get_reader()
    if shipped is None or "page_selection" not in (shipped.config.calibration or {}):
        pytest.skip("the shipped reader has no page-level calibration")
    question = "Why does the capacity of lithium-ion cells fade?"
    counts = {}
    for most in (1, 3):
        reader = copy.copy(shipped)
        reader.config = copy.deepcopy(shipped.config)
        # everything passes threshold and margin: the cap alone decides how many are cited
        reader.config.calibration["page_selection"].update({"threshold": 0.0, "margin": 1.0, "max_cited": most})
        reader.config.calibration["evidence"] = {"abstain_below": 0.0}
        answer = OfflineNavigator(Toolbox(demo_store, reranker=reader)).answer(question)
        assert not answer.abstained, answer.answer
        counts[most] = len(answer.citations)
    assert counts[1] == 1 and 1 < counts[3] <= 3, counts


def test_reranker_info_shows_the_page_calibration():
    from click.testing import CliRunner

    from vectree.cli import main
    from vectree.retrieval.rerank.model import get_reader

    reader = get_reader()
    if reader is None or "page_selection" not in (reader.config.calibration or {}):
        pytest.skip("the shipped reader has no page-level calibration")
    ps = reader.config.calibration["page_selection"]
    res = CliRunner().invoke(main, ["reranker", "info"], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "cited pages P / R" in res.output and f"{ps['precision']} / {ps['recall']}" in res.output
