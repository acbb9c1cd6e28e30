"""The page/line model of the offline extractor: the stored text lines of a paper as *visual
lines*, the document's body style, and the page furniture to ignore.

1. *visual lines*: stored lines of one block that sit on the same baseline are joined (PyMuPDF
   often splits ``"3.1"`` and ``"Results"``, or every word of justified text, into lines); wide
   gaps between the joined parts mark a table row;
2. *furniture*: running headers/footers and page numbers (lines in the top or bottom band whose
   digit-free text repeats on several pages), side-margin stamps;
3. *body style*: the most common size and font by characters, counted before the reference list.

The heading heuristics that read this model are in :mod:`vectree.retrieval.trees.headings`.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

from .text import BACK_MATTER, clean_title

# ---------------------------------------------------------------------------------------------
# visual lines


@dataclass
class VLine:
    page: int  # 1-based
    block: int
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    size: float
    bold: bool
    font: str
    page_width: float
    page_height: float
    first_in_block: bool = False
    last_in_block: bool = False
    furniture: bool = False
    caption: bool = False
    crowded: bool = False  # shares its baseline with other text in its column (a table row)
    sig: tuple | None = None  # cached look, see _signature

    @property
    def height(self) -> float:
        return max(0.1, self.y1 - self.y0)

    @property
    def column(self) -> int:
        """0 left, 1 right, -1 spanning the gutter."""
        mid, slack = self.page_width / 2, self.page_width * 0.04
        if self.x0 < mid - slack and self.x1 > mid + slack:
            return -1
        return 0 if (self.x0 + self.x1) / 2 < mid else 1


def font_key(font: str) -> str:
    font = font or ""
    if "+" in font[:8]:
        font = font.split("+", 1)[1]
    return font.lower()


def _same_baseline(a: dict, b: dict) -> bool:
    overlap = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
    return overlap > 0.5 * min(a["y1"] - a["y0"], b["y1"] - b["y0"]) and b["x0"] >= a["x1"] - 2


def visual_lines(pages: Sequence[dict[str, Any]]) -> list[VLine]:
    """Stored lines joined into visual lines (same block, same baseline), in reading order."""
    out: list[VLine] = []
    for page in pages:
        raw = page.get("lines") or []
        merged: list[tuple[dict, list[dict]]] = []
        for ln in raw:
            if merged and merged[-1][0]["block"] == ln["block"] and _same_baseline(merged[-1][1][-1], ln):
                merged[-1][1].append(ln)
            else:
                merged.append((ln, [ln]))
        for first, parts in merged:
            # wide gaps between the parts of one baseline: table cells, not words
            gaps = [b["x0"] - a["x1"] for a, b in zip(parts, parts[1:])]
            tabular = sum(g > 2.5 * max(a["size"], 1.0) for g, a in zip(gaps, parts)) >= 1 and len(parts) >= 2
            weight: Counter = Counter()
            bold_chars = 0
            for p in parts:
                n = len(p["text"])
                weight[(round(p["size"], 1), p["font"])] += n
                bold_chars += n if p["bold"] else 0
            (size, font), _ = weight.most_common(1)[0]
            total = sum(len(p["text"]) for p in parts)
            out.append(
                VLine(
                    page=page["page_no"], block=first["block"],
                    x0=min(p["x0"] for p in parts), y0=min(p["y0"] for p in parts),
                    x1=max(p["x1"] for p in parts), y1=max(p["y1"] for p in parts),
                    text=" ".join(p["text"].strip() for p in parts).strip(), size=size,
                    bold=bold_chars * 2 > total, font=font,
                    page_width=page.get("width") or 612.0, page_height=page.get("height") or 792.0,
                    crowded=tabular,
                )
            )
    for i, ln in enumerate(out):
        prev = out[i - 1] if i else None
        nxt = out[i + 1] if i + 1 < len(out) else None
        ln.first_in_block = prev is None or prev.page != ln.page or prev.block != ln.block
        ln.last_in_block = nxt is None or nxt.page != ln.page or nxt.block != ln.block
    return out


def prepare_lines(pages: Sequence[dict[str, Any]]) -> list[VLine]:
    """Visual lines with page furniture and table rows flagged."""
    lines = visual_lines(pages)
    mark_furniture(lines)
    mark_crowded(lines)
    return lines


def mark_crowded(lines: list[VLine]) -> None:
    """Flag lines that share their baseline with other text in the same column (table rows)."""
    by_page: dict[int, list[VLine]] = defaultdict(list)
    for ln in lines:
        # furniture and vertical text (a rotated arXiv stamp) would shadow whole columns
        if not ln.furniture and ln.height < 3 * max(ln.size, 1.0) and sum(map(str.isalnum, ln.text)) >= 2:
            by_page[ln.page].append(ln)
    for page_lines in by_page.values():
        # on a two-column page a left-column heading beside right-column text is normal; where
        # that is unclear (a full-width top, then columns), short lines side by side are cells
        cols = Counter(l.column for l in page_lines)
        total = len(page_lines) or 1
        two_columns = cols[-1] <= 0.3 * total and cols[0] >= 0.2 * total and cols[1] >= 0.2 * total
        ordered = sorted(page_lines, key=lambda l: l.y0)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1:]:
                if b.y0 > a.y1:
                    break
                overlap = min(a.y1, b.y1) - max(a.y0, b.y0)
                if overlap <= 0.5 * min(a.height, b.height):
                    continue
                same_band = a.column == b.column or a.column == -1 or b.column == -1
                # beside each other in different halves: table cells are short, a column's prose is not
                cells = not two_columns and max(len(a.text.split()), len(b.text.split())) < 4
                if same_band or cells:
                    a.crowded = b.crowded = True


# ---------------------------------------------------------------------------------------------
# document statistics and page furniture


@dataclass
class DocStyle:
    body_size: float
    body_font: str
    body_bold: bool


def size_bucket(size: float) -> float:
    return round(size * 2) / 2


def doc_style(lines: Sequence[VLine]) -> DocStyle:
    """Body text's size, font and weight: the most common by characters, counted before the
    reference list when there is one (a long bibliography in small print would win otherwise)."""
    total_chars = sum(len(ln.text) for ln in lines) or 1
    ref_at = None
    seen = 0
    for k, ln in enumerate(lines):
        if BACK_MATTER.match(clean_title(re.sub(r"^[\dIVX.]+\s+", "", ln.text))) and seen > 0.3 * total_chars:
            ref_at = k
        seen += len(ln.text)
    if ref_at is not None:
        lines = lines[:ref_at]
    sizes: Counter = Counter()
    fonts: Counter = Counter()
    bold = 0
    total = 0
    for ln in lines:
        n = len(ln.text)
        sizes[size_bucket(ln.size)] += n
        fonts[font_key(ln.font)] += n
        bold += n if ln.bold else 0
        total += n
    if not total:
        return DocStyle(10.0, "", False)
    body_bucket = sizes.most_common(1)[0][0]
    # the body size itself: the most common exact size inside the winning bucket
    exact: Counter = Counter()
    for ln in lines:
        if size_bucket(ln.size) == body_bucket:
            exact[ln.size] += len(ln.text)
    return DocStyle(exact.most_common(1)[0][0], fonts.most_common(1)[0][0], bold * 2 > total)


_DIGITS = re.compile(r"\d+")


def mark_furniture(lines: Sequence[VLine]) -> None:
    """Flag running headers/footers and page numbers."""
    n_pages = len({ln.page for ln in lines}) or 1
    band: list[VLine] = []
    for ln in lines:
        top = ln.y1 <= ln.page_height * 0.10
        bottom = ln.y0 >= ln.page_height * 0.90
        if top or bottom:
            band.append(ln)
            bare = ln.text.strip()
            if re.fullmatch(r"(page\s*)?[\divxlc]+(\s*(of|/)\s*\d+)?|[-\u2013\u2014\s\d]+", bare, re.I):
                ln.furniture = True
    pages_with: dict[str, set[int]] = defaultdict(set)
    for ln in band:
        pages_with[_DIGITS.sub("#", ln.text.casefold()).strip()].add(ln.page)
    threshold = max(2, math.ceil(0.25 * n_pages)) if n_pages > 2 else 2
    for ln in band:
        if len(pages_with[_DIGITS.sub("#", ln.text.casefold()).strip()]) >= threshold:
            ln.furniture = True
    # a vertical arXiv stamp and similar side-margin lines
    for ln in lines:
        if ln.x1 < ln.page_width * 0.08 or ln.x0 > ln.page_width * 0.94:
            ln.furniture = True

