"""Render a structured paper to a born-digital PDF, and say exactly where everything landed.

This is the project's own typesetter.  It turns a small data model (:class:`Paper`,
:class:`Section`, :class:`Figure`, :class:`Table`) into a single-column PDF that looks
like a preprint -- large bold title, authors and affiliation, an "Abstract" block,
numbered bold section headings ("1 Introduction", "2.1 Data Collection"), justified
body text, figures with "Figure N: ..." captions, ruled tables with "Table N: ..."
captions, a numbered "References" list and page numbers -- and returns a
:class:`RenderedPaper` that records, for every paragraph, the 1-based page(s) it
occupies and, for every heading, its printed text and page.  That map is the ground
truth for the demo corpus (:mod:`vectree.demo`) and for PDFs rendered from QASPER
full text, so it is exact: it comes from the layout engine itself, not from searching
the output.

Quick use::

    from vectree.demo.model import Paper, Section
    from vectree.demo.render import render_paper
    paper = Paper(
        title="A Study", authors=["A. Author"], abstract="We study ...",
        sections=[Section("Introduction", ["First paragraph.", "Second one."])],
        references=["B. Writer. Some paper. J. Things, 2020."],
    )
    rp = render_paper(paper, "study.pdf", outline=True)
    rp.n_pages                   # 1
    rp.paragraph_pages["s1/p1"]  # [1]
    rp.headings[1].text          # "1 Introduction"

How it works
------------
The paper is written as HTML and laid out by MuPDF's :class:`pymupdf.Story` into a
:class:`pymupdf.DocumentWriter`.  Every block carries an internal element id, and each
paragraph carries an empty ``<span>`` marker before its first word and after its last
word; the Story's position callback reports the page of every element, so a
paragraph's pages run from its start marker's page to its end marker's page (a
paragraph split by a page break lists both pages).  Headings are kept with the text
that follows them, figures with their captions and table captions with their tables:
when the first layout strands one at the bottom of a page, a page break is inserted
before it and the layout is redone (a few passes at most).  The written PDF is then
reopened to add page numbers, metadata and, on request, an outline, and saved with
fixed dates and a fixed file id so the same input gives the same bytes every time.

Text is set in STIX (a Times-like face shipped with matplotlib) subset without its
ligature table, so the PDF's text layer reads "office", never "o\\ufb03ce", and
extracted text can be matched verbatim against the input.  When matplotlib or
fontTools is missing, MuPDF's built-in serif is used instead (and may form ligatures).
Subsetting the fonts costs about half a second once per process; after that a
ten-page paper renders in well under a second.

Public API
----------
* data model (:mod:`vectree.demo.model`): :class:`Paper`, :class:`Section`, :class:`Figure`,
  :class:`Series`, :class:`Table`;
* rendering (here): :func:`render_paper` (to a file), :func:`render_paper_bytes` (in memory);
* results (:mod:`vectree.demo.model`): :class:`RenderedPaper`, :class:`RenderedHeading`,
  :class:`RenderedFloat`;
* helpers (:mod:`vectree.demo.model`): :func:`normalize_text` (whitespace-insensitive text
  comparison key), :func:`section_heading_text`;
* fonts and chart images: :mod:`vectree.demo.media`.

Identifiers
-----------
Sections are identified by their position in the tree, 1-based: ``s2`` is the second
top-level section, ``s2.1`` its first subsection (for numbered demo papers this equals
the printed number).  Paragraph ids are ``<section id>/p<k>`` with ``k`` 0-based within
that section's own paragraph list, e.g. ``s2.1/p3``.  The abstract's paragraphs are
``abstract/p0``, ``abstract/p1`` ... (the abstract string is split on blank lines), and
reference entries are ``references/p0`` ...  Headings have the same ids as their
sections, plus ``abstract`` and ``references``.  Figures and tables are numbered in
reading order across the whole paper (``figure1``, ``table1`` ...).
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from .media import figure_png, font_faces
from .model import (
    Figure,
    Paper,
    RenderedFloat,
    RenderedHeading,
    RenderedPaper,
    Section,
    Table,
    clean_text,
    section_heading_text,
)

__all__ = ["render_paper", "render_paper_bytes", "FIXED_PDF_DATE"]

#: PDF date written as both creation and modification date, so output is reproducible.
FIXED_PDF_DATE = "D:20240101000000Z"

_MAX_LAYOUT_PASSES = 6


# --------------------------------------------------------------------------- layout


@dataclass
class _Item:
    """One block of the flow, in reading order (internal)."""

    kind: str  # "heading", "para", "figure", "tcaption", "table", "title"
    eid: str  # internal element id
    public: str = ""  # paragraph / heading / float id


def _css(font_size: float, line_height: float, fonts: dict[str, bytes] | None) -> str:
    fs = font_size
    face = ""
    family = "serif"
    if fonts:
        family = "vtserif"
        face = (
            "@font-face { font-family: vtserif; src: url(vt-regular.ttf); }\n"
            "@font-face { font-family: vtserif; font-weight: bold; src: url(vt-bold.ttf); }\n"
            "@font-face { font-family: vtserif; font-style: italic; src: url(vt-italic.ttf); }\n"
            "@font-face { font-family: vtserif; font-weight: bold; font-style: italic;"
            " src: url(vt-bolditalic.ttf); }\n"
        )
    return face + f"""
