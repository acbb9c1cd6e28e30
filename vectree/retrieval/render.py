"""Render a structured paper to a born-digital PDF, and say exactly where everything landed.

This is the project's own typesetter.  It turns a small data model (:class:`Paper`,
:class:`Section`, :class:`Figure`, :class:`Table`) into a single-column PDF that looks
like a preprint -- large bold title, authors and affiliation, an "Abstract" block,
numbered bold section headings ("1 Introduction", "2.1 Data Collection"), justified
body text, figures with "Figure N: ..." captions, ruled tables with "Table N: ..."
captions, a numbered "References" list and page numbers -- and returns a
:class:`RenderedPaper` that records, for every paragraph, the 1-based page(s) it
occupies and, for every heading, its printed text and page.  That map is the ground
truth for the demo corpus (:mod:`vectree.retrieval.demo`) and for PDFs rendered from QASPER
full text, so it is exact: it comes from the layout engine itself, not from searching
the output.

Quick use::

    from vectree.retrieval.render import Paper, Section, render_paper
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
* data model: :class:`Paper`, :class:`Section`, :class:`Figure`, :class:`Series`,
  :class:`Table`;
* rendering: :func:`render_paper` (to a file), :func:`render_paper_bytes` (in memory);
* results: :class:`RenderedPaper`, :class:`RenderedHeading`, :class:`RenderedFloat`;
* helpers: :func:`normalize_text` (whitespace-insensitive text comparison key),
  :func:`section_heading_text`.

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
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import pymupdf

__all__ = [
    "Series",
    "Figure",
    "Table",
    "Section",
    "Paper",
    "RenderedHeading",
    "RenderedFloat",
    "RenderedPaper",
    "render_paper",
    "render_paper_bytes",
    "normalize_text",
    "section_heading_text",
    "FIXED_PDF_DATE",
]

#: PDF date written as both creation and modification date, so output is reproducible.
FIXED_PDF_DATE = "D:20240101000000Z"

_MAX_LAYOUT_PASSES = 6


# --------------------------------------------------------------------------- model


@dataclass
class Series:
    """One data series of a :class:`Figure` chart.

    ``x`` holds numbers for ``line``/``scatter`` charts and category labels (strings)
    for ``bar`` charts, where all series must share the same categories; ``y`` holds
    the values.  ``label`` goes into the legend (no legend when every label is empty);
    ``style`` is an optional matplotlib format string such as ``"o-"`` or ``"s--"``; in
    a ``scatter`` figure a series with a style is drawn as a line (e.g. a fit).
    """

    label: str
    x: Sequence
    y: Sequence[float]
    style: str = ""


@dataclass
class Figure:
    """A figure: a simple chart (drawn with matplotlib to PNG in memory) or a given image.

    ``kind`` is ``"line"``, ``"scatter"`` or ``"bar"``; ``series`` are drawn on one set
    of axes labelled ``xlabel``/``ylabel`` (``logx``/``logy`` switch an axis to log
    scale).  Alternatively pass ready PNG or JPEG bytes as ``image`` and nothing is
    drawn.  ``width`` is the printed width as a fraction of the text width and
    ``aspect`` the height/width ratio.  ``after`` places the figure after that many of
    its section's paragraphs (``None``: after all of them).  The caption is printed
    below the figure as ``Figure N: <caption>``.
    """

    caption: str
    kind: str = "line"
    series: list[Series] = field(default_factory=list)
    xlabel: str = ""
    ylabel: str = ""
    logx: bool = False
    logy: bool = False
    image: bytes | None = None
    width: float = 0.68
    aspect: float = 0.56
    after: int | None = None


@dataclass
class Table:
    """A table with a header row, printed as a ruled (booktabs-style) grid.

    The caption is printed above the table as ``Table N: <caption>``.  Every row should
    have as many cells as ``header``; short rows are padded with empty cells.
    ``after`` places the table after that many of its section's paragraphs (``None``:
    after all of them, and after the section's figures).
    """

    caption: str
    header: list[str]
    rows: list[list[str]]
    after: int | None = None


@dataclass
class Section:
    """A section of a paper: heading title, paragraphs, floats and subsections.

    ``title`` is the heading text without its number; ``number`` is the printed number
    (``"2.1"``) or ``None`` to let :func:`render_paper` number it by position below its
    parent's printed number (``"7"`` -> ``"7.1"``, ``"7.2"``) when ``numbered=True``.
    ``paragraphs`` are plain text (no markup; whitespace inside a paragraph is
    collapsed).  Subsections follow the section's own paragraphs and floats.  A section
    whose title is empty prints no heading; its paragraphs count as part of the
    enclosing section (``paragraph_section`` names the nearest printed ancestor, or
    ``""`` at top level).
    """

    title: str
    paragraphs: list[str] = field(default_factory=list)
    subsections: list["Section"] = field(default_factory=list)
    number: str | None = None
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


@dataclass
class Paper:
    """A paper: title block, abstract, section tree and references.

    ``authors`` are printed comma-separated under the title, followed by
    ``affiliation`` (optional, italic).  ``abstract`` may hold several paragraphs
    separated by blank lines; an empty abstract prints no "Abstract" block.
    ``references`` are printed as ``[1] ...``, ``[2] ...`` under a "References"
    heading (omitted when empty).  ``slug`` is a short stable name used by callers for
    file names (the renderer does not use it); ``keywords`` are printed under the
    abstract when given.
    """

    title: str
    authors: list[str]
    abstract: str
    sections: list[Section]
    references: list[str] = field(default_factory=list)
    affiliation: str = ""
    slug: str = ""
    keywords: list[str] = field(default_factory=list)

    def iter_sections(self) -> Iterable[tuple[str, int, Section]]:
        """Yield ``(section id, level, section)`` for every section, in reading order."""

        def walk(secs: list[Section], prefix: str, level: int):
            for i, s in enumerate(secs, 1):
                sid = f"{prefix}{i}" if not prefix else f"{prefix}.{i}"
                yield ("s" + sid, level, s)
                yield from walk(s.subsections, sid, level + 1)

        yield from walk(self.sections, "", 1)


# --------------------------------------------------------------------------- results


@dataclass
class RenderedHeading:
    """A heading as printed: ``id`` (``"s2.1"``, ``"abstract"``, ``"references"``),
    ``level`` (1 for sections, Abstract and References; 2 for subsections ...), the
    printed ``text`` (``"2.1 Data Collection"``) and its 1-based ``page``."""

    id: str
    level: int
    text: str
    page: int


@dataclass
class RenderedFloat:
    """A figure or table as printed: ``id`` (``"figure1"``), ``label`` (``"Figure 1"``),
    the ``caption`` text without label, the 1-based ``page`` of the caption and the
    ``section`` id it belongs to."""

    id: str
    label: str
    caption: str
    page: int
    section: str


@dataclass
class RenderedPaper:
    """What :func:`render_paper` produced and where everything landed.

    * ``path``: the written file (``None`` from :func:`render_paper_bytes`);
    * ``n_pages``: number of pages;
    * ``paragraph_pages``: paragraph id -> sorted list of 1-based pages it occupies;
    * ``paragraph_text``: paragraph id -> the paragraph's text as given;
    * ``paragraph_section``: paragraph id -> id of the heading it sits under;
    * ``headings``: every heading in reading order (see :class:`RenderedHeading`);
    * ``figures`` / ``tables``: every float in reading order (:class:`RenderedFloat`);
    * ``outline``: whether a PDF outline was embedded (it equals :meth:`toc`).

    Dicts keep reading order, so ``list(paragraph_pages)`` is the document order.
    """

    path: Path | None
    n_pages: int
    paragraph_pages: dict[str, list[int]]
    paragraph_text: dict[str, str]
    paragraph_section: dict[str, str]
    headings: list[RenderedHeading]
    figures: list[RenderedFloat]
    tables: list[RenderedFloat]
    outline: bool = False

    def pages_of(self, paragraph_id: str) -> list[int]:
        """1-based pages occupied by paragraph ``paragraph_id`` (KeyError if unknown)."""
        return self.paragraph_pages[paragraph_id]

    def heading(self, heading_id: str) -> RenderedHeading:
        """The heading with id ``heading_id`` (``"s3.2"``, ``"abstract"``, ...)."""
        for h in self.headings:
            if h.id == heading_id:
                return h
        raise KeyError(heading_id)

    def heading_of(self, paragraph_id: str) -> RenderedHeading:
        """The heading a paragraph sits under (KeyError for text under no heading)."""
        return self.heading(self.paragraph_section[paragraph_id])

    def find(self, text: str) -> list[str]:
        """Ids of paragraphs containing ``text`` (compared with :func:`normalize_text`)."""
        key = normalize_text(text)
        return [pid for pid, t in self.paragraph_text.items() if key in normalize_text(t)]

    def pages_for_text(self, text: str) -> list[int]:
        """Sorted pages of every paragraph that contains ``text``."""
        return sorted({p for pid in self.find(text) for p in self.paragraph_pages[pid]})

    def toc(self) -> list[list]:
        """``[[level, text, page], ...]`` for all headings, as given to ``set_toc``."""
        return [[h.level, h.text, h.page] for h in self.headings]


# --------------------------------------------------------------------------- helpers

_WS_RE = re.compile(r"\s+")
_CTRL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\ufeff]")


def normalize_text(text: str) -> str:
    """Comparison key for matching given text against extracted PDF text.

    NFKC-normalises (so ligature characters compare equal to their letters), drops
    every whitespace character and removes soft hyphens, so line breaks and
    justification spacing do not matter.  Use it on both sides of a comparison.
    """
    text = unicodedata.normalize("NFKC", text).replace("\u00ad", "")
    return _WS_RE.sub("", text)


def _clean(text: str) -> str:
    """Plain text safe for the layout engine: no control or zero-width characters."""
    return _WS_RE.sub(" ", _CTRL_RE.sub("", text or "")).strip()


def section_heading_text(number: str | None, title: str) -> str:
    """The printed heading: ``"2.1 Data Collection"``, or just the title without a number."""
    title = _clean(title)
    return f"{number} {title}" if number else title


# Unicode ranges kept in the subset fonts: Latin, Greek, punctuation, super/subscripts,
# letter-like symbols, arrows and the common mathematical operators.
_FONT_RANGES = [
    (0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x2010, 0x205E), (0x2070, 0x209F),
    (0x20AC, 0x20AC), (0x2100, 0x214F), (0x2190, 0x21FF), (0x2200, 0x22FF),
    (0x2300, 0x23FF), (0x25A0, 0x25FF),
]
_FONT_FILES = {
    "regular": "STIXGeneral.ttf",
    "bold": "STIXGeneralBol.ttf",
    "italic": "STIXGeneralItalic.ttf",
    "bolditalic": "STIXGeneralBolIta.ttf",
}


@lru_cache(maxsize=1)
def _font_faces() -> dict[str, bytes] | None:
    """STIX faces subset to :data:`_FONT_RANGES` with no GSUB table (hence no ligatures).

    Returns ``None`` when matplotlib (which ships the fonts) or fontTools is missing;
    the renderer then uses MuPDF's built-in serif face.
    """
    try:
        import logging

        import matplotlib
        from fontTools import subset
        from fontTools.ttLib import TTFont
    except Exception:  # pragma: no cover - optional dependency missing
        return None
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    font_dir = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    unicodes = [c for a, b in _FONT_RANGES for c in range(a, b + 1)]
    faces: dict[str, bytes] = {}
    for key, name in _FONT_FILES.items():
        path = font_dir / name
        if not path.exists():  # pragma: no cover
            return None
        font = TTFont(str(path), recalcTimestamp=False)
        opts = subset.Options()
        opts.layout_features = ["kern"]
        opts.drop_tables += ["GSUB", "FFTM"]
        opts.name_IDs = ["*"]
        opts.notdef_outline = True
        sub = subset.Subsetter(opts)
        sub.populate(unicodes=unicodes)
        sub.subset(font)
        buf = io.BytesIO()
        font.save(buf)
        faces[key] = buf.getvalue()
    return faces


def _figure_png(fig: Figure, width_pt: float, dpi: int = 150) -> bytes:
    """Draw ``fig`` with matplotlib's Agg canvas (no pyplot state) and return PNG bytes."""
    if fig.image is not None:
        return fig.image
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    w_in = width_pt / 72.0
    h_in = w_in * fig.aspect
    rc = {
        "font.family": "serif",
        "font.serif": ["STIXGeneral", "DejaVu Serif"],
        "mathtext.fontset": "stix",
        "font.size": 8.5,
        "axes.linewidth": 0.7,
        "lines.linewidth": 1.3,
        "lines.markersize": 4,
        "svg.hashsalt": "vectree",
    }
    with matplotlib.rc_context(rc):
        mfig = MplFigure(figsize=(w_in, h_in), dpi=dpi)
        FigureCanvasAgg(mfig)
        ax = mfig.add_subplot()
        if fig.kind == "bar":
            cats = [str(c) for c in (fig.series[0].x if fig.series else [])]
            n = max(1, len(fig.series))
            bw = 0.8 / n
            for i, s in enumerate(fig.series):
                xs = [j - 0.4 + bw * (i + 0.5) for j in range(len(cats))]
                ax.bar(xs, list(s.y), width=bw * 0.92, label=s.label or None)
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels(cats)
        else:
            for s in fig.series:
                if fig.kind == "scatter" and not s.style:
                    ax.scatter(list(s.x), list(s.y), s=10, label=s.label or None)
                elif s.style:
                    ax.plot(list(s.x), list(s.y), s.style, label=s.label or None)
                else:
                    ax.plot(list(s.x), list(s.y), label=s.label or None)
        if fig.logx:
            ax.set_xscale("log")
        if fig.logy:
            ax.set_yscale("log")
        ax.set_xlabel(fig.xlabel)
        ax.set_ylabel(fig.ylabel)
        ax.grid(True, alpha=0.3, linewidth=0.5)
        if any(s.label for s in fig.series):
            ax.legend(frameon=False, fontsize=7.5)
        mfig.tight_layout(pad=0.4)
        buf = io.BytesIO()
        mfig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


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
    return " short" if len(_clean(caption)) <= 80 else ""


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
            f'{html.escape(_clean(text), quote=False)}<span id="{eid}b"></span></p>'
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
        self.images.append((_figure_png(fig, width), name))
        eid = self._eid()
        self.items.append(_Item("figure", eid, fid))
        ceid = self._eid()
        self.items.append(_Item("fcaption", ceid, fid))
        self.floats[fid] = (f"Figure {n}", _clean(fig.caption), section)
        return (
            f'<div class="figure" id="{eid}"><img src="{name}" '
            f'style="width:{width:.2f}pt;height:{height:.2f}pt"/></div>'
            f'<p class="caption{_short(fig.caption)}" id="{ceid}"><b>Figure {n}:</b> '
            f"{html.escape(_clean(fig.caption), quote=False)}</p>"
        )

    def _table(self, tab: Table, section: str) -> str:
        self._n_tab += 1
        n = self._n_tab
        tid = f"table{n}"
        ceid = self._eid()
        self.items.append(_Item("tcaption", ceid, tid))
        teid = self._eid()
        self.items.append(_Item("table", teid, tid))
        self.floats[tid] = (f"Table {n}", _clean(tab.caption), section)
        self.table_rows[tid] = len(tab.rows)
        ncol = max([len(tab.header)] + [len(r) for r in tab.rows])

        def cells(row: list[str], tag: str, marker: str = "") -> str:
            row = list(row) + [""] * (ncol - len(row))
            out = [f"<{tag}>{html.escape(_clean(str(c)), quote=False)}</{tag}>" for c in row]
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
            f"{html.escape(_clean(tab.caption), quote=False)}</p>"
            f'<table class="ruled" id="{teid}" style="width:{frac * self.text_width:.2f}pt;'
            f'margin-left:{margin:.2f}pt"><tr>{cells(tab.header, "th", teid + "a")}</tr>{body}</table>'
        )

    def build(self) -> str:
        p = self.paper
        parts = [f'<div class="title" id="{self._eid()}">{html.escape(_clean(p.title), quote=False)}</div>']
        if p.authors:
            parts.append(f'<div class="authors">{html.escape(", ".join(_clean(a) for a in p.authors), quote=False)}</div>')
        if p.affiliation:
            parts.append(f'<div class="affil">{html.escape(_clean(p.affiliation), quote=False)}</div>')
        abstract = [a for a in re.split(r"\n\s*\n", p.abstract or "") if a.strip()]
        if abstract:
            parts.append(self._heading("abstract", 1, "Abstract", cls="abs"))
            parts.append('<div class="abstract">')
            for k, a in enumerate(abstract):
                parts.append(self._para(f"abstract/p{k}", "abstract", a))
            parts.append("</div>")
            if p.keywords:
                kw = html.escape(", ".join(_clean(k) for k in p.keywords), quote=False)
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
            if _clean(s.title):
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

    fonts = _font_faces()
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
        "title": _clean(paper.title),
        "author": ", ".join(_clean(a) for a in paper.authors),
        "subject": "",
        "keywords": ", ".join(_clean(k) for k in paper.keywords),
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
