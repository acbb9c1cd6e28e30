"""Loaders for the sentence-level benchmarks: they live in :mod:`vectree.retrieval.datasets` (SproutRAG
training reads the same files, and the library never imports the evaluation harness); this module
re-exports them for the harness."""

from vectree.retrieval.datasets import (  # noqa: F401  (re-exported)
    DRAGONBALL_DOCS,
    DRAGONBALL_QUERIES,
    HOTPOTQA_DISTRACTOR,
    HOTPOTQA_IRCOT,
    MIN_CONTAINED_CHARS,
    MIN_TOKEN_F1,
    DatasetLayoutError,
    Document,
    Paragraph,
    Query,
    SentenceBenchmark,
    _read_json,
    _read_jsonl,
    _require,
    load_dragonball,
    load_hotpotqa,
    matches_reference,
    normalise,
    token_f1,
)