body {{ font-family: {family}; font-size: {fs}pt; line-height: {line_height};
       text-align: justify; margin: 0; padding: 0; }}
p {{ margin: 0 0 {fs * 0.45:.2f}pt 0; padding: 0; }}
div.title {{ font-size: {fs * 1.65:.2f}pt; font-weight: bold; text-align: center;
            line-height: 1.2; margin: 0 0 {fs * 0.9:.2f}pt 0; }}
div.authors {{ font-size: {fs * 1.05:.2f}pt; text-align: center; margin: 0 0 {fs * 0.2:.2f}pt 0; }}
div.affil {{ font-size: {fs * 0.95:.2f}pt; font-style: italic; text-align: center;
            margin: 0 0 {fs * 1.1:.2f}pt 0; }}
h2.abs {{ font-size: {fs * 1.08:.2f}pt; font-weight: bold; text-align: center;
         margin: {fs * 0.4:.2f}pt 0 {fs * 0.35:.2f}pt 0; }}
div.abstract {{ font-size: {fs * 0.95:.2f}pt; margin: 0 {fs * 2.6:.2f}pt {fs * 1.0:.2f}pt {fs * 2.6:.2f}pt; }}
p.kw {{ font-size: {fs * 0.9:.2f}pt; margin: {fs * 0.3:.2f}pt {fs * 2.6:.2f}pt {fs * 0.8:.2f}pt {fs * 2.6:.2f}pt; }}
h2 {{ font-size: {fs * 1.22:.2f}pt; font-weight: bold; text-align: left; line-height: 1.2;
     margin: {fs * 1.1:.2f}pt 0 {fs * 0.5:.2f}pt 0; }}
h3 {{ font-size: {fs * 1.07:.2f}pt; font-weight: bold; text-align: left; line-height: 1.2;
     margin: {fs * 0.8:.2f}pt 0 {fs * 0.4:.2f}pt 0; }}
h4 {{ font-size: {fs}pt; font-weight: bold; font-style: italic; text-align: left;
     line-height: 1.2; margin: {fs * 0.7:.2f}pt 0 {fs * 0.3:.2f}pt 0; }}
.brk {{ page-break-before: always; }}
div.figure {{ text-align: center; margin: {fs * 0.6:.2f}pt 0 {fs * 0.6:.2f}pt 0; }}
p.caption {{ font-size: {fs * 0.9:.2f}pt; text-align: justify; margin: {fs * 0.35:.2f}pt {fs * 1.5:.2f}pt {fs * 0.6:.2f}pt {fs * 1.5:.2f}pt; }}
p.tcaption {{ font-size: {fs * 0.9:.2f}pt; text-align: justify; margin: {fs * 0.6:.2f}pt {fs * 1.5:.2f}pt {fs * 0.4:.2f}pt {fs * 1.5:.2f}pt; }}
table.ruled {{ border-collapse: collapse; font-size: {fs * 0.88:.2f}pt; line-height: 1.2;
              border-top: 1.1pt solid black; border-bottom: 1.1pt solid black;
              margin: 0 0 {fs * 0.9:.2f}pt 0; }}
table.ruled th {{ font-weight: bold; text-align: left; border-bottom: 0.6pt solid black;
                 padding: {fs * 0.25:.2f}pt {fs * 0.55:.2f}pt; }}
