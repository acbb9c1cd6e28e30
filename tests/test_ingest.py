"""Ingestion through the real pipeline: good papers, every kind of bad input, refresh failures."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from vectree.retrieval.pdf import parse_pdf
from vectree.retrieval.store import Store
from tests import pdfmaker
from vectree.cli import main, run_ingest


@pytest.fixture()
def bad_corpus(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfmaker.write_paper(corpus / "glacier.pdf", "Glacier Melt Dynamics in Alpine Basins", pdfmaker.GOOD_SECTIONS)
    pdfmaker.write_paper(corpus / "soil.pdf", "Soil Moisture Retrieval from Radar", pdfmaker.GOOD_SECTIONS)
    shutil.copy(corpus / "glacier.pdf", corpus / "glacier-copy.pdf")
    pdfmaker.write_corrupt(corpus / "corrupt.pdf")
    pdfmaker.write_encrypted(corpus / "encrypted.pdf")
    pdfmaker.write_zero_pages(corpus / "zero.pdf")
    pdfmaker.write_scanned(corpus / "scanned.pdf")
    pdfmaker.write_not_pdf(corpus / "webpage.pdf")
    pdfmaker.write_paper(corpus / "huge.pdf", "A Very Long Report", pdfmaker.GOOD_SECTIONS, pages=40)
    monkeypatch.setenv("VECTREE_MAX_PAGES", "30")
    return corpus


def _by_source(store: Store) -> dict[str, dict]:
    out = {}
    for row in store.read_catalog():
        for p in row["source_paths"]:
            out[p.rsplit("/", 1)[-1]] = row
    return out


def test_bad_input_gets_status_and_reason_and_others_are_processed(bad_corpus, tmp_path):
    store, report, _ = run_ingest([str(bad_corpus)], str(tmp_path / "store"), quiet=True)
    assert not report.failed_runs
    rows = _by_source(store)
    expected = {
        "corrupt.pdf": ("failed", "corrupt"),
        "encrypted.pdf": ("failed", "encrypted"),
        "zero.pdf": ("failed", "no pages"),
        "scanned.pdf": ("no_text", "no extractable text"),
        "webpage.pdf": ("failed", "not a PDF"),
        "huge.pdf": ("skipped", "too many pages: 40 > limit 30"),
    }
    for name, (status, reason) in expected.items():
        assert rows[name]["status"] == status, (name, rows[name])
        assert reason in rows[name]["error"], (name, rows[name]["error"])
    for name in ("glacier.pdf", "soil.pdf"):
        row = rows[name]
        assert row["status"] == "ok" and row["error"] is None
        assert len(store.read_pages(row["doc_id"])) == row["n_pages"] == 1
        assert store.pdf_path(row["doc_id"]).read_bytes() == (bad_corpus / name).read_bytes()
    # the same bytes under two names are one paper that remembers both names
    assert rows["glacier.pdf"]["doc_id"] == rows["glacier-copy.pdf"]["doc_id"]
    assert len(store.read_catalog()) == 8
    assert sorted(p.rsplit("/", 1)[-1] for p in rows["glacier.pdf"]["source_paths"]) == ["glacier-copy.pdf", "glacier.pdf"]
    # a scanned paper keeps its pages so that page images can still be rendered
    assert store.pages_path(rows["scanned.pdf"]["doc_id"]).exists()


def test_status_command_lists_every_reason(bad_corpus, tmp_path):
    run_ingest([str(bad_corpus)], str(tmp_path / "store"), quiet=True)
    result = CliRunner().invoke(main, ["status", "--store", str(tmp_path / "store")], terminal_width=200)
    assert result.exit_code == 0, result.output
    for reason in ("encrypted PDF", "PDF has no pages", "not a PDF", "too many pages", "no extractable text"):
        assert reason in result.output
    assert "8 papers" in result.output


def test_pages_keep_layout_and_reading_order(tmp_path):
    path = pdfmaker.write_paper(tmp_path / "p.pdf", "Glacier Melt Dynamics in Alpine Basins", pdfmaker.GOOD_SECTIONS)
    parsed = parse_pdf(path)
    page = parsed.pages[0]
    heading = next(l for l in page["lines"] if l["text"] == "2 Methods")
    body = next(l for l in page["lines"] if l["text"].startswith("Discharge was recorded"))
    assert heading["bold"] and not body["bold"]
    assert heading["size"] > body["size"]
    text = page["text"]
    assert text.index("1 Introduction") < text.index("2 Methods") < text.index("3 Results")
    assert parsed.title == "Glacier Melt Dynamics in Alpine Basins"


def test_two_column_reading_order(tmp_path):
    """Left column is read top to bottom before the right column, even when their lines interleave."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(50, 40, 560, 70), "A Two Column Title Spanning The Page", fontsize=14)
    for i in range(6):
        page.insert_text((50, 100 + 20 * i), f"left line {i}", fontsize=10)
        page.insert_text((320, 100 + 20 * i), f"right line {i}", fontsize=10)
    doc.save(tmp_path / "cols.pdf")
    text = parse_pdf(tmp_path / "cols.pdf").pages[0]["text"]
    order = [text.index(f"left line {i}") for i in range(6)] + [text.index(f"right line {i}") for i in range(6)]
    assert order == sorted(order)
    assert text.index("Two Column Title") < order[0]


