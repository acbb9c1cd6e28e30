"""The offline section extractor: what every user without an LLM endpoint gets.

Two sources, tried in order:

* ``outline``: the PDF's own table of contents (``get_toc``), when it has at least two entries
  that are not just the paper's title;
* ``layout``: headings recognised from the text lines the parser stored (font size, weight and
  family relative to the body text, position, numbering).

Layout headings, step by step:

1. *visual lines*: stored lines of one block that sit on the same baseline are joined (PyMuPDF
   often splits ``"3.1"`` and ``"Results"``, or every word of justified text, into lines); wide
   gaps between the joined parts mark a table row;
2. *furniture*: running headers/footers and page numbers (lines in the top or bottom band whose
   digit-free text repeats on several pages), side-margin stamps;
3. *body style*: the most common size and font by characters, counted before the reference list;
4. *candidates*: short lines that look unlike body text (bold, larger, all capitals, another font
   family) and stand alone or open a paragraph; run-in numbered leads (``"2.1. Title. Text"``)
   are cut at the first full stop.  Rejected: captions (``Figure 3:``), equations, table rows and
   cells, code, footnotes, e-mail/URL lines, reference entries (``"Rotondo, F. ..."``);
5. *numbered headings* (``3``, ``3.2``, ``3.2.1``, ``A``, ``A.1``, ``Appendix B``, ``IV.`` with
   ``A.`` below): the highest-weight chain of candidates whose numbers follow each other (``3.2``
   may follow ``3.1``, ``3``, ``3.1.4``; one missed number or parent is tolerated) is kept, so
   list items, affiliation marks and references that start with a number drop out;
6. *unnumbered headings*: common names (Abstract, Introduction, Related Work, Conclusion,
   References, Acknowledgments, ...) in a heading look; in a paper without a numbering chain,
   also every candidate whose look recurs (the anchors' look, or a strong look used at least
   twice, or a font-only look used three times) and that is followed by running text, not by
   more labels or a caption (figure text); after the reference list only looks the body's
   headings had count;
7. *levels*: the numbering depth; unnumbered headings take the level of numbered headings in the
   same look, front/back matter is level 1, the common names' look is level 1, weaker looks 2-3.

Section ranges run from the heading's page to the page where the next heading at the same or a
higher level starts (the page before, when that heading opens its page).  Summaries are
extractive: the most central sentences of the section's own text by TF-IDF cosine centrality,
capped in tokens (:func:`extractive_summary`).  Everything here is a few list passes per paper.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from vectree.retrieval.sentences import split_sentences as sentence_spans

from .normalize import MatchText, ascii_key, title_key

SUMMARY_TOKENS = 60  # cap per section summary (word-piece-ish tokens, see _count_tokens)

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


def _font_key(font: str) -> str:
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


def _bucket(size: float) -> float:
    return round(size * 2) / 2


def doc_style(lines: Sequence[VLine]) -> DocStyle:
    """Body text's size, font and weight: the most common by characters, counted before the
    reference list when there is one (a long bibliography in small print would win otherwise)."""
    total_chars = sum(len(ln.text) for ln in lines) or 1
    ref_at = None
    seen = 0
    for k, ln in enumerate(lines):
        if _BACK_MATTER.match(_clean_title(re.sub(r"^[\dIVX.]+\s+", "", ln.text))) and seen > 0.3 * total_chars:
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
        sizes[_bucket(ln.size)] += n
        fonts[_font_key(ln.font)] += n
        bold += n if ln.bold else 0
        total += n
    if not total:
        return DocStyle(10.0, "", False)
    body_bucket = sizes.most_common(1)[0][0]
    # the body size itself: the most common exact size inside the winning bucket
    exact: Counter = Counter()
    for ln in lines:
        if _bucket(ln.size) == body_bucket:
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


# ---------------------------------------------------------------------------------------------
# heading candidates

_CAPTION = re.compile(
    r"^(fig(ure)?s?|tab(le)?s?|algorithm|listing|eq(uation)?|scheme|chart|plate|box|exhibit|supplementary (fig|table))"
    r"\.?\s*[\dIVXivx]+[A-Za-z]?\b",
    re.I,
)
_ARABIC = re.compile(r"^(?:(?:section|chapter)\s+)?(\d{1,2}(?:\s?\.\s?\d{1,2}){0,3})(?:\s?\.(?!\d)|\))?(?:\s+|(?=[A-Z][a-z]))(?=\S)")
_APPENDIX = re.compile(r"^(?:((?i:appendix|appendices|annex))\s+)?([A-H])((?:\.\d{1,2}){0,3})(?:\.|:|\s?[\u2013\u2014-])?\s+(?=\S)")
# "1st", "2nd", "3 %", "10 times", "5 years": a quantity, not a section number
_NOT_A_SECTION = re.compile(r"^\d+(?:(?:st|nd|rd|th)\b|\s?(?:%|x\b|times\b|years?\b|days?\b|months?\b|weeks?\b|hours?\b))", re.I)
_MONO = re.compile(r"mono|courier|consol|inconsolata|\btt|sftt|cmtt|code|menlo", re.I)
_ROMAN = re.compile(r"^(X{0,3}(?:IX|IV|V?I{1,3}|V))\.?\s+(?=[A-Z])")
_SUBLETTER = re.compile(r"^([A-H])\.\s+(?=[A-Z])")
_COMMON = re.compile(
    r"^(abstract|summary|introduction|background|related work|related works|prior work|previous work|"
    r"literature review|preliminaries|problem (statement|formulation|definition)|overview|"
    r"methods?|methodology|materials and methods|methods and materials|approach|proposed method|model|"
    r"experiments?|experimental (setup|results|evaluation|design)|evaluation|results?|results and discussion|"
    r"analysis|discussion|discussions|limitations?|future work|conclusions?|conclusion and future work|"
    r"conclusions and future work|concluding remarks|summary and conclusions?|"
    r"acknowledge?ments?|funding|author contributions|authors'? contributions|competing interests|"
    r"conflicts? of interest|declaration of competing interest|data availability|code availability|"
    r"ethics statement|ethical considerations|broader impact|impact statement|"
    r"references|bibliography|literature cited|works cited|appendix|appendices|supplementary materials?|"
    r"supplementary information|additional files?|abbreviations|nomenclature|author details)$",
    re.I,
)
_RUN_IN_END = re.compile(r"(?<![A-Z])\.\s+(?=[A-Z(\[])")
# front and back matter: level 1 whatever their look
_OUTER = re.compile(
    r"^(abstract|summary|keywords?|acknowledge?ments?|references|bibliography|literature cited|appendix|appendices|"
    r"funding|competing interests|conflicts? of interest|declaration of competing interest|author contributions?|"
    r"authors'? contributions?|author details|additional files?|abbreviations|data availability|code availability|"
    r"supplementary materials?|supplementary information)\W*$",
    re.I,
)
_FRONT = re.compile(r"^(abstract|summary|keywords?)\W*$", re.I)
_BACK_MATTER = re.compile(r"^(references|bibliography|literature cited|works cited)$", re.I)
_MATHY = re.compile(r"[=<>∑∫±×≤≥→←∈∀∃√∂∇]|\b(?:argmax|argmin|log|exp|sin|cos)\s*\(")
_BAD = re.compile(r"@|https?:|www\.|\bdoi\b|arxiv|\bet al\b|©|\bcopyright\b|\bvol\.|\bpp\.", re.I)
# a reference entry: "Rotondo, F. The U-city ...", "Hanzl, M.; Dzik, K.", "Alvarez-Ponce D, Aguade M"
_REFERENCE = re.compile(r"^[^,]{2,40},\s*[A-Z]\.(?:\s?[A-Z]\.)*[,;:]?(?:\s|$)|^[^,\d]{2,30}\s[A-Z]{1,2},\s[^,]{2,30}\s[A-Z]{1,2}[,.]")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10}


def _roman_value(s: str) -> int:
    total, prev = 0, 0
    for ch in reversed(s.upper()):
        v = _ROMAN_VALUES[ch]
        total += -v if v < prev else v
        prev = max(prev, v)
    return total


def _letters(s: str) -> int:
    return sum(map(str.isalpha, s))


def _is_caps(s: str) -> bool:
    letters = "".join(filter(str.isalpha, s))
    return len(letters) >= 4 and sum(map(str.isupper, letters)) >= 0.85 * len(letters)


@dataclass
class Candidate:
    line: int  # index into the visual lines
    text: str  # the heading as printed (continuation lines joined)
    rest: str  # the text after the numbering
    scheme: str | None  # arabic | appendix | roman | subletter | None
    number: tuple = ()
    common: bool = False
    weight: float = 0.0
    signature: tuple = ()
    n_lines: int = 1
    level: int = 0
    next_line: int = -1  # the first line after the heading
    fills_line: bool = False  # as wide as a body line and continued by the paragraph (run-in)
    font_only: bool = False  # differs from body text by font family alone


def _signature(ln: VLine) -> tuple:
    """A line's look: size bucket, bold, font, all capitals (computed once per line)."""
    if ln.sig is None:
        ln.sig = (_bucket(ln.size), ln.bold, _font_key(ln.font), _is_caps(ln.text))
    return ln.sig


