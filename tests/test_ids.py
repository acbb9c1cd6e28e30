"""Paper-id resolution (vectree.retrieval.ids): exact ids, unique prefixes, ambiguity, suggestions."""

from __future__ import annotations

import pytest

from vectree.retrieval.ids import AmbiguousDocId, DocIdError, UnknownDocId, resolve_doc_id

ROWS = [
    {"doc_id": "calendar-ageing-nmc811-5d54bce590", "title": "Calendar Ageing of NMC811/Graphite Pouch Cells"},
    {"doc_id": "calendar-life-lfp-0a1b2c3d4e", "title": "Calendar Life of LFP Cells"},
    {"doc_id": "helix212-dataset-9a2ec8ccd5", "title": "HELIX-212: An Open Dataset of 212 Cylindrical Cells"},
    {"doc_id": "2302-07302v1-6181aa00bb", "title": "Lithium Plating Detection by Voltage Relaxation"},
]


def test_exact_id_and_unique_prefix_resolve():
    assert resolve_doc_id("helix212-dataset-9a2ec8ccd5", ROWS) == "helix212-dataset-9a2ec8ccd5"
    assert resolve_doc_id("helix", ROWS) == "helix212-dataset-9a2ec8ccd5"
    assert resolve_doc_id("calendar-a", ROWS) == "calendar-ageing-nmc811-5d54bce590"
    assert resolve_doc_id("2302-07302", ROWS) == "2302-07302v1-6181aa00bb"
    assert resolve_doc_id("  HELIX  ", ROWS) == "helix212-dataset-9a2ec8ccd5"  # ids are lower case


def test_an_exact_id_wins_over_a_longer_id_it_prefixes():
    rows = [{"doc_id": "a-1", "title": "x"}, {"doc_id": "a-12", "title": "y"}]
    assert resolve_doc_id("a-1", rows) == "a-1"


def test_ambiguous_prefix_lists_every_candidate_with_its_title():
    with pytest.raises(AmbiguousDocId) as exc:
        resolve_doc_id("calendar", ROWS)
    assert [d for d, _ in exc.value.candidates] == ["calendar-ageing-nmc811-5d54bce590", "calendar-life-lfp-0a1b2c3d4e"]
    msg = str(exc.value)
    assert "ambiguous" in msg and "Calendar Life of LFP Cells" in msg and "calendar-ageing-nmc811-5d54bce590" in msg


def test_unknown_id_suggests_close_ids_and_titles():
    with pytest.raises(UnknownDocId) as exc:
        resolve_doc_id("helix-212", ROWS)  # a typo of the id
    assert exc.value.candidates[0][0] == "helix212-dataset-9a2ec8ccd5"
    with pytest.raises(UnknownDocId) as exc:
        resolve_doc_id("lithium plating", ROWS)  # words of the title, not of the id
    assert exc.value.candidates[0][0] == "2302-07302v1-6181aa00bb"
    assert "did you mean" in str(exc.value)


def test_unknown_id_without_anything_close_and_empty_store_say_so():
    with pytest.raises(UnknownDocId) as exc:
        resolve_doc_id("zzzz-qqqq", ROWS)
    assert exc.value.candidates == [] and "vectree papers" in str(exc.value)
    with pytest.raises(DocIdError, match="no papers yet"):
        resolve_doc_id("anything", [])