def test_failed_refresh_keeps_previous_artefacts(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfmaker.write_paper(corpus / "a.pdf", "Glacier Melt Dynamics in Alpine Basins", pdfmaker.GOOD_SECTIONS)
    store, _, _ = run_ingest([str(corpus)], str(tmp_path / "store"), quiet=True)
    before = store.read_catalog()
    pages_before = pq.read_table(store.pages_path(before[0]["doc_id"])).to_pylist()

    # a second paper whose parser crashes hard half-way through the refresh
    pdfmaker.write_paper(corpus / "b.pdf", "Soil Moisture Retrieval from Radar", pdfmaker.GOOD_SECTIONS)
    pdfmaker.write_paper(corpus / "c.pdf", "River Ice Break-up Forecasting", pdfmaker.GOOD_SECTIONS)
    import vectree.retrieval.ingest as ingest_mod
    real_parse = ingest_mod.parse_pdf

    def crashing_parse(path, **kw):
        if path.endswith("b.pdf"):
            raise MemoryError("simulated crash while parsing")
        return real_parse(path, **kw)

    monkeypatch.setattr(ingest_mod, "parse_pdf", crashing_parse)
    store, report, _ = run_ingest([str(corpus)], str(tmp_path / "store"), quiet=True)
    assert list(report.failed_runs) == [next(r["doc_id"] for r in store.read_manifest() if r["path"].endswith("b.pdf"))]
    assert "simulated crash" in next(iter(report.failed_runs.values()))
    rows = {r["doc_id"]: r for r in store.read_catalog()}
    # the old paper is untouched, the healthy new one is in, the crashed one is pending, not lost
    assert rows[before[0]["doc_id"]]["status"] == "ok"
    assert pq.read_table(store.pages_path(before[0]["doc_id"])).to_pylist() == pages_before
    statuses = sorted(r["status"] for r in rows.values())
    assert statuses == ["ok", "ok", "pending"]

    # the next refresh, with the crash gone, picks up exactly the paper that failed
    monkeypatch.setattr(ingest_mod, "parse_pdf", real_parse)
    store, report, _ = run_ingest([str(corpus)], str(tmp_path / "store"), quiet=True)
    assert len(report.plan.run) == 1 and not report.failed_runs
    assert sorted(r["status"] for r in store.read_catalog()) == ["ok", "ok", "ok"]


def test_shared_pdfs_all_readable(shared_pdfs, tmp_path):
    """Every one of the real fixture PDFs (parser-failure fixtures included) parses with text."""
    for path in shared_pdfs:
        parsed = parse_pdf(path)
        assert parsed.status == "ok", (path.name, parsed.error)
        assert parsed.n_pages == len(parsed.pages) > 0
        assert all(p["page_no"] == i + 1 for i, p in enumerate(parsed.pages))
        assert parsed.n_chars > 1000 * parsed.n_pages / 4
        assert parsed.title, path.name


LIGATURES = "".join(chr(c) for c in range(0xFB00, 0xFB07))  # ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ


def test_ligatures_are_expanded_so_words_can_be_found(shared_data):
    """LaTeX sets "ff"/"fi"/"fl" as one glyph; the pages (and so the passages, BM25 and MiniLM)
    must hold the plain letters, or "offensive" never matches "oﬀensive"."""
    import pymupdf

    path = shared_data / "qasper_pdf" / "pdfs" / "2001.03131.pdf"
    with pymupdf.open(path) as doc:  # the PDF really uses ligature glyphs (else this test proves nothing)
        assert any(ch in doc[0].get_text() for ch in LIGATURES)
    parsed = parse_pdf(path)
    assert parsed.status == "ok"
    text = " ".join(p["text"] for p in parsed.pages)
    assert not any(ch in text for ch in LIGATURES)
    assert "Offensive Language Detection" in parsed.pages[0]["text"]
    assert not any(ch in line["text"] for p in parsed.pages for line in p["lines"] for ch in LIGATURES)


def test_papers_parsed_by_an_older_parser_are_parsed_again_on_the_next_refresh(tmp_path):
    """A parser fix (pdf-2 expands ligatures) reaches papers ingested before it: the next
    `vectree ingest` re-runs exactly the papers whose record names another parser version."""
    import json

    from vectree.retrieval.pdf import PARSER_VERSION

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfmaker.write_paper(corpus / "glacier.pdf", "Glacier Melt Dynamics in Alpine Basins", pdfmaker.GOOD_SECTIONS)
    pdfmaker.write_paper(corpus / "soil.pdf", "Soil Moisture Retrieval from Radar", pdfmaker.GOOD_SECTIONS)
    root = str(tmp_path / "store")
    store, report, _ = run_ingest([str(corpus)], root, quiet=True)
    assert len(report.plan.run) == 2 and not report.plan.outdated
    old, kept = sorted(r["doc_id"] for r in store.read_catalog())
    record = store.read_record(old)
    store.record_path(old).write_text(json.dumps({**record, "parser_version": "pdf-0"}))
    _, again, _ = run_ingest([str(corpus)], root, quiet=True)
    assert again.plan.outdated == [old] and again.plan.run == [old]
    assert store.read_record(old)["parser_version"] == PARSER_VERSION
    res = CliRunner().invoke(main, ["ingest", str(corpus), "--store", root])
    assert res.exit_code == 0, res.output
    assert "0 papers processed" in res.output and "re-parsed" not in res.output
