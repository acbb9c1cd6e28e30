"""A small search corpus with known answers (shared by the test_search_* files), and the tests of
what becomes an entry: paper + verified sections, never unverified ones, never page text."""

from __future__ import annotations

import copy
from pathlib import Path

import pyarrow as pa
import pytest

from vectree.retrieval.search.entries import PAPER, SECTION, entries_for_paper, store_entries
from vectree.retrieval.store import Store, atomic_write_parquet
from vectree.retrieval.trees.schema import TREE_SCHEMA


# Each paper has its own vocabulary; "UNVERIFIED" sections carry a word found nowhere else
# (``zanzibarite``), so a hit on it would prove an unverified node leaked into an index.
# Each PAGE_ONLY sentence exists only in the page text: it must not be findable either.
PAPERS = {
    "lfp-cracking-aaaaaaaaa1": dict(
        title="Cracking of lithium iron phosphate cathodes under fast charging",
        abstract="We study particle fracture in LiFePO4 cathodes cycled at high C-rates.",
        n_pages=9,
        sections=[
            ("Electrochemical cycling protocol", "Coin cells were cycled at 4C between 2.5 and 4.2 V.", 2, 3, True),
            ("Fracture imaging", "Scanning electron microscopy reveals intergranular cracks in particles.", 4, 6, True),
            ("Zanzibarite appendix", "Zanzibarite crystals were discussed but never checked.", 7, 7, False),
        ],
        page_only="The quokka mascot of the laboratory appears only on a page.",
    ),
    "sei-graphite-aaaaaaaaa2": dict(
        title="Solid electrolyte interphase growth on graphite anodes",
        abstract="The SEI layer thickens with calendar ageing and consumes cyclable lithium.",
        n_pages=7,
        sections=[
            ("Calendar ageing at elevated temperature", "Cells stored at 60 C lost capacity through SEI growth.", 2, 4, True),
            ("Impedance spectroscopy", "Charge-transfer resistance rises as the interphase film grows.", 5, 6, True),
        ],
        page_only="A wombat drawing decorates the margin of page two.",
    ),
    "perovskite-humid-aaaaaaaa3": dict(
        title="Humidity degradation of perovskite solar cells",
        abstract="Methylammonium lead iodide films decompose when exposed to moisture.",
        n_pages=8,
        sections=[
            ("Moisture exposure chamber", "Films were held at 85 percent relative humidity for 500 hours.", 2, 3, True),
            ("Encapsulation strategies", "Glass-glass encapsulation with edge sealant slowed the decay.", 5, 7, True),
        ],
        page_only="",
    ),
    "pem-platinum-aaaaaaaaa4": dict(
        title="Platinum catalyst loading in proton exchange membrane fuel cells",
        abstract="Reducing platinum on the cathode catalyst layer lowers fuel cell cost.",
        n_pages=6,
        sections=[
            ("Catalyst layer fabrication", "Ink of carbon-supported platinum was sprayed onto Nafion membranes.", 2, 2, True),
            ("Polarisation curves", "Oxygen reduction kinetics limit performance at low platinum loading.", 3, 5, True),
        ],
        page_only="",
    ),
    "coral-bleach-aaaaaaaaa5": dict(
        title="Coral reef bleaching during marine heatwaves",
        abstract="Elevated sea surface temperature expels symbiotic algae from coral tissue.",
        n_pages=10,
        sections=[
            ("Survey sites on the Great Barrier Reef", "Divers scored bleaching on transects at 40 reefs.", 2, 4, True),
            ("Thermal stress metrics", "Degree heating weeks predicted mortality of branching corals.", 5, 8, True),
        ],
        page_only="",
    ),
    "protein-fold-aaaaaaaaa6": dict(
        title="Folding kinetics of small globular proteins",
        abstract="Two-state folding rates correlate with contact order of the native structure.",
        n_pages=5,
        sections=[
            ("Stopped-flow fluorescence", "Tryptophan fluorescence tracked folding on millisecond timescales.", 2, 3, True),
            ("Phi-value analysis", "Mutations mapped the structure of the transition state ensemble.", 4, 5, True),
        ],
        page_only="",
    ),
}


def tree_rows(doc_id: str, spec: dict) -> list[dict]:
    rows = [dict(node_id="n0", doc_id=doc_id, parent_id=None, ordinal=0, level=0, title=spec["title"],
                 summary=spec["abstract"], page_start=1, page_end=spec["n_pages"], verified=True, verify_note="",
                 repair_rounds=0, source="test")]
    for i, (title, summary, p0, p1, verified) in enumerate(spec["sections"], start=1):
        rows.append(dict(node_id=f"n{i}", doc_id=doc_id, parent_id="n0", ordinal=i - 1, level=1, title=title,
                         summary=summary, page_start=p0, page_end=p1, verified=verified,
                         verify_note="" if verified else "summary not supported by the pages", repair_rounds=0,
                         source="test"))
    return rows


