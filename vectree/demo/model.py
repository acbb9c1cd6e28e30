"""The typesetter's data model: what a paper is made of (:class:`Paper`, :class:`Section`,
:class:`Figure`, :class:`Series`, :class:`Table`) and what a render reports back
(:class:`RenderedPaper`, :class:`RenderedHeading`, :class:`RenderedFloat`), plus the text keys
both sides are compared with (:func:`normalize_text`, :func:`section_heading_text`).

Kept apart from the layout engine (:mod:`vectree.demo.render`) so the demo papers and the
QASPER converter build papers without loading the engine.  Identifiers are described in
:mod:`vectree.demo.render`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

__all__ = [
    "Series",
    "Figure",
    "Table",
    "Section",
    "Paper",
    "RenderedHeading",
    "RenderedFloat",
    "RenderedPaper",
    "normalize_text",
    "clean_text",
    "section_heading_text",
]


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


def clean_text(text: str) -> str:
    """Plain text safe for the layout engine: no control or zero-width characters."""
    return _WS_RE.sub(" ", _CTRL_RE.sub("", text or "")).strip()


def section_heading_text(number: str | None, title: str) -> str:
    """The printed heading: ``"2.1 Data Collection"``, or just the title without a number."""
    title = clean_text(title)
    return f"{number} {title}" if number else title