def _distinct(ln: VLine, style: DocStyle) -> float:
    """How much a line's look differs from body text (0 = identical)."""
    score = 0.0
    if ln.bold and not style.body_bold:
        score += 1.5
    ratio = ln.size / style.body_size if style.body_size else 1.0
    if ratio >= 1.08:
        score += 1.0 + min(1.0, (ratio - 1.08) * 4)
    if _signature(ln)[3]:
        score += 0.8
    if _font_key(ln.font) != style.body_font and not ln.bold:
        score += 0.6
    return score


def _parse_number(text: str) -> tuple[str | None, tuple, str]:
    m = _ARABIC.match(text)
    if m:
        parts = tuple(int(p) for p in re.split(r"\s?\.\s?", m.group(1)))
        rest = text[m.end():]
        if all(0 <= p <= 40 for p in parts) and not _NOT_A_SECTION.match(text):
            return "arabic", parts, rest
    m = _APPENDIX.match(text)
    if m:
        letter = ord(m.group(2).upper()) - 64
        subs = tuple(int(p) for p in m.group(3).split(".") if p)
        rest = text[m.end():]
        explicit = bool(m.group(1))
        # "A New Method" is an article, not appendix A: without "Appendix" or a sub-number, the
        # letter must be followed by a capitalised word and the chain decides later
        if explicit or subs or rest[:1].isupper():
            return ("appendix" if explicit or subs else "appendix?"), (letter,) + subs, rest
    m = _ROMAN.match(text)
    if m and m.group(1):
        rest = text[m.end():]
        if "." in text[: m.end()] or _is_caps(rest):
            return "roman", (_roman_value(m.group(1)),), rest
    m = _SUBLETTER.match(text)
    if m:
        return "subletter", (ord(m.group(1)) - 64,), text[m.end():]
    return None, (), text


