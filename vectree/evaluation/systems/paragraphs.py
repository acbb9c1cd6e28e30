"""``paragraphs``: paragraph retrieval, the baseline that beat SproutRAG at k = 1 and 3 in
``benchmarks/bench_sprout.py``.  A unit is one paragraph of the document (a maximal newline-free
run of text, the scorer's paragraph rule), embedded whole by MiniLM; top-k by cosine, ties by
order.  Same encoder, same cache and same exact scan as ``dense-rag``; only the unit differs.
"""

from __future__ import annotations

import re
from typing import Sequence

from .base import ChunkTable, Doc
from .dense import DenseSystem

_PARAGRAPH = re.compile(r"[^\n]+")


def paragraph_chunk_table(docs: Sequence[Doc]) -> ChunkTable:
    """One unit per non-blank paragraph, its span trimmed of surrounding whitespace."""
    table = ChunkTable()
    for d in docs:
        for m in _PARAGRAPH.finditer(d.text):
            text = m.group()
            lead = len(text) - len(text.lstrip())
            body = text.strip()
            if body:
                a = m.start() + lead
                table.add(d, [(a, a + len(body))])
    return table


class ParagraphSystem(DenseSystem):
    name = "paragraphs"
    description = "whole paragraphs (newline-free runs), MiniLM cosine, top-k"

    def __init__(self):
        super().__init__(chunk_tokens=0)

    def config(self):
        return {"description": self.description, "unit": "paragraph (maximal newline-free run of text)"}

    def chunk(self, docs: Sequence[Doc]) -> ChunkTable:
        return paragraph_chunk_table(docs)
