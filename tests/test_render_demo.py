"""Tests for the PDF renderer (vectree.demo.render) and the demo corpus (vectree.demo).

Everything runs against real PyMuPDF output written under pytest's tmp_path.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pymupdf
import pytest

from vectree.demo import (
    DEMO_PAPERS,
    DEMO_QUESTIONS,
    OUTLINE_SLUGS,
    build_demo_corpus,
    demo_headings,
    expected_pages,
    render_demo_paper,
)
from vectree.demo.model import Figure, Paper, Section, Series, Table, normalize_text
from vectree.demo.render import render_paper, render_paper_bytes

ROOT = Path(__file__).resolve().parents[1]
SLUGS = [p.slug for p in DEMO_PAPERS]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("demo")
    paths = build_demo_corpus(out)
    return {p.stem: p for p in paths}


@pytest.fixture(scope="module")
def docs(corpus):
    opened = {slug: pymupdf.open(path) for slug, path in corpus.items()}
    yield opened
    for d in opened.values():
        d.close()


def _page_keys(doc) -> list[str]:
    return [normalize_text(page.get_text()) for page in doc]


def _body_keys(doc) -> list[str]:
    """Normalised page text without the page-number footer."""
    return [normalize_text(page.get_text(clip=page.rect + (0, 0, 0, -60))) for page in doc]


def _lines(page) -> list[tuple[str, float, bool]]:
    """(text, max span size, all spans bold) for every text line of a page."""
    out = []
    for block in page.get_text("dict")["blocks"]:
        for line in block.get("lines", []):
            spans = [s for s in line["spans"] if s["text"].strip()]
            if not spans:
                continue
            text = "".join(s["text"] for s in line["spans"]).strip()
            bold = all(s["flags"] & 16 or "Bold" in s["font"] for s in spans)
            out.append((text, max(s["size"] for s in spans), bold))
    return out


# --------------------------------------------------------------------------- corpus shape


def test_corpus_has_eight_distinct_papers(corpus):
    assert len(DEMO_PAPERS) == 8
    assert len(set(SLUGS)) == 8
    assert sorted(corpus) == sorted(SLUGS)
    assert [p.name for p in corpus.values()] == [f"{s}.pdf" for s in SLUGS]
    assert OUTLINE_SLUGS == {SLUGS[0], SLUGS[2], SLUGS[4], SLUGS[6]}


@pytest.mark.parametrize("paper", DEMO_PAPERS, ids=SLUGS)
def test_paper_structure(paper):
    assert 2 <= len(paper.authors) <= 4
    assert paper.affiliation
    assert 120 <= len(paper.abstract.split()) <= 200
    assert 5 <= len(paper.sections) <= 7
    assert any(s.subsections for s in paper.sections)
    assert 5 <= len(paper.references) <= 10
    sections = [s for _, _, s in paper.iter_sections()]
    assert sum(len(s.figures) for s in sections) >= 1
    assert sum(len(s.tables) for s in sections) >= 1
    words = len(paper.abstract.split()) + sum(len(p.split()) for s in sections for p in s.paragraphs)
    assert 1500 <= words <= 3500


@pytest.mark.parametrize("slug", SLUGS)
def test_page_counts(docs, slug):
    _, rp = render_demo_paper(slug)
    assert 4 <= docs[slug].page_count <= 10
    assert rp.n_pages == docs[slug].page_count


def test_papers_are_distinct_in_vocabulary():
    """Each paper's title words are far more frequent in its own text than in the others."""
    texts = {p.slug: normalize_text(" ".join(render_demo_paper(p.slug)[1].paragraph_text.values())).lower() for p in DEMO_PAPERS}
    markers = {
        SLUGS[0]: "calendar", SLUGS[1]: "microcalorimet", SLUGS[2]: "relax-dv", SLUGS[3]: "relaxationtimes",
        SLUGS[4]: "helix-212", SLUGS[5]: "icnet", SLUGS[6]: "step-down-4", SLUGS[7]: "retired",
    }
    for slug, marker in markers.items():
        own = texts[slug].count(marker)
        assert own >= 3, (slug, marker)
        assert all(texts[o].count(marker) < own / 2 for o in texts if o != slug), (slug, marker)


# --------------------------------------------------------------------------- determinism