def _clean_title(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().rstrip(":").strip()


def _looks_like_title(rest: str, *, strict: bool) -> bool:
    rest = rest.strip()
    if _letters(rest) < 2 or len(rest) > 160:
        return False
    words = rest.split()
    if len(words) > (18 if not strict else 14):
        return False
    if _MATHY.search(rest) or _BAD.search(rest) or _REFERENCE.match(rest):
        return False
    alnum = sum(ch.isalnum() for ch in rest)
    if _letters(rest) < 0.6 * max(1, alnum) or alnum < 0.7 * len(rest.replace(" ", "")):
        return False
    if sum(w.replace(".", "").replace(",", "").isdigit() for w in words) >= 2:
        return False
    first = rest[0]
    if strict and not (first.isupper() or first.isdigit() or first in "[(\"'"):
        return False
    if rest.endswith((",", ";", "-")) or (strict and rest.endswith(".") and not rest.endswith("..")):
        return False
    return True


def find_candidates(lines: Sequence[VLine], style: DocStyle) -> list[Candidate]:
    """Every line that could be a heading, with its numbering and a confidence weight."""
    out: list[Candidate] = []
    i = 0
    n = len(lines)
    while i < n:
        ln = lines[i]
        i += 1
        if ln.furniture or ln.crowded:
            continue
        text = _clean_title(ln.text)
        if not text or _CAPTION.match(text):
            continue
        if ln.size < style.body_size * 0.75:
            continue
        if _MONO.search(ln.font or "") and not ln.bold:
            continue  # code listings (a bold heading may name code: "3 Design of papermage")
        scheme, number, rest = _parse_number(text)
        distinct = _distinct(ln, style)
        if scheme == "arabic" and not (ln.bold or _is_caps(text)):
            glued = re.match(r"^\d+[A-Za-z]", text) is not None
            if (glued and len(number) == 1) or ln.size < style.body_size * 0.95:
                continue  # a footnote ("8We implement ...") or small print, not a section
        run_in = False
        if scheme == "arabic" and ln.first_in_block and len(rest.split()) > 3:
            # a run-in heading opening a paragraph: "2.1. High-degree centrality. In this method, ..."
            m = _RUN_IN_END.search(rest[:140])
            if m and 1 <= len(rest[: m.start()].split()) <= 16:
                prefix = rest[: m.start()]
                if _looks_like_title(prefix, strict=False) and not _ABBREV.search(prefix + "."):
                    cut = len(text) - len(rest) + m.start()
                    text, rest, run_in = text[:cut], prefix, True
        # continuation: a heading wrapped onto the next line in the same look
        n_lines = 1
        while (
            not run_in and i < n and n_lines < 3 and lines[i].page == ln.page
            and (not lines[i - 1].last_in_block or (lines[i].last_in_block and abs(lines[i].x0 - ln.x0) < 4 * ln.size))
            and _signature(lines[i]) == _signature(ln) and distinct >= 1.0
            and 0 <= lines[i].y0 - lines[i - 1].y1 < ln.height * 0.8
            and len(text.split()) + len(lines[i].text.split()) <= 22
            and _parse_number(_clean_title(lines[i].text))[0] is None
            and not _COMMON.match(rest.strip().rstrip(".:"))
        ):
            text = _clean_title(text + " " + lines[i].text)
            rest = _clean_title(rest + " " + lines[i].text)
            n_lines += 1
            i += 1
        nxt = lines[i] if i < n else None
        # alone in its block, or followed by a line in another look
        alone = ln.first_in_block and (ln.last_in_block or n_lines > 1)
        standalone = alone or (nxt is not None and nxt.page == ln.page and _signature(nxt) != _signature(lines[i - 1]))
        common = bool(_COMMON.match(re.sub(r"[.:]$", "", rest.strip())))
        run_in_abstract = bool(re.match(r"^abstract\s*[.:\u2014\u2013-]\s*\S", text, re.I)) and (ln.bold or distinct >= 0.8)
        if run_in_abstract:
            text = rest = "Abstract"
            common = True
            standalone = True
        if not _looks_like_title(rest, strict=scheme is None):
            continue
        weight = distinct + (0.8 if standalone else 0.0) + (0.6 if common else 0.0)
        if not ln.first_in_block and not standalone:
            weight -= 1.0
        if run_in:
            # the line's look is mostly its paragraph's; a bold/italic lead-in shows as another font
            weight = 0.9 + (0.5 if _font_key(ln.font) != style.body_font else 0.0)
        font_only = False
        if scheme is None and not common and distinct < 1.0:
            # only the font family differs (a sans subheading over serif text): accept a short
            # line that opens a paragraph and is followed by body text; the style must recur
            prev = lines[i - n_lines - 1] if i - n_lines - 1 >= 0 else None
            opens = (
                ln.first_in_block or prev is None or prev.page != ln.page
                or prev.text.rstrip().endswith((".", ":", "?", "!")) or _distinct(prev, style) >= 1.0
            )
            if not (
                distinct >= 0.6 and opens and len(rest.split()) <= 10 and not rest.endswith((".", ",", ";", ":"))
                and nxt is not None and _signature(nxt)[2] != _signature(ln)[2] and _prose(nxt)
                and (ln.x1 - ln.x0) < 0.85 * max(1.0, nxt.x1 - nxt.x0)
            ):
                continue
            font_only = True
        if weight < 0.8:
            continue
        # a run-in lead ("Random Retrieval Ablation: When using ...") fills its line and goes on
        fills = (
            not ln.last_in_block and nxt is not None and nxt.page == ln.page
            and (ln.x1 - ln.x0) >= 0.9 * (nxt.x1 - nxt.x0) and (nxt.x1 - nxt.x0) > 0
            and re.search(r"\w[.:\u2014]\s+\S+\s+\S+", rest) is not None
        )
        out.append(
            Candidate(
                line=i - n_lines, text=text, rest=_clean_title(rest), scheme=scheme, number=number,
                common=common, weight=weight, signature=_signature(ln), n_lines=n_lines,
                next_line=i, fills_line=fills and not run_in, font_only=font_only,
            )
        )
    return out


def _prose(ln: VLine) -> bool:
    """A line of running text (not a table row, not a formula)."""
    words = ln.text.split()
    if len(words) < 4:
        return False
    numeric = sum(bool(re.fullmatch(r"[-+±−]?[\d.,%()]+[*†]?", w)) for w in words)
    return numeric <= 0.3 * len(words) and _letters(ln.text) >= 0.6 * len(ln.text.replace(" ", ""))


def _followed_by_text(c: Candidate, lines: Sequence[VLine], starts: dict[int, Candidate]) -> bool:
    """Is the heading followed by running text, or by a confident heading in another look (a
    parent before its first child)?  Labels in a figure are followed by more labels or by the
    figure's caption."""
    j = c.next_line
    while j < len(lines) and lines[j].furniture:
        j += 1
    if j >= len(lines):
        return True
    nxt = starts.get(j)
    if nxt is not None:
        return nxt.signature != c.signature and (nxt.scheme is not None or nxt.weight >= 1.6 or nxt.font_only)
    return _prose(lines[j]) and not _CAPTION.match(lines[j].text.strip())


# ---------------------------------------------------------------------------------------------
# choosing headings


def _follows(p: tuple, q: tuple) -> bool:
    """May numbering ``q`` come right after ``p`` (one missed number tolerated)?"""
    if len(q) == len(p) + 1 and q[:-1] == p and q[-1] in (1, 2):
        return True
    k = len(q)
    if k <= len(p) and q[:-1] == p[: k - 1] and q[-1] in (p[k - 1] + 1, p[k - 1] + 2):
        return True
    # the first child of the next section when that section's own heading was missed: 2.3 -> 3.1
    for j in range(1, len(p) + 1):
        if len(q) == j + 1 and q[: j - 1] == p[: j - 1] and q[j - 1] == p[j - 1] + 1 and q[j] == 1:
            return True
    return False


def _starts(q: tuple) -> bool:
    return q[0] <= 2 and all(x in (0, 1) for x in q[1:])


def best_chain(cands: Sequence[Candidate], *, start_ok=_starts) -> list[Candidate]:
    """The highest-weight subsequence whose numbers follow each other (:func:`_follows`)."""
    if not cands:
        return []
    score = [0.0] * len(cands)
    back: list[int | None] = [None] * len(cands)
    for j, c in enumerate(cands):
        best, arg = (c.weight if start_ok(c.number) else -math.inf), None
        for i in range(j):
            if score[i] > -math.inf and _follows(cands[i].number, c.number) and score[i] + c.weight > best:
                best, arg = score[i] + c.weight, i
        score[j], back[j] = best, arg
    end = max(range(len(cands)), key=lambda j: score[j])
    if score[end] == -math.inf:
        return []
    chain = []
    j: int | None = end
    while j is not None:
        chain.append(cands[j])
        j = back[j]
    return chain[::-1]


def _roman_chain(cands: Sequence[Candidate]) -> list[Candidate]:
    romans = [c for c in cands if c.scheme == "roman"]
    top = best_chain(romans, start_ok=lambda q: q[0] <= 2)
    if len(top) < 2:
        return []
    out: list[Candidate] = []
    for k, head in enumerate(top):
        head.level = 1
        out.append(head)
        end = top[k + 1].line if k + 1 < len(top) else math.inf
        subs = [c for c in cands if c.scheme == "subletter" and head.line < c.line < end]
        for s in best_chain(subs, start_ok=lambda q: q[0] == 1):
            s.level = 2
            out.append(s)
    return out


def select_headings(cands: list[Candidate], lines: Sequence[VLine], style: DocStyle, *, title: str = "") -> list[Candidate]:
    """Pick the headings among the candidates and give each a level (see the module docstring)."""
    arabic = best_chain([c for c in cands if c.scheme == "arabic"])
    roman = _roman_chain(cands)
    main: list[Candidate]
    if sum(c.weight for c in roman) > sum(c.weight for c in arabic):
        main = roman
    else:
        main = arabic
        for c in main:
            c.level = len(c.number)
    if len(main) < 2:
        main = []
    chosen: dict[int, Candidate] = {c.line: c for c in main}
    main_sigs: dict[tuple, Counter] = defaultdict(Counter)
    for c in main:
        main_sigs[c.signature][c.level] += 1
    # appendices: lettered headings after the last top-level section of the main chain
    last_top = max((c.line for c in main if c.level == 1), default=-1)
    apx = [c for c in cands if c.scheme in ("appendix", "appendix?") and c.line > last_top]
    if apx:
        top_sig = {s for s, lv in main_sigs.items() if lv.most_common(1)[0][0] == 1}
        usable = [c for c in apx if c.scheme == "appendix" or not main or c.signature in top_sig or c.weight >= 2.5]
        chain = best_chain(usable, start_ok=lambda q: q[0] == 1 and all(x in (0, 1) for x in q[1:]))
        if len(chain) >= 2 or (chain and chain[0].scheme == "appendix"):
            for c in chain:
                c.level = len(c.number)
                chosen[c.line] = c
    first_anchor = min(
        [c.line for c in cands if c.common] + [c.line for c in main], default=len(lines)
    )
    title_key_ = title_key(title) if title else ""
    starts = {c.line: c for c in cands}

    def heading_like(c: Candidate) -> bool:
        # table heads and run-in paragraph leads look like headings but are not followed by text
        # of their own or share their line with it
        return not c.fills_line and _followed_by_text(c, lines, starts)

    # unnumbered common headings in a heading style
    for c in cands:
        if c.line in chosen or c.scheme not in (None, "appendix?"):
            continue
        if c.common and (c.weight >= 1.6 or c.signature in main_sigs) and heading_like(c):
            chosen[c.line] = c
    if not main:
        # the abstract's look is the front matter's, often shared by table heads: not an anchor
        anchors = [c for c in chosen.values() if c.common and not _FRONT.match(c.rest)]
        anchor_sigs = Counter(c.signature for c in anchors)
        sig_members: dict[tuple, list[Candidate]] = defaultdict(list)
        for c in cands:
            if c.scheme in (None, "appendix?") and c.line >= first_anchor:
                sig_members[c.signature].append(c)
        for sig, members in sig_members.items():
            if sig[0] < style.body_size * 0.9 and not sig[1]:
                continue
            members = [m for m in members if heading_like(m)]
            if members and all(m.font_only for m in members):
                recurring = len(members) >= 3
            else:
                recurring = anchor_sigs.get(sig, 0) >= 1 or (
                    len(members) >= 2 and sum(m.weight for m in members) / len(members) >= 2.0
                )
            if not recurring:
                continue
            for c in members:
                ck = title_key(c.text)
                if c.line in chosen or (title_key_ and ck and ck in title_key_ and len(ck) >= 0.5 * len(title_key_)):
                    continue  # (a piece of) the paper's title, e.g. repeated as a running head
                if (c.weight >= 1.6 or c.font_only) and _looks_like_title(c.rest, strict=True):
                    chosen[c.line] = c
    # in and after the reference list, entries ("7. Rotondo, F. ...", "Darriba D, Taboada GL ...")
    # mimic headings; what follows it counts only in a look the body's headings had
    ref_line = min((c.line for c in chosen.values() if c.common and _BACK_MATTER.match(c.rest.strip().rstrip(".:"))), default=None)
    if ref_line is not None:
        before = {c.signature for c in chosen.values() if c.line < ref_line}
        for line, c in list(chosen.items()):
            if line > ref_line and not c.common and c.scheme != "appendix" and c.signature not in before:
                del chosen[line]
    headings = sorted(chosen.values(), key=lambda c: c.line)
    _assign_levels(headings, main_sigs, style)
    return headings


def _strength(sig: tuple) -> tuple:
    return (sig[0], sig[1], sig[3])


def _assign_levels(headings: list[Candidate], main_sigs: dict[tuple, Counter], style: DocStyle) -> None:
    """Levels for unnumbered headings: the level of numbered headings with the same look; front
    and back matter at level 1; the look of the common section names (Introduction, Methods, ...)
    at level 1, stronger looks at 1 too, weaker ones at 2 and 3 by strength."""
    unnumbered = [h for h in headings if h.level == 0]
    if not unnumbered:
        return
    sig_level = {s: lv.most_common(1)[0][0] for s, lv in main_sigs.items()}
    anchors = Counter(h.signature for h in unnumbered if h.common and not _OUTER.match(h.rest))
    if not anchors:
        anchors = Counter(h.signature for h in unnumbered if h.common)
    if anchors:
        top = anchors.most_common(1)[0][0]
    else:
        top = max((h.signature for h in unnumbered), key=_strength)
    weaker = sorted(
        {h.signature for h in unnumbered
         if h.signature not in sig_level and h.signature != top and _strength(h.signature) <= _strength(top)},
        key=_strength, reverse=True,
    )
    for h in unnumbered:
        if h.signature in sig_level:
            h.level = sig_level[h.signature]
        elif _OUTER.match(h.rest) or h.signature == top or _strength(h.signature) > _strength(top):
            h.level = 1
        else:
            h.level = 2 + min(1, weaker.index(h.signature))


# ---------------------------------------------------------------------------------------------
# ranges and summaries


def section_ranges(starts: Sequence[tuple[int, int, bool]], n_pages: int) -> list[tuple[int, int]]:
    """``(page_start, page_end)`` for headings given as ``(page, level, opens_page)`` in order:
    a section ends where the next heading at its level or above starts (the page before when that
    heading is the first thing on its page), nested inside its parent."""
    out: list[tuple[int, int]] = []
    for i, (page, level, _) in enumerate(starts):
        end = n_pages
        for page2, level2, opens in starts[i + 1:]:
            if level2 <= level:
                end = page2 - 1 if opens and page2 - 1 >= page else page2
                break
        out.append((page, max(page, min(end, n_pages))))
    return out


# abbreviations that end a piece of text without ending its sentence (headings, summaries)
_ABBREV = re.compile(
    r"(?:\b(?:et al|e\.g|i\.e|cf|fig|figs|eq|eqs|sec|secs|tab|ref|refs|vs|no|approx|resp|incl|al|dr|mr|ms|prof|st|vol|pp|ch|ca|viz|etc)|\b[A-Z])\.$",
    re.I,
)
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_WORD_RE = re.compile(r"[a-z][a-z0-9-]{2,}")
_STOP = frozenset(
    "the and for with that this from are was were have has had been which their these those using used use "
    "can may also such than into our its not but all each more most other one two three based between both "
    "over under when where while how what who will would could should there they them then thus however "
    "about after before during within without being very via per any some only further".split()
)


def split_sentences(text: str) -> list[str]:
    """The sentences of a block of page text, by the project's one rule
    (:mod:`vectree.retrieval.sentences`, pysbd), after joining hyphenated line breaks and folding
    the layout's line breaks into spaces (a block is one paragraph).  A piece that ends in a
    reference abbreviation pysbd does not know ("Tab. 2") is joined to the next one: a summary
    must not stop at "see Tab."."""
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text)
    text = re.sub(r"\s+", " ", text).strip()
    spans: list[list[int]] = []
    for a, b in sentence_spans(text):
        if spans and _ABBREV.search(text[spans[-1][0]:spans[-1][1]]):
            spans[-1][1] = b
        else:
            spans.append([a, b])
    return [text[a:b] for a, b in spans]


