"""Sentence chunks: the leaves of a SproutRAG tree.

Segmentation uses **pysbd** (rule-based, the "Golden Rules" of English sentence boundaries).
Chosen over blingfire and over a regex because scientific and financial text is full of the
periods that break naive splitters (``e.g.``, ``Fig. 3``, ``et al.``, ``3.5 mV``, ``U.S.``),
which pysbd's rules handle; it is pure Python (no model file to ship), keeps character offsets
(``clean=False``), is maintained, and is fast enough here (about 0.2 MB of text per second, far
below the cost of embedding the sentences).  Blingfire is faster but is a compiled model whose
abbreviation handling we cannot inspect or tune, and it is not installed.

The rule (the same as the scorer's in :mod:`vectree.evaluation.sentences`, so a leaf never straddles two
scored sentences): paragraphs are newline-free runs of text; pysbd segments each paragraph;
segments are trimmed; text pysbd leaves uncovered is a sentence of its own.  A chunk is one
sentence, or two when the first is shorter than ``min_chars`` (headings, "Table 2.", list
markers, which carry no meaning alone); chunks never cross a paragraph.

PDF pages (:func:`chunk_pages`) are joined with blank lines; inside a page, single line breaks
(layout, not structure) become spaces and blank lines (PyMuPDF block breaks) stay paragraph
breaks; each chunk records the pages its characters lie on.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Sequence

from vectree.retrieval.sentences import Span, paragraph_sentences  # noqa: F401  (re-exported)

DEFAULT_MIN_CHARS = 40
DEFAULT_MAX_SENTENCES = 2

@dataclass(frozen=True)
class Chunk:
    """One leaf: ``index`` is its position in the document (its chunk id), ``start``/``end`` its
    character span in the document text, ``sentences`` the spans of its 1-2 sentences."""

    index: int
    start: int
    end: int
    text: str
    paragraph: int
    sentences: tuple[Span, ...]
    pages: tuple[int, ...] = field(default=())

    @property
    def n_sentences(self) -> int:
        return len(self.sentences)


def chunk_text(text: str, *, min_chars: int = DEFAULT_MIN_CHARS, max_sentences: int = DEFAULT_MAX_SENTENCES,
               page_starts: Sequence[int] | None = None) -> list[Chunk]:
    """Split ``text`` into chunks of 1..``max_sentences`` sentences (see the module docstring).

    ``page_starts`` (optional, ascending): the character offset where each page begins (page
    ``i + 1`` starts at ``page_starts[i]``); chunks then carry their pages.
    """
    if not isinstance(text, str):
        raise TypeError(f"chunk_text expects a str, got {type(text).__name__}")
    if max_sentences < 1:
        raise ValueError("max_sentences must be at least 1")
    chunks: list[Chunk] = []
    for p, sentences in enumerate(paragraph_sentences(text)):
        groups: list[list[Span]] = []
        for span in sentences:
            last = groups[-1] if groups else None
            if last and len(last) < max_sentences and last[-1][1] - last[0][0] < min_chars:
                last.append(span)
            else:
                groups.append([span])
        # a short last sentence joins the one before it rather than standing alone
        if len(groups) > 1 and len(groups[-1]) == 1 and len(groups[-2]) < max_sentences \
                and groups[-1][0][1] - groups[-1][0][0] < min_chars:
            groups[-2].extend(groups.pop())
        for g in groups:
            start, end = g[0][0], g[-1][1]
            pages: tuple[int, ...] = ()
            if page_starts is not None:
                first = bisect.bisect_right(page_starts, start)
                last_page = bisect.bisect_right(page_starts, end - 1)
                pages = tuple(range(max(first, 1), max(last_page, 1) + 1))
            chunks.append(Chunk(len(chunks), start, end, text[start:end], p, tuple(g), pages))
    return chunks


def pages_to_text(page_texts: Sequence[str]) -> tuple[str, list[int]]:
    """Join PDF page texts into one document text; returns it and each page's start offset.

    Single newlines (line wraps) become spaces, so pysbd sees whole paragraphs; blank lines (block
    breaks) stay; pages are separated by a blank line.  Lengths are kept per page except for the
    separators, so the returned offsets are exact.
    """
    parts, starts, pos = [], [], 0
    for i, t in enumerate(page_texts):
        t = re.sub(r"(?<!\n)\n(?!\n)", " ", t or "")
        if i:
            parts.append("\n\n")
            pos += 2
        starts.append(pos)
        parts.append(t)
        pos += len(t)
    return "".join(parts), starts


def chunk_pages(page_texts: Sequence[str], **kwargs) -> tuple[str, list[Chunk]]:
    """Chunks of a PDF given its page texts (index ``i`` = page ``i + 1``): ``(doc_text, chunks)``."""
    text, starts = pages_to_text(page_texts)
    return text, chunk_text(text, page_starts=starts, **kwargs)
