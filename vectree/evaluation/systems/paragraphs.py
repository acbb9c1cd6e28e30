"""``paragraphs``: paragraph retrieval, the baseline that beat SproutRAG at k = 1 and 3 in
``benchmarks/bench_sprout.py``.  A unit is one paragraph of the document (a maximal newline-free
run of text, the scorer's paragraph rule), embedded whole by MiniLM; top-k by cosine, ties by
order.  Same encoder, same cache and same exact scan as ``dense-rag``; only the unit differs.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from vectree.retrieval.sprout.lexical import LeafTerms, QueryLexicon

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


# the BM25 share of ``paragraphs-bm25``: chosen on the training questions of DragonBall and HotpotQA
# (SproutRAG's splits; mean IE@1/3/5 over both, weights 0.1/0.2/0.3/0.5: .274/.277/.279/.275;
# `benchmarks/dev_lexical_units.py --split train`)
BM25_SHARE = 0.3


class ParagraphBM25System(ParagraphSystem):
    """Paragraph retrieval with the words too: ``cosine + BM25_SHARE * bm25 / best bm25 of the scope``.

    The baseline that isolates what lexical evidence adds, beside SproutRAG's lexical node features
    (``vectree.retrieval.sprout.lexical``, the same analyser and BM25; IDF over every paragraph).
    """

    name = "paragraphs-bm25"
    description = f"whole paragraphs, MiniLM cosine + {BM25_SHARE} x BM25 (relative to the scope's best), top-k"

    def config(self):
        return {"description": self.description, "unit": "paragraph (maximal newline-free run of text)",
                "bm25_share": BM25_SHARE}

    def index(self, docs: Sequence[Doc]) -> None:
        super().index(docs)
        self.terms = LeafTerms.from_texts(list(self.table.texts))

    def scores(self, query: str, scope):
        sims, rows = super().scores(query, scope)
        bm25 = QueryLexicon([self.terms], query)[0].bm25
        bm25 = bm25 if rows is None else bm25[rows]
        best = float(bm25.max()) if len(bm25) else 0.0
        return (sims + BM25_SHARE * bm25 / best if best > 0 else sims).astype(np.float32), rows
