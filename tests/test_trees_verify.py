"""The deterministic verifier, text normalisation and the tree schema/invariants (pure, fast)."""

from __future__ import annotations

import random

import pyarrow.parquet as pq
import pytest

from vectree.retrieval.store import Store, StoreError
from vectree.retrieval.trees.normalize import MatchText, normalize_text, title_key
from vectree.retrieval.trees.schema import (
    TREE_SCHEMA, assemble_tree, check_invariants, indexable_nodes, read_tree, tree_stats, write_tree,
)
from vectree.retrieval.trees.verify import parents_from_levels, verify_entries, verify_root

PAGES = [
    "A Study of Things\nAbstract\nWe look at things.\n1 Introduction\nThings matter.",
    "2 Methods\nWe measured the ﬂow of heat with a calorimeter.\n2.1 Exper-\nimental Setup\nThe setup is simple.",
    "more methods text without headings, and the word start appears here",
    "3.2. Results\nNumbers went up.\nMulti-\nLexSum corpus",
    "4 Discussion\nThe end of the story.",
]


def entry(title, page, end=None, level=1):
    return {"title": title, "level": level, "page_start": page, "page_end": end if end is not None else page}


def check_one(e, pages=PAGES):
    return verify_entries([e], pages).checks[0]


# ---- normalisation ------------------------------------------------------------------------

def test_normalize_text_contract():
    assert normalize_text("The  ﬁrst\nexam-\nple") == "the first example"
    assert normalize_text("Authors’ Contributions") == "authors' contributions"
    assert normalize_text("Æther — Œuvre") == "aether - oeuvre"


def test_match_needs_token_boundaries_and_keeps_section_numbers_apart():
    text = MatchText.of("the start of section 12 Results and 1.2 Results")
    assert not text.contains("art")  # inside "start"
    assert text.contains("start")
    assert text.find("1.2 Results")  # printed "1.2 Results"
    assert len(text.find("12 Results")) == 1  # only the "12 Results" occurrence, not "1.2"
    assert title_key("3.2. Results") == title_key("3.2 Results") == title_key("3.2\nResults")


# ---- the verifier on hand-made cases ------------------------------------------------------

def test_exact_title_passes():
    c = check_one(entry("1 Introduction", 1))
    assert c.verified and (c.page_start, c.page_end) == (1, 1) and c.verify_note is None


def test_case_different_title_passes():
    assert check_one(entry("1 INTRODUCTION", 1)).verified
    assert check_one(entry("2 methods", 2)).verified


def test_hyphenated_across_line_break_and_ligature_pass():
    assert check_one(entry("2.1 Experimental Setup", 2, 2, level=1)).verified
    assert check_one(entry("Multi-LexSum corpus", 4)).verified
    # the page prints the ﬂ ligature; the title is plain ASCII
    assert MatchText.of(PAGES[1]).contains("the flow of heat")


def test_section_number_printed_differently_passes():
    assert check_one(entry("3.2 Results", 4)).verified  # printed "3.2. Results"
    pages = ["x", "3.2\nResults\ntext"]  # number and title on separate lines
    assert check_one(entry("3.2 Results", 2), pages).verified


def test_neighbouring_page_passes_and_records_the_real_page():
    c = check_one(entry("2 Methods", 1, 1))
    assert c.verified
    assert (c.page_start, c.page_end) == (2, 2)  # moved to where the heading is; the range follows
    assert "found on page 2" in c.note
    c = check_one(entry("4 Discussion", 4, 5))  # one page early: grows the range by nothing, start moves
    assert c.verified and (c.page_start, c.page_end) == (5, 5)
    c = check_one(entry("1 Introduction", 2, 3))  # one page late
    assert c.verified and (c.page_start, c.page_end) == (1, 3)


def test_line_start_occurrence_wins_over_running_text():
    pages = ["we report results here", "Results\nthe table", "x"]
    c = check_one(entry("Results", 1), pages)
    assert c.verified and c.page_start == 2


def test_two_pages_away_fails_and_says_where_the_title_is():
    c = check_one(entry("4 Discussion", 3))
    assert not c.verified
    assert "not found on pages 2-4" in c.reasons[0] and "page(s) 5" in c.reasons[0]
    assert c.elsewhere == [5]


def test_title_not_on_any_page_fails():
    c = check_one(entry("5 Quantum Gravity", 4))
    assert not c.verified and "not found" in c.reasons[0] and c.elsewhere == []
    assert not check_one(entry("", 1)).verified
    assert not check_one({"title": "2 Methods", "level": 1, "page_start": "two"}).verified


def test_range_outside_the_document_fails():
    c = check_one(entry("4 Discussion", 5, 9))
    assert not c.verified and "outside the document (1-5)" in c.reasons[0]
    assert (c.page_start, c.page_end) == (5, 5)  # the stored range is clamped into the paper


def test_child_outside_its_parent_fails():
    res = verify_entries([entry("2 Methods", 2, 2), entry("3.2. Results", 4, 4, level=2)], PAGES)
    parent, child = res.checks
    assert parent.verified and not child.verified
    assert child.parent == 0 and "outside its parent '2 Methods' (pages 2-2)" in child.reasons[0]
    assert (child.page_start, child.page_end) == (2, 2)


