"""The package's default SproutRAG model: what a `pip install` user gets when the store chose no
model.  Trained on licence-compatible data only (its card and config say so), small, loadable,
and live in a store without a CURRENT choice; `use none` still switches it off."""

from __future__ import annotations

import json

import pytest

from vectree.retrieval.sprout import model as sm


@pytest.fixture
def with_default(monkeypatch):
    monkeypatch.delenv("VECTREE_SPROUT_DEFAULT_MODEL", raising=False)
    folder = sm.default_model_dir()
    if folder is None:
        pytest.fail(f"no default SproutRAG model shipped under {sm.PACKAGED_DIR}")
    return folder


def test_default_model_is_licence_clean_small_and_loads(with_default):
    folder = with_default
    cfg = json.loads((folder / sm.CONFIG_FILE).read_text())
    data = cfg["training"]["data"]
    assert set(data["sources"]) <= {"hotpotqa", "qasper"} and not data["benchmark_model"]
    assert not any("dragonball" in f for f in data["files"])
    assert (folder / sm.WEIGHTS_FILE).stat().st_size < 5_000_000
    card = (folder / sm.CARD_FILE).read_text()
    assert "licence-compatible" in card and "Benchmark model" not in card
    model = sm.load_model(folder)
    assert model.config.model_id == cfg["model_id"] and model.n_parameters() > 0


def test_a_store_without_a_choice_uses_the_default_and_can_switch_it_off(with_default, tmp_path):
    from vectree.retrieval.store import Store

    store = Store(tmp_path / "store")
    assert sm.current_model_dir(store) == with_default
    listed = sm.list_models(store)
    assert [m["origin"] for m in listed if m["live"]] == ["package default"]
    sm.set_live_model(store, sm.OFF)
    assert sm.current_model_dir(store) is None and sm.sprout_switched_off(store)
    sm.set_live_model(store, with_default.name)
    assert sm.current_model_dir(store) == with_default


def test_the_default_can_be_disabled(monkeypatch, tmp_path):
    monkeypatch.setenv("VECTREE_SPROUT_DEFAULT_MODEL", "none")
    assert sm.default_model_dir() is None
    from vectree.retrieval.store import Store

    assert sm.current_model_dir(Store(tmp_path / "s")) is None
