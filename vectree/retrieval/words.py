"""The English word analyser every lexical signal shares: Layer 0's BM25 (``search.bm25``) and
SproutRAG's lexical node features (``sprout.lexical``).

Tantivy's simple tokenizer, then: words over 40 characters dropped, lower case, ASCII folding,
English stop words removed, Porter stemming.  One definition, so a word matches the same way in
every index.
"""

from __future__ import annotations

from functools import lru_cache

import tantivy


def english_analyzer() -> "tantivy.TextAnalyzer":
    """A fresh analyser (Tantivy registers one per index)."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


@lru_cache(maxsize=1)
def _shared() -> "tantivy.TextAnalyzer":
    return english_analyzer()


def analyze(text: str) -> list[str]:
    """The analysed words of ``text``, in order (``"The Running dogs"`` -> ``["run", "dog"]``)."""
    return _shared().analyze(text or "")
