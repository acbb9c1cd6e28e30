"""The store contract without the pipeline: layout version, who joins store paths, stable ids,
symlinks, damaged PDFs, file modes, the writer lock, published snapshots and views."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests import pdfmaker
from vectree.retrieval.corpus import scan
from vectree.retrieval.pdf import parse_pdf
from vectree.retrieval.store import (
    STORE_LAYOUT_VERSION,
    SnapshotNotFoundError,
    Store,
    StoreBusyError,
    StoreError,
    StoreLayoutError,
    atomic_write_bytes,
)

REPO = Path(__file__).resolve().parents[1]


def _paper(store: Store, doc_id: str, text: str) -> None:
    store.write_record(doc_id, {"doc_id": doc_id, "status": "ok", "n_pages": 1})
    store.write_pages(doc_id, [{"page_no": 1, "width": 1.0, "height": 1.0, "text": text, "lines": []}])


def _row(doc_id: str, status: str = "ok") -> dict:
    return {"doc_id": doc_id, "slug": doc_id, "title": doc_id, "authors": [], "abstract": "", "n_pages": 1,
            "n_chars": 10, "sha256": "0" * 64, "source_path": f"/x/{doc_id}.pdf", "source_paths": [],
            "status": status, "error": None, "parsed_at": None}


# ---- layout version ----------------------------------------------------------------------------
def test_layout_version_is_written_and_checked_on_open(tmp_path):
    store = Store(tmp_path / "s")
    store.write_manifest([])
    assert json.loads(store.layout_path.read_text()) == {"layout": STORE_LAYOUT_VERSION}
    Store(store.root)  # the same version opens

    store.layout_path.write_text(json.dumps({"layout": STORE_LAYOUT_VERSION + 1}))
    with pytest.raises(StoreLayoutError, match=rf"has layout {STORE_LAYOUT_VERSION + 1}, this vectree reads "
                                               rf"layout {STORE_LAYOUT_VERSION}: upgrade vectree"):
        Store(store.root)

    store.layout_path.unlink()  # a store from before layouts were recorded: it has a catalog
    (store.root / "docs.parquet").write_bytes(b"")
    with pytest.raises(StoreLayoutError, match=rf"has layout 1, this vectree writes layout {STORE_LAYOUT_VERSION}"
                                               r".*run `vectree ingest PATH`"):
        Store(store.root)
    # the CLI says it in one line and exits non-zero, no traceback
    result = CliRunner().invoke(main_cli(), ["status", "--store", str(store.root)])
    assert result.exit_code == 1
    assert "has layout 1" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    # a new, empty folder is fine
    Store(tmp_path / "new")


def main_cli():
    from vectree.cli import main

    return main


def test_no_module_outside_the_store_joins_store_paths():
    """Every path under the store comes from vectree/retrieval/store.py (issue 15, item 3)."""
    pattern = re.compile(r'/\s*"(passages|papers|pages|pdfs|trees|sprout|models|snapshots|index|runs|'
                         r'training_set|cache|CURRENT)"|"sources\.json"|"docs\.parquet"|"manifest\.parquet"')
    allowed = {REPO / "vectree/retrieval/store.py",
               REPO / "vectree/retrieval/search/publish.py"}  # the same layout for a bare index folder
    offenders = []
    for path in sorted((REPO / "vectree").rglob("*.py")):
        if path in allowed or "evaluation" in path.parts:  # evaluation builds its own work folders
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line) and not line.lstrip().startswith("#"):
                offenders.append(f"{path.relative_to(REPO)}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# ---- stable ids ----------------------------------------------------------------------------------
def test_a_copy_whose_name_sorts_first_does_not_rename_the_paper(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pdfmaker.write_paper(corpus / "test1.pdf", "Glacier Melt Dynamics in Alpine Basins", pdfmaker.GOOD_SECTIONS)
    (first,) = scan([corpus])
    assert first.doc_id.startswith("test1-")
    shutil.copy(corpus / "test1.pdf", corpus / "dup-of-test1.pdf")  # sorts before "test1.pdf"
    known = {first.sha256: first.doc_id}
    files = scan([corpus], known=known)
    assert {f.doc_id for f in files} == {first.doc_id}  # one paper, same id
    primary = [f for f in files if f.duplicate_of is None]
    assert [Path(f.path).name for f in primary] == ["test1.pdf"]
    assert [Path(f.path).name for f in files if f.duplicate_of] == ["dup-of-test1.pdf"]
    # the original name leaves: the bytes are still here, so the id still is
    (corpus / "test1.pdf").unlink()
    (only,) = scan([corpus], known=known)
    assert only.doc_id == first.doc_id and Path(only.path).name == "dup-of-test1.pdf"


# ---- corpus scans and bad files --------------------------------------------------------------------
def test_symlinks_out_of_the_corpus_are_not_followed_and_bytes_never_leak(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secrets.pdf"
    secret.write_text("TOPSECRET-API-KEY=abc123 not a pdf at all")
    pdfmaker.write_paper(outside / "elsewhere.pdf", "Soil Moisture Retrieval from Radar", pdfmaker.GOOD_SECTIONS)
    pdfmaker.write_paper(corpus / "real.pdf", "Glacier Melt Dynamics in Alpine Basins", pdfmaker.GOOD_SECTIONS)
    (corpus / "leak.pdf").symlink_to(secret)
    (corpus / "linked-dir").symlink_to(outside, target_is_directory=True)
    (corpus / "sub" / "inside-link.pdf").symlink_to(corpus / "real.pdf")
    skipped: list[str] = []
    files = scan([corpus], skipped=skipped)
    assert {Path(f.path).name for f in files} == {"real.pdf"}  # the inside link is the same file
    assert [Path(p).name for p in skipped] == ["leak.pdf"]
    # a file that is not a PDF is reported without its bytes
    parsed = parse_pdf(secret)
    assert parsed.status == "failed" and "not a PDF" in parsed.error
    assert "TOPSECRET" not in parsed.error and "abc123" not in parsed.error


def test_truncated_pdf_is_reported_as_truncated(tmp_path):
    full = pdfmaker.write_paper(tmp_path / "full.pdf", "Glacier Melt Dynamics in Alpine Basins",
                                pdfmaker.GOOD_SECTIONS, pages=3)
    data = full.read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: len(data) // 10])
    parsed = parse_pdf(cut)
    assert parsed.status == "failed"
    assert parsed.error.startswith("truncated or damaged PDF"), parsed.error
    assert str(tmp_path) not in parsed.error  # no paths in reasons
    # a file cut late is repaired by PyMuPDF: it parses, with a warning that says so
    cut.write_bytes(data[: len(data) // 2])
    repaired = parse_pdf(cut)
    assert any("truncated or damaged PDF" in w for w in repaired.warnings)
    # a well-formed file with an empty page tree is still "no pages"
    assert parse_pdf(pdfmaker.write_zero_pages(tmp_path / "zero.pdf")).error == "PDF has no pages"


# ---- file modes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_store_files_honour_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        store = Store(tmp_path / "s")
        _paper(store, "a-1", "text")
        store.write_catalog([_row("a-1")])
        atomic_write_bytes(tmp_path / "s" / "x.bin", b"x")
    finally:
        os.umask(old)
    for path in (store.record_path("a-1"), store.pages_path("a-1"), store.catalog_path, tmp_path / "s" / "x.bin"):
        assert path.stat().st_mode & 0o777 == mode, (path.name, oct(path.stat().st_mode))


# ---- one writer ---------------------------------------------------------------------------------------
def test_writer_lock_names_the_holder(tmp_path):
    store = Store(tmp_path / "s")
    with store.writer_lock():
        with pytest.raises(StoreBusyError, match=rf"^another refresh is running, pid {os.getpid()}$"):
            with Store(store.root).writer_lock():
                pass
    with store.writer_lock():  # released: the next writer gets it
        pass


# ---- snapshots and views ----------------------------------------------------------------------------------
def test_a_view_keeps_reading_its_snapshot_while_the_working_store_changes(tmp_path):
    store = Store(tmp_path / "s")
    assert store.view() is store  # nothing published: the working store reads itself
    _paper(store, "a-1", "first words")
    s1 = store.publish_snapshot([_row("a-1")], index_snapshot=None, sprout_model=None)
    v1 = store.view()
    assert v1.snapshot_id == s1 == store.current_snapshot_id()

    # the pipeline rewrites paper a, adds b and drops a from the catalog; v1 is untouched
    _paper(store, "a-1", "second words")
    _paper(store, "b-2", "other paper")
    s2 = store.publish_snapshot([_row("b-2")], index_snapshot=None, sprout_model=None)
    assert store.current_snapshot_id() == s2 != s1
    assert v1.read_page_texts("a-1") == ["first words"]
    assert [r["doc_id"] for r in v1.read_catalog()] == ["a-1"]
    assert [r["doc_id"] for r in store.view().read_catalog()] == ["b-2"]
    with pytest.raises(StoreError):
        store.view().read_pages("a-1")  # not in the live snapshot

    # a reader resolves per call; pinning holds one snapshot for a whole block
    reader = store.reader()
    assert [r["doc_id"] for r in reader.read_catalog()] == ["b-2"]
    with store.pinned(s1):
        assert reader.read_page_texts("a-1") == ["first words"]
        assert reader.snapshot_id == s1
    assert reader.snapshot_id == s2
    with pytest.raises(SnapshotNotFoundError):
        store.view("20000101T000000000000Z-abcdef")
    with pytest.raises(SnapshotNotFoundError):
        store.view("../../etc")
    with pytest.raises(StoreError, match="read-only"):
        v1.write_catalog([])

    # old snapshots beyond the kept ones are collected; the live one never
    for _ in range(4):
        store.publish_snapshot([_row("b-2")], index_snapshot=None, sprout_model=None)
    assert len(store.snapshot_ids()) == 3 and store.current_snapshot_id() in store.snapshot_ids()


# ---- bounded memory ------------------------------------------------------------------------------------
def test_ingest_streams_pages_to_the_store(tmp_path):
    """Pages go to Parquet as they are extracted; only the first two stay in memory (title, abstract)."""
    from vectree.retrieval.ingest import ingest_paper

    pdf = pdfmaker.write_paper(tmp_path / "long.pdf", "Glacier Melt Dynamics in Alpine Basins",
                               pdfmaker.GOOD_SECTIONS, pages=7)
    whole = parse_pdf(pdf)
    seen = []
    streamed = parse_pdf(pdf, on_page=seen.append)
    assert len(whole.pages) == len(seen) == 7 and len(streamed.pages) == 2
    assert streamed.n_chars == whole.n_chars and streamed.title == whole.title
    assert streamed.abstract == whole.abstract and streamed.status == whole.status == "ok"

    store = Store(tmp_path / "s")
    (f,) = scan([pdf])
    record = ingest_paper(store, [f])
    assert record["n_pages"] == 7 and record["n_chars"] == whole.n_chars
    assert store.read_pages(f.doc_id) == whole.pages
    import pyarrow.parquet as pq

    assert pq.ParquetFile(store.pages_path(f.doc_id)).num_row_groups >= 1
    # a file that fails to parse writes no pages and keeps the ones a previous parse wrote
    before = store.pages_path(f.doc_id).read_bytes()
    pdf.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF")
    (g,) = scan([pdf], known={})
    record = ingest_paper(store, [dataclasses.replace(g, doc_id=f.doc_id)])
    assert record["status"] == "failed" and store.pages_path(f.doc_id).read_bytes() == before
    assert not [p for p in store.pages_path(f.doc_id).parent.iterdir() if p.name.endswith(".tmp")]
