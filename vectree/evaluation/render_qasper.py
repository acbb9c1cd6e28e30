"""Render QASPER full-text papers to PDF with the project's renderer, so evidence pages are exact.

QASPER gives papers as text (title, abstract, sections of paragraphs, figure and table captions)
and marks each answer's evidence as whole paragraphs.  :func:`render_qasper_paper` typesets one
paper with :func:`vectree.demo.render.render_paper` (unnumbered headings, as QASPER prints them),
which reports the page(s) of every paragraph it placed; :meth:`RenderedQasper.evidence_pages`
then maps an evidence paragraph to its pages by exact (whitespace-insensitive) text match.

Layout decisions (stated once):

* ``section_name`` values like ``"Proposed Method ::: Polarity Function"`` are a path: each
  ``:::`` part is one level of nesting; consecutive sections that share a prefix share a parent.
* Figure and table captions (HF schema ``figures_and_tables.caption``) become the paragraphs of
  a final section "Figures and Tables", one caption per paragraph, because the source does not
  say where the floats stood.  Evidence ``"FLOAT SELECTED: Table 3: ..."`` maps to the page of
  that caption paragraph.
* An evidence string that is no paragraph and no caption (QASPER has a few, e.g. a section
  name) maps to the page of the heading with that text, else to no page; unmatched strings are
  counted by the loader.

Renders are cached: ``<out_dir>/<paper_id>.pdf`` plus ``<paper_id>.layout.json`` (paragraph
texts and pages), reused while the paper's content and the renderer's source are unchanged.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from vectree.demo import media, model, render
from vectree.demo.model import Paper, Section, normalize_text
from vectree.demo.render import render_paper

FLOAT_PREFIX = "FLOAT SELECTED:"
FLOATS_SECTION = "Figures and Tables"
_CACHE_FORMAT = 1


@dataclass
class QasperPaperText:
    """One QASPER paper as text: ``sections`` are ``(section_name, paragraphs)`` in order."""

    paper_id: str
    title: str
    abstract: str
    sections: list[tuple[str, list[str]]]
    captions: list[str]

    @classmethod
    def from_hf(cls, row: dict[str, Any], paper_id: str | None = None) -> "QasperPaperText":
        """From the Hugging Face schema (``full_text`` of parallel lists)."""
        ft = row["full_text"]
        names, paras = ft["section_name"], ft["paragraphs"]
        if len(names) != len(paras):
            raise ValueError(f"paper {row.get('id')}: {len(names)} section names for {len(paras)} paragraph lists")
        caps = (row.get("figures_and_tables") or {}).get("caption") or []
        return cls(paper_id or str(row["id"]), row.get("title") or "", row.get("abstract") or "",
                   [(str(n or ""), [str(p) for p in ps]) for n, ps in zip(names, paras)], [str(c) for c in caps])

    @classmethod
    def from_original(cls, paper_id: str, row: dict[str, Any]) -> "QasperPaperText":
        """From the original QASPER JSON (``full_text`` a list of ``{section_name, paragraphs}``)."""
        sections = [(str(s.get("section_name") or ""), [str(p) for p in s.get("paragraphs") or []])
                    for s in row["full_text"]]
        caps = [str(f.get("caption", "")) for f in row.get("figures_and_tables") or [] if isinstance(f, dict)]
        return cls(paper_id, row.get("title") or "", row.get("abstract") or "", sections, caps)

    def content_hash(self) -> str:
        blob = json.dumps([self.title, self.abstract, self.sections, self.captions], ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


def to_render_paper(paper: QasperPaperText):
    """The :class:`vectree.demo.model.Paper` for a QASPER paper (see the module doc for the rules)."""
    top: list[Section] = []
    path: list[tuple[str, Section]] = []  # the open section at each level
    for name, paragraphs in paper.sections:
        parts = [p.strip() for p in name.split(":::")] if name.strip() else ["Untitled section"]
        keep = 0
        while keep < min(len(path), len(parts) - 1) and path[keep][0] == parts[keep]:
            keep += 1
        path = path[:keep]
        siblings = top if not path else path[-1][1].subsections
        for depth in range(keep, len(parts)):
            sec = Section(parts[depth])
            siblings.append(sec)
            path.append((parts[depth], sec))
            siblings = sec.subsections
        path[-1][1].paragraphs.extend(p for p in paragraphs if p.strip())
    if paper.captions:
        top.append(Section(FLOATS_SECTION, [c for c in paper.captions if c.strip()]))
    return Paper(title=paper.title or paper.paper_id, authors=[], abstract=paper.abstract, sections=top,
                 slug=paper.paper_id)


@dataclass
class RenderedQasper:
    """A rendered QASPER paper: its PDF, page count, and paragraph texts with their pages."""

    paper_id: str
    pdf: Path
    n_pages: int
    paragraphs: list[tuple[str, list[int]]]  # (text as given, pages), in reading order
    headings: list[tuple[str, int]]  # (title text, page)

    def evidence_pages(self, evidence: str) -> list[int] | None:
        """Pages of one QASPER evidence string (``None`` when it matches nothing rendered)."""
        text = evidence.strip()
        if text.startswith(FLOAT_PREFIX):
            text = text[len(FLOAT_PREFIX):].strip()
        key = normalize_text(text)
        if not key:
            return None
        pages = sorted({p for t, ps in self.paragraphs if normalize_text(t) == key for p in ps})
        if not pages:  # an evidence string cut from a paragraph, or a paragraph cut short
            pages = sorted({p for t, ps in self.paragraphs
                            if len(key) >= 20 and (key in normalize_text(t)) for p in ps})
        if not pages:  # a section name given as evidence: the page of that heading
            last = normalize_text(text.split(":::")[-1])
            pages = sorted({page for title, page in self.headings if last and normalize_text(title).endswith(last)})
        return pages or None


def _renderer_hash() -> str:
    """Hash of the typesetter's source (data model, fonts/figures, layout): a change re-renders."""
    digest = hashlib.sha256()
    for module in (model, media, render):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


def render_qasper_paper(paper: QasperPaperText, out_dir: str | Path) -> RenderedQasper:
    """Render ``paper`` to ``<out_dir>/<paper_id>.pdf`` (or reuse the cached render)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in ".-_" else "_" for c in paper.paper_id)
    pdf = out_dir / f"{safe}.pdf"
    layout_path = out_dir / f"{safe}.layout.json"
    key = {"format": _CACHE_FORMAT, "content": paper.content_hash(), "renderer": _renderer_hash()}
    if pdf.is_file() and layout_path.is_file():
        try:
            cached = json.loads(layout_path.read_text())
            if cached.get("key") == key:
                return RenderedQasper(paper.paper_id, pdf, cached["n_pages"],
                                      [(t, list(p)) for t, p in cached["paragraphs"]],
                                      [(t, int(p)) for t, p in cached["headings"]])
        except (ValueError, KeyError):
            pass  # a damaged cache entry: render again
    rp = render_paper(to_render_paper(paper), pdf, numbered=False, outline=True)
    paragraphs = [(rp.paragraph_text[pid], list(pages)) for pid, pages in rp.paragraph_pages.items()]
    headings = [(h.text, h.page) for h in rp.headings]
    layout_path.write_text(json.dumps({"key": key, "n_pages": rp.n_pages, "paragraphs": paragraphs,
                                       "headings": headings}))
    return RenderedQasper(paper.paper_id, pdf, rp.n_pages, paragraphs, headings)


def render_all(papers: Sequence[QasperPaperText], out_dir: str | Path) -> dict[str, RenderedQasper]:
    return {p.paper_id: render_qasper_paper(p, out_dir) for p in papers}