def test_build_is_byte_identical(tmp_path, corpus):
    a = build_demo_corpus(tmp_path / "a")
    b = build_demo_corpus(tmp_path / "b")
    for pa, pb in zip(a, b):
        assert pa.read_bytes() == pb.read_bytes(), pa.name
        assert pa.read_bytes() == corpus[pa.stem].read_bytes(), pa.name
    # rebuilding in place leaves identical files untouched
    mtimes = [p.stat().st_mtime_ns for p in a]
    os.utime(a[0], ns=(1_000_000_000, 1_000_000_000))
    again = build_demo_corpus(tmp_path / "a")
    assert [p.stat().st_mtime_ns for p in again][1:] == mtimes[1:]
    assert again[0].stat().st_mtime_ns == 1_000_000_000
    assert not [p for p in (tmp_path / "a").iterdir() if p.suffix != ".pdf"]


def test_build_is_identical_across_processes(tmp_path, corpus):
    code = (
        "import sys, hashlib; from vectree.demo import build_demo_corpus\n"
        "for p in build_demo_corpus(sys.argv[1]): print(p.name, hashlib.sha256(p.read_bytes()).hexdigest())\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "x")], cwd=ROOT, capture_output=True, text=True,
        check=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    other = dict(line.split() for line in res.stdout.strip().splitlines())
    mine = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in corpus.values()}
    assert other == mine


@pytest.mark.parametrize("slug", SLUGS)
def test_metadata(docs, slug):
    paper = next(p for p in DEMO_PAPERS if p.slug == slug)
    meta = docs[slug].metadata
    assert meta["title"] == paper.title
    assert meta["author"] == ", ".join(paper.authors)
    assert meta["creationDate"] == meta["modDate"] == "D:20240101000000Z"


# --------------------------------------------------------------------------- page map


@pytest.mark.parametrize("slug", SLUGS)
def test_paragraph_pages_are_exact(docs, slug):
    _, rp = render_demo_paper(slug)
    keys = _page_keys(docs[slug])
    body = _body_keys(docs[slug])
    assert "abstract/p0" in rp.paragraph_pages and "references/p0" in rp.paragraph_pages
    for pid, pages in rp.paragraph_pages.items():
        assert pages == list(range(pages[0], pages[-1] + 1)) and 1 <= pages[0] <= rp.n_pages, pid
        text = normalize_text(rp.paragraph_text[pid])
        assert text[:40] in keys[pages[0] - 1], (pid, pages)
        # a paragraph split by a page break ends on its last page (a short tail, as the
        # last 40 characters may themselves straddle the break) ...
        assert text[-12:] in keys[pages[-1] - 1], (pid, pages)
        # ... and the recorded pages hold all of it, so it does not run on any further
        assert text in "".join(body[p - 1] for p in pages), (pid, pages)


def test_some_paragraphs_span_page_breaks():
    spanning = [(p.slug, pid) for p in DEMO_PAPERS for pid, pages in render_demo_paper(p.slug)[1].paragraph_pages.items() if len(pages) > 1]
    assert len(spanning) >= 4


def test_no_ligature_glyphs_in_text(docs):
    for doc in docs.values():
        for page in doc:
            text = page.get_text()
            assert not any(ch in text for ch in "\ufb00\ufb01\ufb02\ufb03\ufb04"), page.number
    # words that would carry ligatures come out letter by letter
    all_text = " ".join(page.get_text() for doc in docs.values() for page in doc)
    for word in ("coefficient", "first", "flow", "efficiency"):
        assert word in all_text


# --------------------------------------------------------------------------- headings


@pytest.mark.parametrize("slug", SLUGS)
def test_headings_are_own_bold_lines_on_their_page(docs, slug):
    heads = demo_headings(slug)
    assert heads[0] == (1, "Abstract", 1)
    assert heads[-1][:2] == (1, "References")
    assert any(level == 2 for level, _, _ in heads)
    top = [t for lvl, t, _ in heads if lvl == 1][1:-1]
    assert [t.split(" ", 1)[0] for t in top] == [str(i) for i in range(1, len(top) + 1)]
    for lvl, t, _ in heads:
        if lvl == 2:
            assert t.split(" ", 1)[0].count(".") == 1, t
    doc = docs[slug]
    body = 10.5
    for level, text, page in heads:
        lines = _lines(doc[page - 1])
        match = [ln for ln in lines if ln[0] == text]
        assert match, (text, page)
        _, size, bold = match[0]
        assert bold and size >= body - 0.01, (text, size, bold)
        if level == 1 and text != "Abstract":
            assert size > body + 1, text
        # headings are not found on other pages as lines of their own
        others = [p for p in range(doc.page_count) if p != page - 1 and any(ln[0] == text for ln in _lines(doc[p]))]
        assert not others, (text, others)
    pages = [p for _, _, p in heads]
    assert pages == sorted(pages)