def write_paper(store: Store, doc_id: str, spec: dict) -> None:
    """Record, pages and tree of one paper through the Store API (the catalog is written separately)."""
    store.write_record(doc_id, {"doc_id": doc_id, "title": spec["title"], "abstract": spec["abstract"],
                                "n_pages": spec["n_pages"], "status": "ok", "outline": []})
    store.write_pages(doc_id, [
        dict(page_no=p, width=612.0, height=792.0, lines=[],
             text=(spec["page_only"] if p == 1 else f"page {p} of {spec['title']}"))
        for p in range(1, spec["n_pages"] + 1)
    ])
    atomic_write_parquet(store.tree_path(doc_id), pa.Table.from_pylist(tree_rows(doc_id, spec), schema=TREE_SCHEMA))


def write_catalog(store: Store, papers: dict[str, dict], extra_rows: list[dict] = ()) -> None:
    rows = [dict(doc_id=d, slug=d.rsplit("-", 1)[0], title=s["title"], authors=[], abstract=s["abstract"],
                 n_pages=s["n_pages"], n_chars=1000, sha256="0" * 64, source_path=f"/corpus/{d}.pdf",
                 source_paths=[f"/corpus/{d}.pdf"], status="ok", error=None, parsed_at="2026-01-01T00:00:00")
            for d, s in papers.items()]
    store.write_catalog(rows + list(extra_rows))


def make_store(root: Path, papers: dict[str, dict] | None = None) -> Store:
    store = Store(root)
    papers = PAPERS if papers is None else papers
    for doc_id, spec in papers.items():
        write_paper(store, doc_id, spec)
    write_catalog(store, papers)
    return store


def papers_copy() -> dict[str, dict]:
    return copy.deepcopy(PAPERS)


# ---- entry tests -------------------------------------------------------------------------
def test_entries_are_one_paper_entry_plus_verified_sections(tmp_path):
    store = make_store(tmp_path / "store")
    entries = list(store_entries(store))
    by_doc: dict[str, list] = {}
    for e in entries:
        by_doc.setdefault(e.doc_id, []).append(e)
    assert set(by_doc) == set(PAPERS)
    for doc_id, spec in PAPERS.items():
        group = by_doc[doc_id]
        papers = [e for e in group if e.kind == PAPER]
        sections = [e for e in group if e.kind == SECTION]
        assert len(papers) == 1
        verified = [s for s in spec["sections"] if s[4]]
        assert [e.title for e in sections] == [s[0] for s in verified]
        assert [(e.page_start, e.page_end) for e in sections] == [(s[2], s[3]) for s in verified]
        paper = papers[0]
        assert paper.title == spec["title"] and spec["abstract"] in paper.body
        for title, *_ in verified:
            assert title in paper.body  # section titles are part of the paper entry
        for title, summary, *_rest, ok in spec["sections"]:
            if not ok:  # an unverified section: neither an entry nor a title in the paper entry
                assert all(title not in e.text and summary not in e.text for e in group)
        if spec["page_only"]:  # page text is never part of an entry
            assert all(spec["page_only"] not in e.text for e in entries)
        assert all(e.node_id != "n0" for e in sections)  # the root is the paper, not a section


def test_section_entries_follow_document_order_and_skip_unverified_nested_nodes():
    rows = [
        dict(node_id="n0", parent_id=None, ordinal=0, level=0, title="root", summary="abs", page_start=1,
             page_end=4, verified=True),
        dict(node_id="n1", parent_id="n0", ordinal=0, level=1, title="A", summary="a", page_start=1, page_end=2,
             verified=True),
        dict(node_id="n2", parent_id="n1", ordinal=0, level=2, title="A.1", summary="a1", page_start=1, page_end=1,
             verified=True),
        dict(node_id="n3", parent_id="n1", ordinal=1, level=2, title="A.2", summary="a2", page_start=2, page_end=2,
             verified=False),
        dict(node_id="n4", parent_id="n0", ordinal=1, level=1, title="B", summary="b", page_start=3, page_end=4,
             verified=True),
    ]
    entries = entries_for_paper("x-1", "T", "abs", rows, n_pages=4)
    assert [e.node_id for e in entries] == [None, "n1", "n2", "n4"]
    assert entries[0].body.endswith("Sections: A; A.1; B")


def test_paper_without_tree_uses_the_pdf_outline_for_section_titles():
    entries = entries_for_paper("x-1", "Title", "Abstract.", None, n_pages=3,
                                outline=[[1, "Introduction", 1], [1, "Results", 2]])
    assert len(entries) == 1 and entries[0].kind == PAPER
    assert "Introduction" in entries[0].body and "Results" in entries[0].body
    assert (entries[0].page_start, entries[0].page_end) == (1, 3)


def test_papers_that_are_not_ok_get_no_entries(tmp_path):
    store = make_store(tmp_path / "store", {})
    failed = dict(doc_id="broken-aaaaaaaaa9", slug="broken", title=None, authors=[], abstract=None, n_pages=0,
                  n_chars=0, sha256="1" * 64, source_path="/corpus/broken.pdf", source_paths=["/corpus/broken.pdf"],
                  status="failed", error="corrupt", parsed_at="2026-01-01T00:00:00")
    write_catalog(store, {"lfp-cracking-aaaaaaaaa1": PAPERS["lfp-cracking-aaaaaaaaa1"]}, [failed])
    write_paper(store, "lfp-cracking-aaaaaaaaa1", PAPERS["lfp-cracking-aaaaaaaaa1"])
    assert {e.doc_id for e in store_entries(store)} == {"lfp-cracking-aaaaaaaaa1"}


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
