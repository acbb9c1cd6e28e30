"""PDF parsing with PyMuPDF: page text in reading order, text lines with layout, paper metadata.

The one entry point is :func:`parse_pdf`.  It never raises for a bad file: it returns a
:class:`ParsedPaper` whose ``status`` says what happened (``ok``, ``no_text``, ``failed``,
``skipped``) and whose ``error`` says why, so one broken PDF never stops a corpus run.
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import pymupdf

PARSER_VERSION = "pdf-2"  # pdf-2: ligatures expanded (TEXT_PRESERVE_LIGATURES off)

# Text-layer pages with fewer characters than this on average are treated as scans.
MIN_CHARS_PER_PAGE = 40

# Ligatures are expanded (TEXT_PRESERVE_LIGATURES off): LaTeX papers set "ff", "fi", "fl" as one
# glyph (U+FB00..), and kept as such "oﬀensive" matches neither the BM25 term "offensive" nor
# MiniLM's vocabulary, so every word with a ligature was invisible to search on real PDFs.
_DICT_FLAGS = ((pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES & ~pymupdf.TEXT_PRESERVE_LIGATURES)
               | pymupdf.TEXT_MEDIABOX_CLIP)
_BOLD_FONT_RE = re.compile(r"bold|black|heavy|semibold|demi|medi\b|cmbx|\.b\b|,b\b|-b\b", re.I)
_ABSTRACT_RE = re.compile(r"^\s*(a\s?b\s?s\s?t\s?r\s?a\s?c\s?t)\b[\s.:\u2014\u2013-]*", re.I)
_ABSTRACT_END_RE = re.compile(
    r"^\s*((1|I)\.?\s+)?(introduction|keywords|key\s*words|index terms|categories and subject|general terms|ccs concepts)\b",
    re.I,
)
_BAD_TITLE_RE = re.compile(
    r"(^untitled|microsoft word|template|^proceedings of|www\.|https?:|\.dvi$|\.pdf$|\.docx?$|\.tex$|^title$|^paper$|^\W*$)",
    re.I,
)

pymupdf.TOOLS.mupdf_display_errors(False)
pymupdf.TOOLS.mupdf_display_warnings(False)


@dataclass
class ParsedPaper:
    """What :func:`parse_pdf` found in one file."""

    path: str
    status: str  # ok | no_text | failed | skipped
    error: str | None = None
    n_pages: int = 0
    pages: list[dict[str, Any]] = field(default_factory=list)  # rows of store.PAGES_SCHEMA
    title: str = ""
    authors: list[str] = field(default_factory=list)
    abstract: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    outline: list[list[Any]] = field(default_factory=list)  # [[level, title, page], ...] from the PDF
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    streamed_chars: int | None = None  # set when pages went to ``on_page`` instead of ``pages``

    @property
    def n_chars(self) -> int:
        if self.streamed_chars is not None:
            return self.streamed_chars
        return sum(len(p["text"]) for p in self.pages)


@lru_cache(maxsize=4096)
def _bold_font(font: str) -> bool:
    return bool(_BOLD_FONT_RE.search(font))


def _line_record(line: dict, block_no: int) -> dict[str, Any] | None:
    """One text line: its text, bbox, the font size that covers most of its characters, and
    whether most of its characters are bold (by flag or by font name, since many PDFs only
    say "bold" in the font name, e.g. CMBX10 or NimbusRomNo9L-Medi)."""
    weight: dict[float, int] = {}
    bold_chars = total = 0
    longest, longest_n = None, -1
    parts = []
    for s in line["spans"]:
        t = s["text"]
        parts.append(t)
        n = len(t) - t.count(" ")
        if n <= 0:
            continue
        size = s["size"]
        weight[size] = weight.get(size, 0) + n
        if s["flags"] & 16 or _bold_font(s["font"]):
            bold_chars += n
        total += n
        if n > longest_n:
            longest, longest_n = s, n
    if not total:
        return None
    x0, y0, x1, y1 = line["bbox"]
    return {
        "block": block_no,
        "x0": x0,
        "y0": y0,
        "x1": x1,
        "y1": y1,
        "text": "".join(parts).strip(),
        "size": round(max(weight, key=weight.__getitem__), 1),
        "bold": bold_chars * 2 > total,
        "font": longest["font"],
    }


def order_blocks(blocks: list[dict], page_width: float) -> list[dict]:
    """Order text blocks for reading: full-width blocks cut the page into bands; within a band,
    the left column is read before the right one.

    PyMuPDF's native order follows the content stream, which is right for most LaTeX output and
    wrong for many word processors; a plain top-to-bottom sort interleaves two columns.  Bands
    handle both, and single-column pages reduce to a top-to-bottom sort.
    """
    if not blocks:
        return []
    mid = page_width / 2
    slack = page_width * 0.04

    def column(b: dict) -> int:
        x0, _, x1, _ = b["bbox"]
        if x1 <= mid + slack:
            return 0
        if x0 >= mid - slack:
            return 1
        return -1  # spans the gutter

    ordered: list[dict] = []
    band: list[dict] = []

    def flush() -> None:
        band.sort(key=lambda b: (column(b), b["bbox"][1], b["bbox"][0]))
        ordered.extend(band)
        band.clear()

    for b in sorted(blocks, key=lambda b: (b["bbox"][1], b["bbox"][0])):
        if column(b) == -1:
            flush()
            ordered.append(b)
        else:
            band.append(b)
    flush()
    return ordered


def _split_straddling_blocks(blocks: list[dict], page_width: float) -> list[dict]:
    """MuPDF sometimes groups lines of both columns into one block when they share baselines;
    split such a block into its left and right halves so that columns can be ordered."""
    mid = page_width / 2
    out = []
    for b in blocks:
        lines = b.get("lines", [])
        left = [l for l in lines if l["bbox"][2] <= mid]
        right = [l for l in lines if l["bbox"][0] >= mid]
        if left and right and len(left) + len(right) == len(lines):
            for part in (left, right):
                x0 = min(l["bbox"][0] for l in part)
                y0 = min(l["bbox"][1] for l in part)
                x1 = max(l["bbox"][2] for l in part)
                y1 = max(l["bbox"][3] for l in part)
                out.append({**b, "lines": part, "bbox": (x0, y0, x1, y1)})
        else:
            out.append(b)
    return out


def extract_page(page: pymupdf.Page) -> dict[str, Any]:
    """One page as a ``PAGES_SCHEMA`` row: reading-order text and every text line with layout."""
    data = page.get_text("dict", flags=_DICT_FLAGS)
    blocks = _split_straddling_blocks([b for b in data["blocks"] if b.get("type", 0) == 0], page.rect.width)
    lines_out: list[dict[str, Any]] = []
    block_texts: list[str] = []
    for block_no, block in enumerate(order_blocks(blocks, page.rect.width)):
        texts = []
        for line in block["lines"]:
            rec = _line_record(line, block_no)
            if rec is not None:
                lines_out.append(rec)
                texts.append(rec["text"])
        if texts:
            block_texts.append("\n".join(texts))
    return {
        "page_no": page.number + 1,
        "width": page.rect.width,
        "height": page.rect.height,
        "text": "\n\n".join(block_texts),
        "lines": lines_out,
    }


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text or "")).strip()


def _plausible_title(title: str) -> bool:
    t = _clean(title)
    if len(t) < 8 or len(t) > 300 or _BAD_TITLE_RE.search(t):
        return False
    letters = sum(c.isalpha() for c in t)
    return letters >= 0.6 * len(t.replace(" ", "")) and len(t.split()) >= 2


def detect_title(pages: list[dict[str, Any]], metadata: dict[str, Any]) -> str:
    """The paper's title: PDF metadata when it looks like a title, else the largest text near the
    top of the first page (consecutive lines of that size joined)."""
    if _plausible_title(metadata.get("title", "")):
        return _clean(metadata["title"])
    for page in pages[:2]:
        lines = [l for l in page["lines"] if l["y0"] < page["height"] * 0.6 and len(l["text"]) > 2]
        if not lines:
            continue
        sizes = sorted({l["size"] for l in lines}, reverse=True)
        for size in sizes[:3]:
            picked = [l for l in lines if abs(l["size"] - size) < 0.3]
            picked.sort(key=lambda l: (l["y0"], l["x0"]))
            # keep the first run of lines that sit close together
            run = [picked[0]]
            for l in picked[1:]:
                if l["y0"] - run[-1]["y1"] > size * 1.5:
                    break
                run.append(l)
            title = _clean(" ".join(l["text"] for l in run))
            if _plausible_title(title) and len(title) < 250:
                return title
    return ""


def detect_abstract(pages: list[dict[str, Any]]) -> str:
    """Text after an "Abstract" heading on the first two pages, up to the introduction or keywords.
    Falls back to the longest paragraph of page 1."""
    for page in pages[:2]:
        paragraphs = page["text"].split("\n\n")
        for i, para in enumerate(paragraphs):
            m = _ABSTRACT_RE.match(para)
            if not m:
                continue
            collected = [para[m.end():]]
            for nxt in paragraphs[i + 1:]:
                if _ABSTRACT_END_RE.match(nxt) or sum(len(c) for c in collected) > 2500:
                    break
                collected.append(nxt)
            text = _clean(" ".join(collected))
            text = re.sub(r"(\w)- (\w)", r"\1\2", text)
            if len(text) > 80:
                return text[:3000]
    if pages:
        longest = max(pages[0]["text"].split("\n\n"), key=len, default="")
        if len(longest) > 300:
            return _clean(longest)[:3000]
    return ""


def detect_authors(metadata: dict[str, Any]) -> list[str]:
    """Authors from PDF metadata (layout-based author detection is unreliable; better none than wrong)."""
    raw = _clean(metadata.get("author", ""))
    if not raw or len(raw) > 400:
        return []
    parts = re.split(r"\s*(?:;|,| and |&)\s*", raw)
    return [p for p in parts if len(p) > 1 and any(c.isalpha() for c in p)]


def _has_eof_marker(path: Path, n: int = 2048) -> bool:
    """Whether the file ends with ``%%EOF`` (give or take trailing bytes): a cut-off download does not."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - n))
        return b"%%EOF" in fh.read()


