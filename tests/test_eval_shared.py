"""``vectree eval`` on the real shared data, a few questions per benchmark (the layouts of
``../shared/data`` are what the harness is written against)."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

LIMITS = {"qasper_pdf": 1, "qasper": 1, "pubmedqa": 3, "dragonball": 2, "dragonball_qa": 3, "dragonball_multi": 2,
          "hotpotqa": 2,
          "scholarqa_multi": 2}


@pytest.fixture(scope="module", autouse=True)
def own_cache(tmp_path_factory):
    saved = os.environ.get("VECTREE_EVAL_CACHE")
    os.environ["VECTREE_EVAL_CACHE"] = str(tmp_path_factory.mktemp("shared-eval-cache"))
    yield
    if saved is None:
        os.environ.pop("VECTREE_EVAL_CACHE", None)
    else:
        os.environ["VECTREE_EVAL_CACHE"] = saved


@pytest.mark.shared_data
@pytest.mark.parametrize("bench", list(LIMITS))
def test_bm25_on_each_real_benchmark(bench, shared_data, tmp_path):
    from vectree.cli import main
    from vectree.evaluation.layouts import data_folder

    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["eval", bench, "--data", str(shared_data / data_folder(bench)), "--system", "bm25",
                                    "--limit", str(LIMITS[bench]), "--out", str(out), "--work", str(tmp_path / "w")],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    (r,) = json.loads(out.read_text())
    assert r["status"] == "ok" and r["n"] == LIMITS[bench], r["notes"]
    assert r["metrics"] and all(v >= 0 for v in r["metrics"].values())
    assert r["data_sha256"]
