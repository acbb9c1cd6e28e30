"""SproutRAG: learned attention-guided binary trees over sentence chunks, hierarchical beam search.

A document's sentence chunks (:mod:`.chunks`) are embedded by the frozen MiniLM and contextualised
by a small transformer over the whole chunk sequence (:mod:`.encoder`); its attention maps,
aggregated by learned layer x head weights, give mutual attention, from which single linkage
builds a binary tree with progressive embeddings (:mod:`.tree`).  Retrieval is a beam search from
the root with a learned threshold and an expected-IE rerank (:mod:`.search`).  The model trains
jointly on retrieval, attention and threshold losses (:mod:`.train`, data in :mod:`.data`) and is
saved as safetensors + JSON (:mod:`.model`).  Per-paper trees live in the store as Lance tables
(:mod:`.papers`).

Public entry points::

    from vectree.retrieval.sprout import retrieve_in_paper, retrieve_papers, sprout_available
    hits = retrieve_in_paper(store, doc_id, "what limits the cycle life?", k=5)
    # [{doc_id, node_id, text, chunk_ids, pages, score, rank_score, depth, n_sentences}, ...]

The submodules import torch; this package module imports them lazily.
"""

from __future__ import annotations

__all__ = ["retrieve_in_paper", "retrieve_papers", "sprout_available"]


def __getattr__(name: str):
    if name in __all__:
        from . import papers

        return getattr(papers, name)
    raise AttributeError(name)
