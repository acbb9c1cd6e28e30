"""The demo corpus: eight short, original papers on lithium-ion battery degradation.

The papers are written for this project (fictional authors, institutions, data and
references) and typeset with :mod:`vectree.demo.render`, so the true location of every
paragraph and heading is known exactly.  That makes the corpus the ground truth for
testing ingestion, heading detection, retrieval and page-cited answers offline.

Public API
----------
* :data:`DEMO_PAPERS` -- the eight :class:`~vectree.demo.model.Paper` objects, in order,
  each with a stable ``slug``; :data:`PAPERS_BY_SLUG` maps slug to paper;
* :data:`OUTLINE_SLUGS` -- papers 1, 3, 5 and 7, rendered with a PDF outline (the others
  have none, so heading detection must fall back to fonts);
* :func:`build_demo_corpus` -- write ``<out_dir>/<slug>.pdf`` for every paper;
* :data:`DEMO_QUESTIONS` -- at least twelve questions with verbatim short answers and
  the heading of the section holding each answer;
* :func:`expected_pages` -- the page(s) holding a question's answer, computed from the
  render (never hard-coded);
* :func:`demo_headings` -- the true ``(level, printed heading, page)`` list of a paper;
* :func:`render_demo_paper` -- ``(pdf bytes, RenderedPaper)`` of one paper, cached.

Rendering is deterministic: the same paper gives the same bytes in every process (fixed
metadata dates, fixed file id), so content hashes of the demo PDFs are stable.

Example::

    from pathlib import Path
    from vectree.demo import DEMO_QUESTIONS, build_demo_corpus, expected_pages
    paths = build_demo_corpus(Path("corpus"))
    q = DEMO_QUESTIONS[0]
    q["question"], q["answer"], expected_pages(q)   # (..., '78.4%', [3])
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pymupdf

from vectree.retrieval.store import atomic_write_bytes

from .model import Paper, RenderedPaper, normalize_text
from .papers import DEMO_PAPERS, DEMO_QUESTIONS, OUTLINE_SLUGS, PAPERS_BY_SLUG
from .render import render_paper_bytes

__all__ = [
    "DEMO_PAPERS",
    "DEMO_QUESTIONS",
    "OUTLINE_SLUGS",
    "PAPERS_BY_SLUG",
    "DEMO_RENDER_OPTIONS",
    "build_demo_corpus",
    "demo_headings",
    "demo_paper",
    "demo_slugs",
    "expected_pages",
    "render_demo_paper",
]

#: Render options shared by every demo paper (``outline`` is set per paper).
DEMO_RENDER_OPTIONS: dict = {"numbered": True, "page_size": "letter", "font_size": 10.5}


def demo_slugs() -> list[str]:
    """Slugs of the demo papers, in corpus order."""
    return [p.slug for p in DEMO_PAPERS]


def demo_paper(slug: str) -> Paper:
    """The demo paper with this slug (KeyError if unknown)."""
    return PAPERS_BY_SLUG[slug]


def _render(slug: str) -> tuple[bytes, RenderedPaper]:
    paper = demo_paper(slug)
    return render_paper_bytes(paper, outline=slug in OUTLINE_SLUGS, **DEMO_RENDER_OPTIONS)


@lru_cache(maxsize=None)
def render_demo_paper(slug: str) -> tuple[bytes, RenderedPaper]:
    """``(pdf bytes, RenderedPaper)`` for one demo paper, exactly as :func:`build_demo_corpus`
    writes it; cached per process (treat the result as read-only)."""
    return _render(slug)


def build_demo_corpus(out_dir: Path | str) -> list[Path]:
    """Render every demo paper to ``out_dir/<slug>.pdf`` and return the paths in corpus order.

    Papers in :data:`OUTLINE_SLUGS` get an embedded outline.  The output is byte-for-byte
    reproducible; a file that already holds the right bytes is left untouched (its
    modification time does not change), others are written atomically.  Each call
    renders afresh (it does not use the :func:`render_demo_paper` cache).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for paper in DEMO_PAPERS:
        data, _ = _render(paper.slug)
        path = out / f"{paper.slug}.pdf"
        if not (path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data):
            atomic_write_bytes(path, data)
        paths.append(path)
    return paths


def demo_headings(slug: str) -> list[tuple[int, str, int]]:
    """True ``(level, printed heading text, 1-based page)`` of every heading of a paper.

    Includes "Abstract" and "References" (level 1) besides the numbered sections
    ("1 Introduction", level 1) and subsections ("2.1 ...", level 2); the paper title is
    not a heading.  For outline papers this equals the embedded outline.
    """
    _, rp = render_demo_paper(slug)
    return [(h.level, h.text, h.page) for h in rp.headings]


def _question(question) -> dict:
    if isinstance(question, dict):
        return question
    for q in DEMO_QUESTIONS:
        if question in (q["question"], q.get("id")):
            return q
    raise KeyError(question)


def expected_pages(question) -> list[int]:
    """The 1-based page(s) of a question's paper that hold its answer, from the render.

    ``question`` is a :data:`DEMO_QUESTIONS` entry, its ``id`` or its question text.  The
    answer is located in the paragraphs under the question's heading (via the
    renderer's paragraph-to-page map); when such a paragraph spans a page break, only
    the pages whose text contains the answer are kept.
    """
    q = _question(question)
    data, rp = render_demo_paper(q["slug"])
    pids = [pid for pid in rp.find(q["answer"]) if rp.heading_of(pid).text == q["heading"]]
    if not pids:
        raise LookupError(f"answer {q['answer']!r} not found under heading {q['heading']!r} in {q['slug']}")
    pages = sorted({p for pid in pids for p in rp.pages_of(pid)})
    if len(pages) == 1:
        return pages
    key = normalize_text(q["answer"])
    with pymupdf.open("pdf", data) as doc:
        hits = [p for p in pages if key in normalize_text(doc[p - 1].get_text())]
    return hits or pages