@pytest.mark.parametrize("slug", SLUGS)
def test_outline_only_for_outline_papers(docs, slug):
    toc = docs[slug].get_toc()
    if slug in OUTLINE_SLUGS:
        assert toc == [[lvl, text, page] for lvl, text, page in demo_headings(slug)]
    else:
        assert toc == []


def test_heading_numbering_matches_sections():
    _, rp = render_demo_paper(SLUGS[0])
    ids = [h.id for h in rp.headings]
    assert ids[:4] == ["abstract", "s1", "s2", "s2.1"]
    assert rp.heading("s2.1").text == "2.1 Cells and Storage Matrix"
    assert rp.heading_of("s2.1/p0").text == "2.1 Cells and Storage Matrix"
    assert rp.paragraph_section["abstract/p0"] == "abstract"


# --------------------------------------------------------------------------- floats


@pytest.mark.parametrize("slug", SLUGS)
def test_figures_and_tables_are_printed(docs, slug):
    _, rp = render_demo_paper(slug)
    doc = docs[slug]
    assert rp.figures and rp.tables
    for n, fig in enumerate(rp.figures, 1):
        page = doc[fig.page - 1]
        assert fig.label == f"Figure {n}"
        assert normalize_text(f"Figure {n}: {fig.caption}") in normalize_text(page.get_text())
        assert page.get_images(), (slug, fig.label)
        # the image sits above its caption on the same page
        img_rects = [r for xref, *_ in page.get_images() for r in page.get_image_rects(xref)]
        cap = page.search_for(f"Figure {n}:")[0]
        assert any(r.y1 <= cap.y0 + 1 and r.width > 100 for r in img_rects)
    for n, tab in enumerate(rp.tables, 1):
        page = doc[tab.page - 1]
        assert tab.label == f"Table {n}"
        assert normalize_text(f"Table {n}: {tab.caption}") in normalize_text(page.get_text())
        rules = [d for d in page.get_drawings() if d["rect"].height < 2 and d["rect"].width > 100]
        assert len(rules) >= 3, (slug, tab.label)  # top, header and bottom rules


def test_table_cells_are_extractable(docs):
    text = docs[SLUGS[4]][1].get_text() + docs[SLUGS[4]][2].get_text()
    for cell in ("TerraCell-48", "DriveCycle-80", "HELIX-212 (this work)"):
        assert cell in text


# --------------------------------------------------------------------------- questions


def test_questions_cover_all_papers():
    assert len(DEMO_QUESTIONS) >= 12
    assert {q["slug"] for q in DEMO_QUESTIONS} == set(SLUGS)
    assert len({q["id"] for q in DEMO_QUESTIONS}) == len(DEMO_QUESTIONS)
    for q in DEMO_QUESTIONS:
        assert {"question", "slug", "answer", "heading"} <= set(q)


@pytest.mark.parametrize("q", DEMO_QUESTIONS, ids=[q["id"] for q in DEMO_QUESTIONS])
def test_question_answer_on_expected_pages(docs, q):
    _, rp = render_demo_paper(q["slug"])
    pids = rp.find(q["answer"])
    assert len(pids) == 1, (q["answer"], pids)  # a single clear location
    assert rp.heading_of(pids[0]).text == q["heading"]
    assert q["heading"] in [t for _, t, _ in demo_headings(q["slug"])]
    pages = expected_pages(q)
    assert pages and set(pages) <= set(rp.pages_of(pids[0]))
    keys = _page_keys(docs[q["slug"]])
    for p in pages:
        assert normalize_text(q["answer"]) in keys[p - 1], (q["id"], p)
    assert expected_pages(q["id"]) == pages == expected_pages(q["question"])


# --------------------------------------------------------------------------- renderer API


def _qasper_like(n_sections: int = 12) -> Paper:
    para = (
        "We evaluate the retrieval model on question answering over scientific articles, where "
        "each question is written by a reader of the abstract and answered from the full text. "
    )
    sections = [
        Section(
            f"Experiments on Split {i}",
            [f"Paragraph {i}.{k} opens here. " + para * (3 + (i + k) % 9) for k in range(4)],
            subsections=[Section("Results", [f"Result paragraph {i} begins. " + para * 4])] if i % 3 == 0 else [],
        )
        for i in range(n_sections)
    ]
    sections.append(Section("One Very Long Paragraph", ["Long paragraph opens. " + para * 60]))
    return Paper(title="A QASPER-like Paper", authors=["A. Reader"], abstract="Short abstract. " * 10, sections=sections)


