"""Small real PDFs for tests, made with PyMuPDF (good papers and every kind of bad input)."""

from __future__ import annotations

from pathlib import Path

import pymupdf


def write_paper(path: Path, title: str, sections: list[tuple[str, str]], *, pages: int | None = None) -> Path:
    """A born-digital paper: a bold title, an abstract, numbered sections of body text."""
    doc = pymupdf.open()
    page = doc.new_page()
    y = 72
    page.insert_text((72, y), title, fontsize=16, fontname="hebo")
    y += 30
    page.insert_text((72, y), "Abstract", fontsize=11, fontname="hebo")
    y += 16
    page.insert_textbox(pymupdf.Rect(72, y, 540, y + 60), f"We study {title.lower()} in detail.", fontsize=10)
    y += 70
    for heading, body in sections:
        if y > 650:
            page = doc.new_page()
            y = 72
        page.insert_text((72, y), heading, fontsize=12, fontname="hebo")
        y += 16
        page.insert_textbox(pymupdf.Rect(72, y, 540, y + 120), body, fontsize=10)
        y += 130
    while pages and doc.page_count < pages:
        p = doc.new_page()
        p.insert_text((72, 72), f"Appendix page {doc.page_count}", fontsize=10)
    doc.set_metadata({"title": title, "author": "A. Tester, B. Example"})
    doc.save(path, deflate=True)
    return path


def write_encrypted(path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret results", fontsize=12)
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user-secret", owner_pw="owner-secret")
    return path


def write_scanned(path: Path) -> Path:
    """A page that is only an image of text: no text layer, as a scanner makes it."""
    src = pymupdf.open()
    src.new_page().insert_text((72, 72), "This text exists only as pixels", fontsize=14)
    pix = src[0].get_pixmap(dpi=50)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(page.rect, pixmap=pix)
    doc.save(path)
    return path


def write_zero_pages(path: Path) -> Path:
    """A syntactically valid PDF whose page tree is empty (PyMuPDF refuses to save one)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [] /Count 0 >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def write_corrupt(path: Path) -> Path:
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF")
    return path


def write_not_pdf(path: Path) -> Path:
    path.write_text("<html><body>This is a web page saved with a .pdf name.</body></html>")
    return path


GOOD_SECTIONS = [
    ("1 Introduction", "Glacier melt water feeds alpine rivers. We measure discharge at twelve gauges."),
    ("2 Methods", "Discharge was recorded every fifteen minutes with pressure transducers."),
    ("3 Results", "Peak discharge arrived four hours after peak air temperature."),
]


def private_store_copy(base, tmp_path):
    """A private copy of the store ``base/store`` and its corpus ``base/corpus`` under ``tmp_path``,
    the copy's source folder pointing at the copied corpus (same bytes: same ids, nothing to
    reparse): ``(store, corpus)``."""
    import shutil

    from vectree.retrieval.store import Store

    corpus = tmp_path / "corpus"
    shutil.copytree(base / "corpus", corpus)
    shutil.copytree(base / "store", tmp_path / "store", symlinks=True)
    store = Store(tmp_path / "store")
    store.sources_path.write_text(f'["{corpus}"]')
    return store, corpus
