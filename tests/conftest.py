"""Shared fixtures.

Tests that need ``../shared/data`` use the ``shared_data`` fixture: when the folder is missing
they fail under CI (``CI=true``) and are skipped elsewhere with a message naming the data.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vectree.retrieval.config import load_settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
# the LLM path is tested only against the loopback servers the tests start
for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "VECTREE_STORE", "VECTREE_CORPUS", "VECTREE_CONFIG"):
    os.environ.pop(var, None)
# stores in tests start without SproutRAG (ingest stays fast, search_within_paper uses passages);
# the tests of the package's default model unset this
os.environ["VECTREE_SPROUT_DEFAULT_MODEL"] = "none"

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = load_settings().shared_data  # VECTREE_SHARED_DATA, default ../shared/data


def _need(path: Path, what: str) -> Path:
    if path.exists():
        return path
    msg = f"needs {what} at {path} (the workplace's shared data; set VECTREE_SHARED_DATA to point elsewhere)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (fails under CI when missing, skips elsewhere)."""
    return _need(SHARED_DATA, "../shared/data")


@pytest.fixture(scope="session")
def shared_pdfs(shared_data) -> list[Path]:
    """The 37 real PDFs of ``../shared/data/pdfs``."""
    folder = _need(shared_data / "pdfs", "../shared/data/pdfs")
    return sorted(folder.rglob("*.pdf"))


@pytest.fixture(scope="session")
def demo_pdfs(tmp_path_factory) -> list[Path]:
    """The project's demo corpus rendered once per test session."""
    from vectree.demo import build_demo_corpus

    return build_demo_corpus(tmp_path_factory.mktemp("demo-corpus"))


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory, demo_pdfs):
    """A store with the demo corpus ingested through the real Dagster pipeline (built once).

    Tests must treat it as read-only; tests that change a store build their own.
    """
    from vectree.cli import run_ingest

    root = tmp_path_factory.mktemp("demo-store")
    store, report, _ = run_ingest([str(demo_pdfs[0].parent)], str(root), quiet=True)
    assert not report.failed_runs, report.failed_runs
    return store


@pytest.fixture(autouse=True)
def _pubmedqa_all_questions(monkeypatch):
    """The eval tests' synthetic PubMedQA folders have a handful of questions: ask all of them.
    (By default ``vectree eval pubmedqa`` asks only the reader's held-back split; a test in
    tests/test_reranker.py checks that default.)"""
    monkeypatch.setenv("VECTREE_EVAL_PUBMEDQA_SPLIT", "all")

