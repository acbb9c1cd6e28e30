"""Paired bootstrap differences between the systems of one run (vectree.evaluation.paired)."""

import numpy as np
import pytest

from vectree.evaluation.paired import paired_bootstrap, paired_rows, paired_table, per_question


def _row(system, items, status="ok"):
    return {"system": system, "status": status, "per_item": items}


def test_identical_systems_differ_by_nothing():
    a = [0.2, 0.5, 0.9, 0.0, 1.0]
    s = paired_bootstrap(a, a)
    assert s["diff"] == s["diff_lo"] == s["diff_hi"] == 0.0
    assert s["ratio"] == pytest.approx(1.0) and s["ratio_lo"] == pytest.approx(1.0)


def test_a_consistent_gain_is_outside_the_noise_and_a_random_one_is_not():
    rng = np.random.default_rng(3)
    b = rng.uniform(0, 0.8, 60)
    up = paired_bootstrap(b + 0.1, b)  # every question 0.1 better: the interval is that exact gain
    assert up["diff"] == pytest.approx(0.1) and up["diff_lo"] == pytest.approx(0.1) and up["ratio_lo"] > 1.0
    noisy = paired_bootstrap(b + rng.normal(0, 0.3, 60), b)  # unrelated noise: the interval holds 0
    assert noisy["diff_lo"] < 0 < noisy["diff_hi"]
    assert noisy["diff_lo"] <= noisy["diff"] <= noisy["diff_hi"]


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        paired_bootstrap([], [])
    assert "ratio" not in paired_bootstrap([0.5, 0.5], [0.0, 0.0])  # no ratio to a mean of 0


def test_each_metric_counts_its_own_questions_and_repeats_stay_apart():
    items = [{"question_id": "q1", "paper_id": "a", "has_evidence": True, "evidence_page_precision": 1.0,
              "answer_f1": 0.5},
             {"question_id": "q1", "paper_id": "b", "has_evidence": True, "evidence_page_precision": 0.0,
              "answer_f1": None},
             {"question_id": "q2", "paper_id": "a", "has_evidence": False, "evidence_page_precision": 1.0,
              "answer_f1": 1.0}]
    row = _row("s", items)
    assert per_question(row, "evidence_page_precision", "paper_qa") == {"a/q1#1": 1.0, "b/q1#1": 0.0}
    assert per_question(row, "answer_f1", "paper_qa") == {"a/q1#1": 0.5, "a/q2#1": 1.0}


def test_table_pairs_every_system_with_the_first_that_ran():
    def items(values):
        return [{"question_id": f"q{i}", "n_gold": 2, "ie@1": v, "ie@3": v, "ie@5": v} for i, v in enumerate(values)]

    rows = [_row("sprout", items([0.5, 0.6, 0.7, 0.4])), _row("broken", [], status="failed"),
            _row("flat", items([0.25, 0.3, 0.35, 0.2]))]
    found = paired_rows(rows, "sentences")
    assert {(f["system"], f["reference"], f["metric"]) for f in found} == {("flat", "sprout", f"ie@{k}") for k in (1, 3, 5)}
    assert all(f["ratio"] == pytest.approx(0.5) and f["diff_hi"] < 0 for f in found)
    text = paired_table(rows, "sentences")
    assert "Paired against `sprout`" in text and "| flat | ie@1 | 4 | -0.275 |" in text and "0.50x" in text
    assert paired_table(rows[:1], "sentences") == ""  # nothing to pair
    with pytest.raises(ValueError):
        paired_rows(rows, "sentences", reference="nope")


def test_the_console_table_shows_the_headline_difference():
    from rich.console import Console

    from vectree.evaluation.report import console_table

    def items(values):
        return [{"question_id": f"q{i}", "n_gold": 2, "ie@1": v, "ie@3": v, "ie@5": v} for i, v in enumerate(values)]

    rows = [{"system": s, "status": "ok", "n": 4, "per_item": items(v), "benchmark": "b",
             "config": {"task": "sentences"}, "metrics": {"ie@1": sum(v) / 4, "ie@3": sum(v) / 4, "ie@5": sum(v) / 4}}
            for s, v in (("sprout", [0.5, 0.6, 0.7, 0.4]), ("flat", [0.25, 0.3, 0.35, 0.2]))]
    console = Console(record=True, width=200)
    console.print(console_table(rows))
    text = console.export_text()
    assert "vs sprout [95 %]" in text and "-0.275 [-0.325, -0.225]" in text
    # in an 80-column terminal the rows still name their systems in full
    rows += [dict(rows[1], system="vectree-no-calibration")]
    narrow = Console(record=True, width=70)
    narrow.print(console_table(rows, width=70))
    text = narrow.export_text()
    assert "vectree-no-calibration" in text and "0.550" in text and "…" not in text  # nothing cut
    # what did not fit is named, not silently cut: here the paired interval
    assert "left out for the terminal's width" in text and "[95 %]" not in text.split("left out")[0]
