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

Where each part lives: this module is the extractor (the outline path, the layout path's
assembly, section text for summaries); :mod:`.lines` the page/line model (steps 1-3);
:mod:`.headings` the heading heuristics (steps 4-7); :mod:`.summaries` page ranges and extractive
summaries; :mod:`.text` the small text predicates they share.
"""


from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

from .headings import CAPTION, find_candidates, select_headings
from .lines import VLine, doc_style, prepare_lines
from .normalize import MatchText, ascii_key, title_key
from .summaries import SUMMARY_TOKENS, document_idf, extractive_summary, section_ranges, split_sentences
from .text import clean_title

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
                    return clean_title(text)
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
        if ln.first_in_block and CAPTION.match(ln.text.strip()):
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