table.ruled td {{ text-align: left; padding: {fs * 0.18:.2f}pt {fs * 0.55:.2f}pt; }}
p.short {{ text-align: center; }}
p.ref {{ font-size: {fs * 0.92:.2f}pt; text-align: left; margin: 0 0 {fs * 0.3:.2f}pt 0; }}
"""


def _short(caption: str) -> str:
    """Extra CSS class for captions that fit on one line: those are centred, as in LaTeX."""
    return " short" if len(clean_text(caption)) <= 80 else ""


class _Builder:
    """Turns a :class:`Paper` into HTML plus the flow bookkeeping (internal)."""

    def __init__(self, paper: Paper, numbered: bool, text_width: float):
        self.paper = paper
        self.numbered = numbered
        self.text_width = text_width
        self.items: list[_Item] = []
        self.para_text: dict[str, str] = {}
        self.para_section: dict[str, str] = {}
        self.heading_info: dict[str, tuple[int, str]] = {}  # id -> (level, text)
        self.floats: dict[str, tuple[str, str, str]] = {}  # id -> (label, caption, section)
        self.images: list[tuple[bytes, str]] = []
        self.table_rows: dict[str, int] = {}  # table id -> number of body rows
        self._n = 0
        self._n_fig = 0
        self._n_tab = 0

    def _eid(self) -> str:
        self._n += 1
        return f"e{self._n}"

    def _para(self, pid: str, section: str, text: str, cls: str = "", prefix: str = "") -> str:
        eid = self._eid()
        self.items.append(_Item("para", eid, pid))
        self.para_text[pid] = text
        self.para_section[pid] = section
        c = f' class="{cls}"' if cls else ""
        return (
            f'<p id="{eid}"{c}><span id="{eid}a"></span>{prefix}'
            f'{html.escape(clean_text(text), quote=False)}<span id="{eid}b"></span></p>'
        )

    def _heading(self, hid: str, level: int, text: str, cls: str = "") -> str:
        eid = self._eid()
        self.items.append(_Item("heading", eid, hid))
        self.heading_info[hid] = (level, text)
        tag = f"h{min(level + 1, 4)}"
        c = f' class="{cls}"' if cls else ""
        return f'<{tag} id="{eid}"{c}>{html.escape(text, quote=False)}</{tag}>'

    def _figure(self, fig: Figure, section: str) -> str:
        self._n_fig += 1
        n = self._n_fig
        fid = f"figure{n}"
        width = max(0.2, min(1.0, fig.width)) * self.text_width
        height = width * fig.aspect
        name = f"fig{n}.png"
        self.images.append((figure_png(fig, width), name))
        eid = self._eid()
        self.items.append(_Item("figure", eid, fid))
        ceid = self._eid()
        self.items.append(_Item("fcaption", ceid, fid))
        self.floats[fid] = (f"Figure {n}", clean_text(fig.caption), section)
        return (
            f'<div class="figure" id="{eid}"><img src="{name}" '
            f'style="width:{width:.2f}pt;height:{height:.2f}pt"/></div>'
            f'<p class="caption{_short(fig.caption)}" id="{ceid}"><b>Figure {n}:</b> '
            f"{html.escape(clean_text(fig.caption), quote=False)}</p>"
        )

    def _table(self, tab: Table, section: str) -> str:
        self._n_tab += 1
        n = self._n_tab
        tid = f"table{n}"
        ceid = self._eid()
        self.items.append(_Item("tcaption", ceid, tid))
        teid = self._eid()
        self.items.append(_Item("table", teid, tid))
        self.floats[tid] = (f"Table {n}", clean_text(tab.caption), section)
        self.table_rows[tid] = len(tab.rows)
        ncol = max([len(tab.header)] + [len(r) for r in tab.rows])

        def cells(row: list[str], tag: str, marker: str = "") -> str:
            row = list(row) + [""] * (ncol - len(row))
            out = [f"<{tag}>{html.escape(clean_text(str(c)), quote=False)}</{tag}>" for c in row]
            if marker:  # empty span whose reported position tells the page of this row
                out[0] = f'<{tag}><span id="{marker}"></span>' + out[0][len(tag) + 2:]
            return "".join(out)

        # Natural-width tables look lost on the left; give wide tables the full text
        # width and narrow ones a centred box proportional to their column count.
        frac = min(1.0, 0.4 + 0.15 * ncol)
        margin = (1.0 - frac) / 2 * self.text_width
        last = len(tab.rows) - 1
        body = "".join(
            f"<tr>{cells(r, 'td', teid + 'b' if k == last else '')}</tr>" for k, r in enumerate(tab.rows)
        )
        return (
            f'<p class="tcaption{_short(tab.caption)}" id="{ceid}"><b>Table {n}:</b> '
            f"{html.escape(clean_text(tab.caption), quote=False)}</p>"
            f'<table class="ruled" id="{teid}" style="width:{frac * self.text_width:.2f}pt;'
            f'margin-left:{margin:.2f}pt"><tr>{cells(tab.header, "th", teid + "a")}</tr>{body}</table>'
        )

    def build(self) -> str:
        p = self.paper
        parts = [f'<div class="title" id="{self._eid()}">{html.escape(clean_text(p.title), quote=False)}</div>']
        if p.authors:
            parts.append(f'<div class="authors">{html.escape(", ".join(clean_text(a) for a in p.authors), quote=False)}</div>')
        if p.affiliation:
            parts.append(f'<div class="affil">{html.escape(clean_text(p.affiliation), quote=False)}</div>')
        abstract = [a for a in re.split(r"\n\s*\n", p.abstract or "") if a.strip()]
        if abstract:
            parts.append(self._heading("abstract", 1, "Abstract", cls="abs"))
            parts.append('<div class="abstract">')
            for k, a in enumerate(abstract):
                parts.append(self._para(f"abstract/p{k}", "abstract", a))
            parts.append("</div>")
            if p.keywords:
                kw = html.escape(", ".join(clean_text(k) for k in p.keywords), quote=False)
                parts.append(f'<p class="kw"><b>Keywords:</b> {kw}</p>')
        self._sections(p.sections, "", 1, parts)
        if p.references:
            parts.append(self._heading("references", 1, "References"))
            for k, ref in enumerate(p.references):
                parts.append(self._para(f"references/p{k}", "references", ref, cls="ref", prefix=f"[{k + 1}] "))
        return "".join(parts)

    def _sections(self, secs: list[Section], prefix: str, level: int, parts: list[str],
                  num_prefix: str = "", parent: str = "") -> None:
        for i, s in enumerate(secs, 1):
            pos = f"{prefix}.{i}" if prefix else str(i)
            sid = "s" + pos
            # an explicit number wins; otherwise number below the parent's printed number
            auto = f"{num_prefix}.{i}" if num_prefix else str(i)
            number = (s.number or auto) if self.numbered else None
            if clean_text(s.title):
                parts.append(self._heading(sid, level, section_heading_text(number, s.title)))
                under = sid
            else:
                # an untitled section prints no heading; its text sits under the parent's
                under = parent
            n = len(s.paragraphs)
            floats: list[tuple[int, int, object]] = []
            for j, f in enumerate(s.figures):
                floats.append((n if f.after is None else max(0, min(n, f.after)), 0, f))
            for j, t in enumerate(s.tables):
                floats.append((n if t.after is None else max(0, min(n, t.after)), 1, t))
            floats.sort(key=lambda x: (x[0], x[1]))
            fi = 0
            for k in range(n + 1):
                while fi < len(floats) and floats[fi][0] == k:
                    obj = floats[fi][2]
                    parts.append(self._figure(obj, under) if isinstance(obj, Figure) else self._table(obj, under))
                    fi += 1
                if k < n:
                    parts.append(self._para(f"{sid}/p{k}", under, s.paragraphs[k]))
            self._sections(s.subsections, pos, level + 1, parts, number or auto, under)


def _layout(html_text: str, css: str, archive: pymupdf.Archive, mediabox: pymupdf.Rect,
            where: pymupdf.Rect) -> tuple[bytes, dict[str, tuple[int, int]], int]:
    """Lay out once; return the PDF bytes, element id -> (first page, last page), pages."""
    story = pymupdf.Story(html=html_text, user_css=css, archive=archive)
    buf = io.BytesIO()
    writer = pymupdf.DocumentWriter(buf, "compress")
    seen: dict[str, tuple[int, int]] = {}
    pages = [0]

    def rectfn(rect_num, filled):
        return mediabox, where, None

    def posfn(pos):
        eid = pos.id
        if eid:
            pg = pos.page_num
            old = seen.get(eid)
            seen[eid] = (pg, pg) if old is None else (min(old[0], pg), max(old[1], pg))
        if pos.page_num > pages[0]:
            pages[0] = pos.page_num

    story.write(writer, rectfn, positionfn=posfn)
    writer.close()
    return buf.getvalue(), seen, pages[0]


def _page_of(seen: dict[str, tuple[int, int]], item: _Item) -> int:
    """First page of a flow item (paragraphs: page of the start marker)."""
    key = item.eid + "a" if item.kind in ("para", "table") else item.eid
    return seen.get(key, seen.get(item.eid, (0, 0)))[0]


def _last_page_of(seen: dict[str, tuple[int, int]], item: _Item) -> int:
    """Last page of a flow item (paragraphs and tables: page of the end marker)."""
    key = item.eid + "b" if item.kind in ("para", "table") else item.eid
    return seen.get(key, seen.get(item.eid, (0, 0)))[1]


def _stranded(items: list[_Item], seen: dict[str, tuple[int, int]],
              rows_of: dict[str, int] | None = None) -> set[str]:
    """Element ids that need a page break before them to keep things together.

    A heading (or a run of consecutive headings) whose following content starts on a
    later page, a figure whose caption went to the next page, and a table caption whose
    table starts on the next page or (for tables of up to 25 rows) runs onto it.
    """
    out: set[str] = set()
    rows_of = rows_of or {}
    for i, it in enumerate(items):
        nxt = items[i + 1] if i + 1 < len(items) else None
        if nxt is None:
            continue
        pg, npg = _page_of(seen, it), _page_of(seen, nxt)
        if it.kind == "tcaption" and nxt.kind == "table" and pg and nxt.public in rows_of:
            if rows_of[nxt.public] <= 25 and _last_page_of(seen, nxt) > pg:
                out.add(it.eid)
                continue
        if not pg or not npg or npg <= pg:
            continue
        if it.kind == "heading":
            j = i
            while j > 0 and items[j - 1].kind == "heading" and _page_of(seen, items[j - 1]) == pg:
                j -= 1
            out.add(items[j].eid)
        elif it.kind == "figure" and nxt.kind == "fcaption":
            out.add(it.eid)
        elif it.kind == "tcaption" and nxt.kind == "table":
            out.add(it.eid)
    return out


def _page_box(page_size) -> pymupdf.Rect:
    if isinstance(page_size, str):
        return pymupdf.paper_rect(page_size.lower())
    w, h = page_size
    return pymupdf.Rect(0, 0, float(w), float(h))


def render_paper_bytes(
    paper: Paper,
    *,
    numbered: bool = True,
    outline: bool = False,
    page_size: str | tuple[float, float] = "letter",
    font_size: float = 10.5,
    line_height: float = 1.32,
    margins: tuple[float, float, float, float] | None = None,
    page_numbers: bool = True,
) -> tuple[bytes, RenderedPaper]:
    """Render ``paper`` in memory; return ``(pdf bytes, RenderedPaper)`` (``path`` is None).

    Same options as :func:`render_paper`.
    """
    mediabox = _page_box(page_size)
    left, top, right, bottom = margins or (68.0, 68.0, 68.0, 72.0)
    where = pymupdf.Rect(mediabox.x0 + left, mediabox.y0 + top, mediabox.x1 - right, mediabox.y1 - bottom)
    if where.is_empty or where.width < 100 or where.height < 100:
        raise ValueError(f"page {page_size!r} with margins {margins!r} leaves no room for text")

    fonts = font_faces()
    builder = _Builder(paper, numbered, where.width)
    body = builder.build()
    archive = pymupdf.Archive()
    if fonts:
        for key, data in fonts.items():
            archive.add(data, f"vt-{key}.ttf")
    for data, name in builder.images:
        archive.add(data, name)
    css = _css(font_size, line_height, fonts)

    breaks: set[str] = set()
    html_text = body
    for _ in range(_MAX_LAYOUT_PASSES):
        html_text = body
        for eid in sorted(breaks):
            # breakable elements (headings, figures, table captions) carry no style
            html_text = html_text.replace(f' id="{eid}"', f' id="{eid}" style="page-break-before:always"', 1)
        pdf, seen, n_pages = _layout(html_text, css, archive, mediabox, where)
        more = _stranded(builder.items, seen, builder.table_rows) - breaks
        # never break before an element that already starts a page
        more = {e for e in more if _starts_page(e, builder.items, seen) is False}
        if not more:
            break
        breaks |= more

    doc = pymupdf.open("pdf", pdf)
    n_pages = doc.page_count
    para_pages: dict[str, list[int]] = {}
    for it in builder.items:
        if it.kind != "para":
            continue
        a = seen.get(it.eid + "a", seen.get(it.eid))
        b = seen.get(it.eid + "b", a)
        if a is None:
            raise RuntimeError(f"paragraph {it.public} was not placed by the layout engine")
        para_pages[it.public] = list(range(a[0], max(a[0], b[1]) + 1))
    headings = [
        RenderedHeading(it.public, *builder.heading_info[it.public], _page_of(seen, it))
        for it in builder.items
        if it.kind == "heading"
    ]
    figures, tables = [], []
    for it in builder.items:
        if it.kind in ("fcaption", "tcaption"):
            label, caption, section = builder.floats[it.public]
            (figures if it.kind == "fcaption" else tables).append(
                RenderedFloat(it.public, label, caption, _page_of(seen, it), section)
            )

    if page_numbers:
        for page in doc:
            r = page.rect
            txt = str(page.number + 1)
            w = pymupdf.get_text_length(txt, fontname="Times-Roman", fontsize=9)
            page.insert_text(((r.width - w) / 2, r.height - bottom / 2 + 3), txt,
                             fontname="Times-Roman", fontsize=9)
    meta = {
        "title": clean_text(paper.title),
        "author": ", ".join(clean_text(a) for a in paper.authors),
        "subject": "",
        "keywords": ", ".join(clean_text(k) for k in paper.keywords),
        # the old module name, kept: it is in every demo PDF's bytes, hence in their doc ids
        "creator": "vectree retrieval.render",
        "producer": f"PyMuPDF {pymupdf.VersionBind}",
        "creationDate": FIXED_PDF_DATE,
        "modDate": FIXED_PDF_DATE,
        "trapped": "",
        "encryption": None,
    }
    doc.set_metadata(meta)
    rendered = RenderedPaper(
        path=None,
        n_pages=n_pages,
        paragraph_pages=para_pages,
        paragraph_text=dict(builder.para_text),
        paragraph_section=dict(builder.para_section),
        headings=headings,
        figures=figures,
        tables=tables,
        outline=bool(outline),
    )
    if outline and headings:
        doc.set_toc(_monotone_toc(rendered.toc()))
    try:  # embed only the glyphs used (MuPDF subsets deterministically, in milliseconds)
        doc.subset_fonts()
    except Exception:  # pragma: no cover - older PyMuPDF or exotic fonts: keep full fonts
        pass
    out = doc.tobytes(garbage=3, deflate=True, no_new_id=True)
    doc.close()
    return out, rendered


def _starts_page(eid: str, items: list[_Item], seen: dict[str, tuple[int, int]]) -> bool:
    """Whether the element is already the first flow item on its page."""
    idx = next(i for i, it in enumerate(items) if it.eid == eid)
    if idx == 0:
        return True
    return _page_of(seen, items[idx - 1]) < _page_of(seen, items[idx])


def _monotone_toc(toc: list[list]) -> list[list]:
    """``set_toc`` rejects level jumps of more than one; clamp them (keeps text and page)."""
    out, prev = [], 0
    for level, text, page in toc:
        level = max(1, min(level, prev + 1))
        out.append([level, text, page])
        prev = level
    return out


def render_paper(
    paper: Paper,
    out_path: str | Path,
    *,
    numbered: bool = True,
    outline: bool = False,
    page_size: str | tuple[float, float] = "letter",
    font_size: float = 10.5,
    line_height: float = 1.32,
    margins: tuple[float, float, float, float] | None = None,
    page_numbers: bool = True,
) -> RenderedPaper:
    """Render ``paper`` to a PDF at ``out_path`` and return where everything landed.

    * ``numbered``: print section numbers ("2.1 Data Collection"); a section's own
      ``number`` wins over its position.  ``False`` prints bare titles (QASPER style).
    * ``outline``: embed a PDF outline (bookmarks) with every heading -- Abstract,
      sections, subsections, References -- at its page; ``False`` writes none.
    * ``page_size``: a paper name known to :func:`pymupdf.paper_rect` ("letter", "a4")
      or ``(width, height)`` in points.
    * ``font_size`` / ``line_height``: body text size in points and line spacing;
      headings, captions and tables scale with ``font_size``.
    * ``margins``: ``(left, top, right, bottom)`` in points (default about 0.95 inch).
    * ``page_numbers``: print the page number centred in the bottom margin.

    The PDF gets ``title``/``author`` metadata, fixed creation and modification dates
    and a fixed file id, so rendering the same paper with the same options gives the
    same bytes.  The parent directory is created if needed; the file is written under
    a temporary name and renamed into place.
    """
    data, rendered = render_paper_bytes(
        paper,
        numbered=numbered,
        outline=outline,
        page_size=page_size,
        font_size=font_size,
        line_height=line_height,
        margins=margins,
        page_numbers=page_numbers,
    )
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(out_path)
    rendered.path = out_path
    return rendered