def _count_tokens(text: str) -> int:
    return len(_TOKEN_RE.findall(text))


_NOT_PROSE = re.compile(r"^(key\s?words?|index terms|ccs concepts|general terms|categories and subject|doi|received|accepted|correspondence|e-?mail)\b", re.I)


def _good_sentence(s: str) -> bool:
    if _NOT_PROSE.match(s):
        return False  # keyword lists and article furniture are not what a section says
    words = s.split()
    if not 6 <= len(words) <= 70:
        return False
    letters = _letters(s)
    return letters >= 0.6 * len(s.replace(" ", "")) and not _MATHY.search(s[:1]) and not s[0].islower()


def _truncate(text: str, max_tokens: int) -> str:
    if _count_tokens(text) <= max_tokens:
        return text
    words = text.split()
    out: list[str] = []
    for w in words:
        if _count_tokens(" ".join(out + [w])) > max_tokens - 1:
            break
        out.append(w)
    return " ".join(out).rstrip(",;:") + " …"


def extractive_summary(
    sentences: Sequence[str], idf: dict[str, float], *, max_tokens: int = SUMMARY_TOKENS, max_sentences: int = 2
) -> str:
    """The most central sentences (TF-IDF cosine degree centrality) in document order, capped."""
    cands = [s for s in sentences if _good_sentence(s)] or [s for s in sentences if len(s.split()) >= 4]
    if not cands:
        return ""
    if len(cands) == 1:
        return _truncate(cands[0], max_tokens)
    cands = cands[:80]  # long sections: the opening is where topic sentences are
    vecs = []
    for s in cands:
        tf = Counter(w for w in _WORD_RE.findall(s.lower()) if w not in _STOP)
        v = {w: (1 + math.log(c)) * idf.get(w, 1.0) for w, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vecs.append({w: x / norm for w, x in v.items()})
    # degree centrality: the summed cosine to every other sentence is the dot product with the
    # sum of all vectors minus the sentence's own (unit) length, so one pass over a centroid
    centroid: Counter = Counter()
    for v in vecs:
        centroid.update(v)
    centrality = []
    for i, v in enumerate(vecs):
        total = sum(x * centroid[w] for w, x in v.items()) - (1.0 if v else 0.0)
        # a mild preference for early sentences: topic sentences open sections
        centrality.append(total / (len(vecs) - 1) + 0.05 / (1 + i))
    order = sorted(range(len(cands)), key=lambda i: -centrality[i])
    picked: list[int] = []
    used = 0
    for i in order:
        t = _count_tokens(cands[i])
        if picked and used + t > max_tokens:
            continue
        picked.append(i)
        used += t
        if len(picked) >= max_sentences or used >= max_tokens:
            break
    return _truncate(" ".join(cands[i] for i in sorted(picked)), max_tokens)


def document_idf(texts: Iterable[str]) -> dict[str, float]:
    df: Counter = Counter()
    n = 0
    for t in texts:
        n += 1
        df.update(set(_WORD_RE.findall(t.lower())))
    return {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}


# ---------------------------------------------------------------------------------------------
# the extractor


@dataclass
class OfflineResult:
    entries: list[dict[str, Any]]  # title, level, page_start, page_end, summary
    source: str  # outline | layout
    notes: list[str] = field(default_factory=list)


def _outline_entries(outline: Sequence[Sequence[Any]], n_pages: int, title: str) -> list[dict[str, Any]]:
    items = [(int(lv), str(t).strip(), int(p)) for lv, t, p in outline if str(t).strip()]
    if not items:
        return []
    top = min(lv for lv, _, _ in items)
    tops = [it for it in items if it[0] == top]
    # a single top-level entry that is the paper itself wraps everything: its children are the sections
    if len(tops) == 1 and items[0][0] == top and len(items) > 1 and title and (
        title_key(items[0][1]) and (title_key(items[0][1]) in title_key(title) or title_key(title) in title_key(items[0][1]))
    ):
        items = items[1:]
        top = min(lv for lv, _, _ in items)
    return [{"title": t, "level": lv - top + 1, "page_start": p, "page_end": p} for lv, t, p in items]


def _locate(lines: Sequence[VLine], by_page: dict[int, list[int]], title: str, page: int) -> int | None:
    """Index of the visual line where a heading (from an outline) is printed on ``page`` or next to it."""
    key = MatchText.of(title)
    if not key.joined:
        return None
    for p in (page, page + 1, page - 1):
        idxs = by_page.get(p, [])
        for k, li in enumerate(idxs):
            window = " \n".join(lines[j].text for j in idxs[k:k + 3])
            hits = MatchText.of(window).find(key)
            if hits and hits[0][0] == 0:
                return li
    return None


def _printed_title(lines: Sequence[VLine], by_page: dict[int, list[int]], title: str, page: int) -> str | None:
    """The heading as printed, for an outline title that lost glyphs the page has (an outline
    writes "3.3 -multiplier analysis" where the page prints "3.3. β-multiplier analysis"): a line on
    ``page`` or next to it whose letters and digits, outside ASCII ignored, equal the title's."""
    want = ascii_key(title)
    if len(want) < 8:
        return None
    for p in (page, page + 1, page - 1):
        idxs = by_page.get(p, [])
        for k in range(len(idxs)):
            text = ""
            for j in idxs[k:k + 3]:
                text = f"{text} {lines[j].text}".strip()
                got = ascii_key(text)
                if got == want:
                    return _clean_title(text)
                if len(got) > len(want):
                    break
    return None


def extract_offline(
    record: dict[str, Any], pages: Sequence[dict[str, Any]], *, use_outline: bool = True,
    summary_tokens: int = SUMMARY_TOKENS,
) -> OfflineResult:
    """Section entries for one paper without an LLM (see the module docstring).

    ``record`` is the paper record (``title``, ``n_pages``, ``outline``); ``pages`` are the stored
    page rows with their lines.  ``use_outline=False`` forces the layout path (the benchmark hides
    outlines this way).
    """
    n_pages = len(pages)
    title = record.get("title") or ""
    lines = prepare_lines(pages)
    by_page: dict[int, list[int]] = defaultdict(list)
    for i, ln in enumerate(lines):
        by_page[ln.page].append(i)
    notes: list[str] = []
    starts: list[int | None]
    outline = record.get("outline") or []
    entries = _outline_entries(outline, n_pages, title) if use_outline else []
    if len(entries) >= 2:
        source = "outline"
        for e in entries:
            if _locate(lines, by_page, e["title"], e["page_start"]) is None:
                printed = _printed_title(lines, by_page, e["title"], e["page_start"])
                if printed:
                    e["title"] = printed
        starts = [_locate(lines, by_page, e["title"], e["page_start"]) for e in entries]
        heading_lines = set()
        opens = [s is not None and by_page[lines[s].page][0] == s for s in starts]
        # an outline destination is the page the heading is on; keep it, the verifier checks it
        ranges = section_ranges([(e["page_start"], e["level"], o) for e, o in zip(entries, opens)], n_pages)
    else:
        if outline and use_outline:
            notes.append("outline too small to use; headings from the layout")
        source = "layout"
        style = doc_style(lines)
        cands = find_candidates(lines, style)
        heads = select_headings(cands, lines, style, title=title)
        entries = [{"title": h.text, "level": h.level, "page_start": lines[h.line].page} for h in heads]
        starts = [h.line for h in heads]
        heading_lines = {h.line + k for h in heads for k in range(h.n_lines)}
        opens = []
        for h in heads:
            page_idx = [j for j in by_page[lines[h.line].page] if not lines[j].furniture]
            opens.append(bool(page_idx) and page_idx[0] == h.line)
        ranges = section_ranges([(e["page_start"], e["level"], o) for e, o in zip(entries, opens)], n_pages)
    for e, (ps, pe) in zip(entries, ranges):
        e["page_start"], e["page_end"] = ps, pe
    _add_summaries(entries, starts, lines, summary_tokens, heading_lines)
    return OfflineResult(entries=entries, source=source, notes=notes)


def _block_texts(lines: Sequence[VLine], lo: int, hi: int, skip: set[int]) -> list[str]:
    """Running text of lines ``lo..hi-1`` as one string per block (so that a sentence never spans
    a heading, a caption or a table), leaving out headings, furniture, table rows and captions."""
    out: list[str] = []
    current: list[str] = []
    key = None
    caption_block = None
    for i in range(lo, min(hi, len(lines))):
        ln = lines[i]
        bk = (ln.page, ln.block)
        if ln.first_in_block and _CAPTION.match(ln.text.strip()):
            caption_block = bk
        if i in skip or ln.furniture or ln.crowded or bk == caption_block:
            if current:
                out.append("\n".join(current))
                current = []
            continue
        if bk != key and current:
            out.append("\n".join(current))
            current = []
        key = bk
        current.append(ln.text)
    if current:
        out.append("\n".join(current))
    return out


def _add_summaries(entries: list[dict[str, Any]], starts: Sequence[int | None], lines: Sequence[VLine],
                   max_tokens: int, heading_lines: set[int] | None = None) -> None:
    """Each section's own text (after its heading, up to the next heading of any level; a parent
    with hardly any text of its own reads on through its children) -> an extractive summary."""
    if not entries:
        return
    skip = set(heading_lines or ()) | {s for s in starts if s is not None}
    located = sorted({s for s in starts if s is not None})
    blocks_per_entry: list[list[str]] = []
    for k, e in enumerate(entries):
        s = starts[k]
        if s is None:  # not located: the text of its first page
            page_idx = [i for i, ln in enumerate(lines) if ln.page == e["page_start"]]
            lo, hi = (page_idx[0], page_idx[-1] + 1) if page_idx else (0, 0)
            blocks_per_entry.append(_block_texts(lines, lo, hi, skip))
            continue
        nxt = next((x for x in located if x > s), len(lines))
        blocks = _block_texts(lines, s + 1, nxt, skip)
        if sum(len(b) for b in blocks) < 200:
            end = len(lines)
            for j in range(k + 1, len(entries)):
                if entries[j]["level"] <= e["level"] and starts[j] is not None:
                    end = starts[j]
                    break
            blocks = _block_texts(lines, s + 1, end, skip)
        blocks_per_entry.append(blocks[:60])
    sentence_lists = [[sent for b in blocks for sent in split_sentences(b)] for blocks in blocks_per_entry]
    idf = document_idf(s for sl in sentence_lists for s in sl)
    for e, sl in zip(entries, sentence_lists):
        e["summary"] = extractive_summary(sl, idf, max_tokens=max_tokens)