def test_sibling_before_its_previous_sibling_fails():
    res = verify_entries([entry("4 Discussion", 5, 5), entry("2 Methods", 2, 3)], PAGES)
    assert res.checks[0].verified and not res.checks[1].verified
    assert "before its previous sibling" in res.checks[1].reasons[0]


def test_parents_from_levels():
    assert parents_from_levels([1, 2, 2, 3, 1, 3, 2]) == [None, 0, 0, 2, None, 4, 4]


def test_root_verification():
    assert verify_root("A Study of Things", PAGES) == (True, None)
    ok, note = verify_root("A Study of Other Things", PAGES)
    assert not ok and "not printed verbatim" in note


# ---- assembling trees: invariants by construction -----------------------------------------

def _root(n_pages):
    return {"title": "Paper", "summary": "abstract", "n_pages": n_pages, "verified": True, "verify_note": None}


def test_assembled_tree_keeps_failures_marked_and_out_of_the_index():
    entries = [entry("1 Introduction", 1), entry("2 Methods", 2, 3), entry("2.1 Experimental Setup", 2, 2, level=2),
               entry("9 Hallucinated Section", 3, 4), entry("4 Discussion", 5, 7)]
    res = verify_entries(entries, PAGES)
    nodes = assemble_tree("doc-1", _root(5), entries, res.checks, source="llm")
    assert check_invariants(nodes, 5) == []
    assert [n["node_id"] for n in nodes] == ["n0", "n1", "n2", "n3", "n4", "n5"]
    assert nodes[3]["parent_id"] == "n2" and nodes[3]["level"] == 2 and nodes[3]["ordinal"] == 0
    bad = [n for n in nodes if not n["verified"]]
    assert {n["title"] for n in bad} == {"9 Hallucinated Section", "4 Discussion"}
    assert all(n["verify_note"] for n in bad)
    indexed = indexable_nodes(nodes)
    assert {n["node_id"] for n in indexed} == {"n1", "n2", "n3"}
    stats = tree_stats(nodes)
    assert (stats["sections"], stats["verified"], stats["unverified"]) == (5, 3, 2)


def test_random_claims_always_assemble_into_a_sound_tree():
    """Whatever an extractor claims, the stored tree satisfies the invariants and every node whose
    claim broke them is unverified."""
    rng = random.Random(7)
    words = ["Introduction", "Methods", "Results", "Discussion", "Setup", "Data", "Nothing Here"]
    for _ in range(300):
        n_pages = rng.randint(1, 8)
        pages = [" ".join(rng.sample(words, 3)) for _ in range(n_pages)]
        entries = [
            {"title": rng.choice(words), "level": rng.randint(1, 3),
             "page_start": rng.randint(-1, n_pages + 2), "page_end": rng.randint(-1, n_pages + 3)}
            for _ in range(rng.randint(0, 9))
        ]
        res = verify_entries(entries, pages)
        nodes = assemble_tree("doc", _root(n_pages), entries, res.checks, source="layout")
        assert check_invariants(nodes, n_pages) == [], (entries, pages)
        for e, c in zip(entries, res.checks):
            if c.verified:
                assert MatchText.of(pages[c.page_start - 1]).contains(e["title"])


def test_check_invariants_reports_broken_trees():
    entries = [entry("1 Introduction", 1), entry("2 Methods", 2, 3)]
    nodes = assemble_tree("doc", _root(5), entries, verify_entries(entries, PAGES).checks, source="layout")
    broken = [dict(n) for n in nodes]
    broken[2]["page_end"] = 9
    broken[1]["page_start"] = 4
    broken[2]["source"] = "magic"
    problems = check_invariants(broken, 5)
    assert any("outside 1-5" in p for p in problems)
    assert any("before its previous sibling" in p for p in problems)
    assert any("unknown source" in p for p in problems)
    orphan = [dict(n) for n in nodes]
    orphan[2]["parent_id"] = "n9"
    assert any("does not exist" in p for p in check_invariants(orphan, 5))


# ---- the artefact -------------------------------------------------------------------------

def test_write_and_read_tree_roundtrip(tmp_path):
    store = Store(tmp_path)
    entries = [entry("1 Introduction", 1), entry("2 Methods", 2, 3)]
    nodes = assemble_tree("doc-1", _root(5), entries, verify_entries(entries, PAGES).checks, source="outline")
    write_tree(store, "doc-1", nodes)
    table = pq.read_table(store.tree_path("doc-1"))
    assert table.schema.names == [
        "node_id", "doc_id", "parent_id", "ordinal", "level", "title", "summary", "page_start", "page_end",
        "verified", "verify_note", "repair_rounds", "source",
    ]
    assert table.schema.equals(TREE_SCHEMA)
    assert read_tree(store, "doc-1") == nodes
    write_tree(store, "doc-2", [])  # the empty marker of a paper without pages
    assert read_tree(store, "doc-2") == []
    with pytest.raises(StoreError, match="no section tree"):
        read_tree(store, "doc-3")
    with pytest.raises(ValueError, match="belongs to"):
        write_tree(store, "doc-9", nodes)
