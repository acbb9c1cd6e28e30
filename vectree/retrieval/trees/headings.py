"""Heading heuristics of the offline extractor: which visual lines are section headings, and at
which level (steps 4-7 of :mod:`vectree.retrieval.trees.offline`).

4. *candidates*: short lines that look unlike body text (bold, larger, all capitals, another font
   family) and stand alone or open a paragraph; run-in numbered leads are cut at the first full
   stop.  Captions, equations, table rows and cells, code, footnotes, e-mail/URL lines and
   reference entries are rejected;
5. *numbered headings*: the highest-weight chain of candidates whose numbers follow each other;
6. *unnumbered headings*: common names in a heading look, and recurring looks followed by text;
7. *levels*: the numbering depth, or the look's strength.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Sequence

from .lines import DocStyle, VLine, font_key, size_bucket
from .normalize import title_key
from .text import ABBREV, BACK_MATTER, MATHY, clean_title, count_letters

# ---------------------------------------------------------------------------------------------
# heading candidates

CAPTION = re.compile(
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
        ln.sig = (size_bucket(ln.size), ln.bold, font_key(ln.font), _is_caps(ln.text))
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
    if font_key(ln.font) != style.body_font and not ln.bold:
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


def _looks_like_title(rest: str, *, strict: bool) -> bool:
    rest = rest.strip()
    if count_letters(rest) < 2 or len(rest) > 160:
        return False
    words = rest.split()
    if len(words) > (18 if not strict else 14):
        return False
    if MATHY.search(rest) or _BAD.search(rest) or _REFERENCE.match(rest):
        return False
    alnum = sum(ch.isalnum() for ch in rest)
    if count_letters(rest) < 0.6 * max(1, alnum) or alnum < 0.7 * len(rest.replace(" ", "")):
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
        text = clean_title(ln.text)
        if not text or CAPTION.match(text):
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
                if _looks_like_title(prefix, strict=False) and not ABBREV.search(prefix + "."):
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
            and _parse_number(clean_title(lines[i].text))[0] is None
            and not _COMMON.match(rest.strip().rstrip(".:"))
        ):
            text = clean_title(text + " " + lines[i].text)
            rest = clean_title(rest + " " + lines[i].text)
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
            weight = 0.9 + (0.5 if font_key(ln.font) != style.body_font else 0.0)
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
                line=i - n_lines, text=text, rest=clean_title(rest), scheme=scheme, number=number,
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
    return numeric <= 0.3 * len(words) and count_letters(ln.text) >= 0.6 * len(ln.text.replace(" ", ""))


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
    return _prose(lines[j]) and not CAPTION.match(lines[j].text.strip())


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
    ref_line = min((c.line for c in chosen.values() if c.common and BACK_MATTER.match(c.rest.strip().rstrip(".:"))), default=None)
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