def test_render_unnumbered_long_paragraphs(tmp_path):
    paper = _qasper_like()
    rp = render_paper(paper, tmp_path / "sub" / "q.pdf", numbered=False)
    assert rp.path == tmp_path / "sub" / "q.pdf" and rp.path.is_file()
    doc = pymupdf.open(rp.path)
    assert rp.n_pages == doc.page_count >= 8
    assert doc.get_toc() == []
    keys = _page_keys(doc)
    body = _body_keys(doc)
    texts = [h.text for h in rp.headings]
    assert "Experiments on Split 3" in texts and "Results" in texts
    assert not any(t[0].isdigit() for t in texts)
    long_pid = f"s{len(paper.sections)}/p0"
    assert len(rp.pages_of(long_pid)) >= 2
    for pid, pages in rp.paragraph_pages.items():
        text = normalize_text(rp.paragraph_text[pid])
        assert text[:40] in keys[pages[0] - 1], pid
        assert text[-12:] in keys[pages[-1] - 1], pid
        assert text in "".join(body[p - 1] for p in pages), pid
        # the opening words are not on the page before
        if pages[0] > 1:
            assert text[:40] not in keys[pages[0] - 2], pid
    for h in rp.headings:
        assert any(ln[0] == h.text and ln[2] for ln in _lines(doc[h.page - 1])), h


def test_render_is_fast_and_deterministic():
    paper = _qasper_like(9)
    render_paper_bytes(paper)  # warm up fonts
    t = time.perf_counter()
    data, rp = render_paper_bytes(paper, outline=True)
    elapsed = time.perf_counter() - t
    assert 8 <= rp.n_pages <= 14
    assert elapsed < 2.5, elapsed  # typically ~0.2 s; generous for loaded CI machines
    assert render_paper_bytes(paper, outline=True)[0] == data


def test_render_options_and_floats(tmp_path):
    paper = Paper(
        title="Options",
        authors=["B. One", "C. Two"],
        abstract="First abstract paragraph.\n\nSecond abstract paragraph.",
        sections=[
            Section(
                "Method",
                ["Alpha paragraph.", "Beta paragraph."],
                number="7",
                figures=[Figure("A chart.", kind="bar", series=[Series("s", ["a", "b"], [1, 2])], after=1)],
                tables=[Table("A table.", ["x", "y"], [["1", "2"], ["3"]], after=0)],
                subsections=[Section("Detail", ["Gamma paragraph."])],
            )
        ],
        references=["R. Ef. A reference. 2020."],
    )
    rp = render_paper(paper, tmp_path / "o.pdf", outline=True, page_size="a4", font_size=12)
    doc = pymupdf.open(rp.path)
    assert doc[0].rect.width == pytest.approx(595, abs=1)
    assert list(rp.paragraph_pages) == ["abstract/p0", "abstract/p1", "s1/p0", "s1/p1", "s1.1/p0", "references/p0"]
    assert [h.text for h in rp.headings] == ["Abstract", "7 Method", "7.1 Detail", "References"]
    assert doc.get_toc() == rp.toc()
    text = doc[0].get_text()
    # floats are placed after the requested paragraph
    assert text.index("Table 1:") < text.index("Alpha paragraph") < text.index("Figure 1:") < text.index("Beta paragraph")
    assert "[1] R. Ef. A reference. 2020." in text
    assert doc[0].get_images()


def test_untitled_sections_and_odd_text():
    paper = Paper(
        title="Odd \x07 text",
        authors=["Zoë Ünal"],
        abstract="",
        sections=[
            Section("", ["Untitled lead paragraph with <b>markup-like</b> text & symbols ≈ ≤ 中文."]),
            Section("Real", ["Real paragraph."], subsections=[Section("", ["Child of an untitled subsection."])]),
        ],
    )
    data, rp = render_paper_bytes(paper, numbered=False)
    assert [h.text for h in rp.headings] == ["Real"]
    assert rp.paragraph_section == {"s1/p0": "", "s2/p0": "s2", "s2.1/p0": "s2"}
    assert rp.heading_of("s2.1/p0").text == "Real"
    text = pymupdf.open("pdf", data)[0].get_text()
    assert "<b>markup-like</b> text & symbols ≈ ≤ 中文." in text
    assert "\x07" not in text