def _read_head(path: Path, n: int = 1024) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(n)


# pages kept in memory when streaming: title and abstract are found on the first two
_KEEP_WHEN_STREAMING = 2


def parse_pdf(path: str | Path, *, max_pages: int = 1500,
              on_page: Callable[[dict[str, Any]], None] | None = None) -> ParsedPaper:
    """Parse one PDF.  Never raises for bad input; the result's ``status``/``error`` say what failed.

    With ``on_page`` every page row goes to it as soon as it is extracted and only the first two
    stay in ``pages`` (for the title and abstract), so memory does not grow with the page count.

    Statuses: ``ok``; ``no_text`` (opened, but no text layer: a scan; pages are kept so page
    images still render); ``failed`` (not a PDF, corrupt, encrypted, no pages); ``skipped``
    (more than ``max_pages`` pages).
    """
    started = time.perf_counter()
    path = Path(path)
    result = ParsedPaper(path=str(path), status="failed")

    def done(status: str, error: str | None = None) -> ParsedPaper:
        result.status, result.error = status, error
        result.seconds = time.perf_counter() - started
        return result

    try:
        head = _read_head(path)
    except OSError as exc:
        return done("failed", f"cannot read file: {exc.strerror or exc}")
    if not head:
        return done("failed", "empty file (0 bytes)")
    if b"%PDF-" not in head:
        # the file's own bytes never go into the message: a link or a misnamed file may hold secrets
        return done("failed", "not a PDF: no %PDF header")
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:  # PyMuPDF raises several types for damaged files
        if not _has_eof_marker(path):
            return done("failed", "truncated or damaged PDF: cannot open it (the file ends before its %%EOF)")
        # PyMuPDF's message names the file's path: keep the reason, not the path
        return done("failed", f"corrupt PDF, cannot open: {str(exc).replace(str(path), path.name)}")
    with doc:
        if doc.needs_pass:
            return done("failed", "encrypted PDF: a password is required to read it")
        result.n_pages = doc.page_count
        if doc.page_count == 0:
            if doc.is_repaired or not _has_eof_marker(path):
                return done("failed", "truncated or damaged PDF: no readable pages")
            return done("failed", "PDF has no pages")
        if doc.page_count > max_pages:
            return done("skipped", f"too many pages: {doc.page_count} > limit {max_pages} (VECTREE_MAX_PAGES)")
        result.metadata = {k: v for k, v in (doc.metadata or {}).items() if v}
        try:
            result.outline = [[int(l), _clean(t), int(p)] for l, t, p in doc.get_toc(simple=True)]
        except Exception as exc:
            result.warnings.append(f"outline unreadable: {exc}")
        if on_page is not None:
            result.streamed_chars = 0
        for page_index in range(doc.page_count):
            try:
                row = extract_page(doc[page_index])
            except Exception as exc:
                result.warnings.append(f"page {page_index + 1}: {exc}")
                row = {"page_no": page_index + 1, "width": 0.0, "height": 0.0, "text": "", "lines": []}
            if on_page is None:
                result.pages.append(row)
                continue
            on_page(row)
            result.streamed_chars += len(row["text"])
            if page_index < _KEEP_WHEN_STREAMING:
                result.pages.append(row)
        warnings = pymupdf.TOOLS.mupdf_warnings(reset=True)
        if doc.is_repaired:
            result.warnings.append("truncated or damaged PDF: repaired on opening, some content may be missing")
        if warnings:
            result.warnings.extend(w for w in warnings.splitlines()[:20] if w)
    result.title = detect_title(result.pages, result.metadata)
    result.abstract = detect_abstract(result.pages)
    result.authors = detect_authors(result.metadata)
    if result.n_chars < MIN_CHARS_PER_PAGE * max(1, result.n_pages) / 4 or result.n_chars < MIN_CHARS_PER_PAGE:
        return done("no_text", f"no extractable text layer ({result.n_chars} characters on {result.n_pages} pages; a scanned PDF needs OCR first)")
    return done("ok")
