"""Source-verified section trees: one per paper, every entry checked against the page text.

Public API (the schema is light to import; the builder loads the LLM client lazily)::

    from vectree.retrieval.trees import build_tree, read_tree, indexable_nodes

    result = build_tree(store, doc_id)            # offline; build_tree(..., llm=LLMClient.from_settings())
    nodes = read_tree(store, doc_id)              # rows of trees/<doc_id>.parquet, root first
    for node in indexable_nodes(nodes): ...      # verified, non-root: the only ones an index may hold

Modules: :mod:`.schema` (columns, invariants, read/write), :mod:`.normalize` (text matching),
:mod:`.verify` (the deterministic verifier), :mod:`.offline` (outline/layout extractor),
:mod:`.llm_extract` (LLM extraction and repair), :mod:`.build` (the pipeline for one paper).
"""

from __future__ import annotations

from typing import Any

from .schema import TREE_SCHEMA, TreeNode, check_invariants, indexable_nodes, read_tree, tree_stats, write_tree

__all__ = [
    "TREE_SCHEMA", "TreeNode", "check_invariants", "indexable_nodes", "read_tree", "tree_stats", "write_tree",
    "build_tree", "TreeResult", "verify_entries",
]


def __getattr__(name: str) -> Any:
    # why lazy: build loads the LLM client (openai, ~2 s); search and the agent only need the schema
    if name in ("build_tree", "TreeResult"):
        from . import build

        return getattr(build, name)
    if name == "verify_entries":
        from .verify import verify_entries

        return verify_entries
    raise AttributeError(name)
