"""SproutRAG over the store: build, write and read per-paper trees; retrieve within papers.

A paper's tree is a Lance table ``<store>/sprout/trees/<doc_id>.lance`` with one row per node
(:data:`TREE_SCHEMA`): ``node_id`` (leaves ``0..n-1`` are the chunks in document order),
``doc_id``, ``parent`` (-1 at the root), ``children`` ([] for leaves), ``depth``, ``chunk_ids``
(in document order), ``pages`` (1-based), ``text`` (the node's chunks in document order, joined by
a space; empty for nodes of more than :data:`MAX_TEXT_CHUNKS` chunks, whose text readers rebuild
from the leaves -- this keeps a table O(n) in text instead of O(n^2) for deep trees),
``char_start``/``char_end`` (leaves: the chunk's span in the paper text of
:func:`vectree.retrieval.sprout.chunks.pages_to_text`; inner nodes: the hull), ``n_sentences``,
``strength`` (the mutual attention at which the node was merged; ``inf`` for leaves),
``vector`` (the progressive embedding; for a model with text nodes, the MiniLM vector of the
node's own text when it has at most ``text_node_chunks`` chunks), ``paragraph`` (the node's
paragraph when its chunks all lie in one, else -1; tables written before it lack the column) and
``model_id`` (the model that built it; its folder is
kept, so an older tree stays searchable with its own model until it is rebuilt).

Lance writes a new table version and switches to it in one step, so a reader sees the old tree
or the new one, never half of one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa

from .chunks import Chunk, chunk_pages
from .model import (
    ModelNotFoundError, SproutModel, SproutOffError, SproutUnavailableError, current_model_dir, load_model,
    model_dir_by_id, sprout_switched_off,
)
from .tree import Tree, node_text, tree_from_merges

MAX_TEXT_CHUNKS = 64


class TreeNotFoundError(SproutUnavailableError):
    """The paper has no SproutRAG tree (no model was trained, or the tree was not built yet)."""


def tree_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("node_id", pa.int32()), ("doc_id", pa.string()), ("parent", pa.int32()),
        ("children", pa.list_(pa.int32())), ("depth", pa.int32()), ("chunk_ids", pa.list_(pa.int32())),
        ("pages", pa.list_(pa.int32())), ("text", pa.string()), ("char_start", pa.int64()),
        ("char_end", pa.int64()), ("n_sentences", pa.int32()), ("strength", pa.float64()),
        ("vector", pa.list_(pa.float32(), dim)),
        ("model_id", pa.string()),
        ("paragraph", pa.int32()),  # the node's paragraph when all its chunks are in one, else -1
    ])


def trees_dir(store) -> Path:
    return Path(store.sprout_trees_dir)


def tree_table_path(store, doc_id: str) -> Path:
    return Path(store.sprout_tree_path(doc_id))


@dataclass
class PaperTree:
    """A paper's tree with what retrieval returns for each node."""

    doc_id: str
    model_id: str
    tree: Tree
    chunk_text: list[str]
    chunk_pages: list[tuple[int, ...]]
    chunk_spans: list[tuple[int, int]]

    def node_text(self, v: int) -> str:
        return node_text(self.tree, self.chunk_text, v)

    def node_pages(self, v: int) -> list[int]:
        return sorted({p for c in self.tree.leaves(v) for p in self.chunk_pages[c]})


def _one_paragraph(chunks: Sequence[Chunk], ids: Sequence[int]) -> int:
    first = chunks[ids[0]].paragraph
    return int(first) if all(chunks[c].paragraph == first for c in ids) else -1


def tree_rows(doc_id: str, model_id: str, tree: Tree, chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """The Lance rows of one tree (see the module docstring)."""
    rows = []
    for v in range(tree.n_nodes):
        ids = tree.leaves(v)
        kids = [] if tree.is_leaf(v) else [int(c) for c in tree.children[v]]
        rows.append({
            "node_id": v, "doc_id": doc_id, "parent": int(tree.parent[v]), "children": kids,
            "depth": int(tree.depth[v]), "chunk_ids": ids,
            "pages": sorted({p for c in ids for p in chunks[c].pages}),
            "text": " ".join(chunks[c].text for c in ids) if len(ids) <= MAX_TEXT_CHUNKS else "",
            "char_start": min(chunks[c].start for c in ids), "char_end": max(chunks[c].end for c in ids),
            "n_sentences": int(tree.weight[v]),
            "strength": float(tree.strength[v]) if tree.strength is not None else float("inf"),
            "vector": tree.vectors[v].astype(np.float32).tolist(),
            "model_id": model_id,
            "paragraph": _one_paragraph(chunks, ids),
        })
    return rows


def write_tree_table(store, doc_id: str, rows: list[dict[str, Any]], dim: int) -> Path:
    """Write (or replace) a paper's tree table; an empty ``rows`` writes an empty marker table."""
    import lancedb

    folder = trees_dir(store)
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=tree_schema(dim))
    path = tree_table_path(store, doc_id)
    # "overwrite" on a table that does not exist yet makes Lance log a WARN per paper
    mode = "overwrite" if path.exists() else "create"
    lancedb.connect(str(folder)).create_table(doc_id, data=table, mode=mode)
    return path


def embed_chunks(texts: list[str], *, embedder=None,
                 known: Mapping[str, np.ndarray] | None = None) -> tuple[np.ndarray, int]:
    """MiniLM vectors of ``texts``, taking those in ``known`` as they are: ``(vectors, reused)``.

    One text found in ``known`` is embedded again as a probe: when its fresh vector differs from
    the known one (the passages were written by another embedding model), nothing is reused."""
    from .encoder import embed_texts

    hits = [i for i, t in enumerate(texts) if known and t in known]
    if not hits:
        return embed_texts(texts, embedder=embedder), 0
    todo = [i for i, t in enumerate(texts) if t not in known] + [hits[0]]
    fresh = embed_texts([texts[i] for i in todo], embedder=embedder)
    probe = np.asarray(known[texts[hits[0]]], dtype=np.float32)
    if probe.shape != fresh[-1].shape or float(fresh[-1] @ probe) < 0.999:
        return embed_texts(texts, embedder=embedder), 0
    x = np.empty((len(texts), fresh.shape[1]), dtype=np.float32)
    for i in hits:
        x[i] = known[texts[i]]
    x[todo] = fresh
    return x, len(hits)


def build_paper_tree(store, doc_id: str, model: SproutModel, *, embedder=None,
                     known: Mapping[str, np.ndarray] | None = None) -> tuple[list[dict], dict]:
    """Chunk a paper's pages, embed, contextualise, build its tree: ``(rows, stats)``.

    ``known``: MiniLM vectors already computed for some texts (the paper's passages, see
    :func:`vectree.retrieval.passages.passage_vectors_by_text`); chunks with those texts are not
    embedded again."""
    import time

    started = time.perf_counter()
    pages = store.read_page_texts(doc_id)
    _, chunks = chunk_pages(pages)
    stats: dict[str, Any] = {"pages": len(pages), "chunks": len(chunks)}
    if not chunks:
        return [], {**stats, "nodes": 0, "seconds": round(time.perf_counter() - started, 3)}
    x, reused = embed_chunks([c.text for c in chunks], embedder=embedder, known=known)
    t_embed = time.perf_counter() - started
    stats["reused_vectors"] = reused
    doc = model.document_tree(x, [c.paragraph for c in chunks], [c.n_sentences for c in chunks],
                              texts=[c.text for c in chunks],
                              encode=lambda texts: embed_chunks(texts, embedder=embedder, known=known)[0])
    rows = tree_rows(doc_id, model.config.model_id, doc.tree, chunks)
    stats.update(nodes=doc.tree.n_nodes, depth=int(doc.tree.depth.max()), embed_seconds=round(t_embed, 3),
                 seconds=round(time.perf_counter() - started, 3))
    return rows, stats


# ---- reading and retrieval ---------------------------------------------------------------
_cache_lock = threading.Lock()
_model_cache: dict[str, SproutModel] = {}
_tree_cache: dict[tuple[str, str], tuple[Any, PaperTree]] = {}


def model_for(store, model_id: str | None = None) -> SproutModel:
    """The model with ``model_id`` (default: the live one), loaded once per process."""
    folder = model_dir_by_id(store, model_id) if model_id else current_model_dir(store)
    if folder is None or not folder.exists():
        raise ModelNotFoundError(
            f"no trained SproutRAG model{' ' + model_id if model_id else ''} in {store.sprout_dir}; "
            "run `vectree sprout train`")
    key = str(folder.resolve())
    with _cache_lock:
        if key not in _model_cache:
            _model_cache[key] = load_model(folder)
        return _model_cache[key]


def read_paper_tree(store, doc_id: str) -> PaperTree:
    """A paper's tree from its Lance table (cached per table version)."""
    import lancedb

    path = tree_table_path(store, doc_id)
    if not path.exists():
        raise TreeNotFoundError(
            f"paper {doc_id!r} has no SproutRAG tree at {path}; train a model (`vectree sprout train`), "
            "which builds every paper's tree")
    table = lancedb.connect(str(path.parent)).open_table(doc_id)
    version = table.version
    key = (str(path), doc_id)
    with _cache_lock:
        hit = _tree_cache.get(key)
        if hit and hit[0] == version:
            return hit[1]
    data = table.to_arrow().sort_by("node_id").to_pydict()
    if not data["node_id"]:
        raise TreeNotFoundError(f"paper {doc_id!r} has an empty SproutRAG tree (no text to chunk)")
    n_nodes = len(data["node_id"])
    n = (n_nodes + 1) // 2
    merges = np.array([data["children"][v] for v in range(n, n_nodes)], dtype=np.int64).reshape(-1, 2)
    vectors = np.array(data["vector"], dtype=np.float32)
    tree = tree_from_merges(merges, vectors[:n], np.array(data["n_sentences"][:n], dtype=np.float64),
                            np.array(data["strength"][n:], dtype=np.float64))
    tree.vectors = vectors  # the stored progressive vectors (identical up to float rounding)
    if "paragraph" in data:  # tables written before the column: paragraphs unknown, no restriction
        tree.groups = np.array(data["paragraph"][:n], dtype=np.int64)
    SproutModel.attach_terms(tree, data["text"][:n])  # leaves' texts: the lexical features' words
    paper = PaperTree(doc_id, data["model_id"][0], tree, data["text"][:n],
                      [tuple(p) for p in data["pages"][:n]],
                      list(zip(data["char_start"][:n], data["char_end"][:n])))
    with _cache_lock:
        _tree_cache[key] = (version, paper)
    return paper


def sprout_available(store, doc_id: str | None = None) -> bool:
    """True when a model exists (and, with ``doc_id``, that paper has a non-empty tree)."""
    if current_model_dir(store) is None:
        return False
    return doc_id is None or tree_table_path(store, doc_id).exists()


def _hits(papers: Sequence[PaperTree], chosen, vote_weight: float = 1.0,
          vote_per_node: int | None = None) -> list[dict[str, Any]]:
    out = []
    for c in chosen:
        p = papers[c.doc]
        out.append({
            "doc_id": p.doc_id, "node_id": c.node, "text": p.node_text(c.node), "chunk_ids": p.tree.leaves(c.node),
            "pages": p.node_pages(c.node), "score": round(float(c.score), 4),
            "rank_score": round(float(c.rank_score), 4), "depth": int(p.tree.depth[c.node]),
            "n_sentences": int(p.tree.weight[c.node]),
            # how the model's calibration says its nodes vote in within-paper passage search
            "vote_weight": vote_weight, "vote_per_node": vote_per_node,
        })
    return out


def retrieve_papers(store, query: str, k: int = 5, doc_ids: Sequence[str] | None = None, *,
                    embedder=None, **overrides) -> list[dict[str, Any]]:
    """SproutRAG retrieval across papers (default: every paper with a tree), merged.

    Each hit: ``{doc_id, node_id, text, chunk_ids, pages, score, rank_score, depth, n_sentences,
    vote_weight, vote_per_node}`` (how its model's calibration has the nodes vote in within-paper
    passage search: :func:`vectree.retrieval.passages.calibrate_sprout_weight`).
    Trees built by different models are searched with their own model, then merged by score.
    """
    from .encoder import embed_texts

    if sprout_switched_off(store):
        raise SproutOffError(f"SproutRAG is switched off in {store.root} (`vectree sprout use none`); "
                             "`vectree sprout use NAME` switches a model back on")
    if doc_ids is None:
        folder = trees_dir(store)
        doc_ids = sorted(p.name[:-len(".lance")] for p in folder.glob("*.lance")) if folder.exists() else []
    papers = []
    for d in doc_ids:
        try:
            papers.append(read_paper_tree(store, d))
        except TreeNotFoundError:
            if len(doc_ids) == 1:
                raise
    if not papers:
        if current_model_dir(store) is None:
            raise ModelNotFoundError(f"no trained SproutRAG model in {store.sprout_dir}; run `vectree sprout train`")
        return []
    xq = embed_texts([query], embedder=embedder, queries=True)[0]
    by_model: dict[str, list[int]] = {}
    for i, p in enumerate(papers):
        by_model.setdefault(p.model_id, []).append(i)
    hits: list[dict[str, Any]] = []
    for model_id, idx in by_model.items():
        model = model_for(store, model_id)
        q = model.search_query(xq[None])[0]
        group = [papers[i] for i in idx]
        hits += _hits(group, model.search([p.tree for p in group], q, k, query_text=query, **overrides),
                      float(model.config.within_paper_weight), model.config.within_paper_per_node)
    hits.sort(key=lambda h: -h["rank_score"])
    return hits[:k]


def retrieve_in_paper(store, doc_id: str, query: str, k: int = 5, **overrides) -> list[dict[str, Any]]:
    """SproutRAG nodes of one paper for ``query`` (for the agent's ``search_within_paper``).

    Returns at most ``k`` hits ``{doc_id, node_id, text, chunk_ids, pages, score, rank_score,
    depth, n_sentences}``, best first, none nested in another.  Raises
    :class:`ModelNotFoundError` / :class:`TreeNotFoundError` (both ``LookupError``-like, with the
    command that fixes it) when no model or no tree exists; check :func:`sprout_available` first
    to fall back quietly.
    """
    if not isinstance(query, str) or not query.strip():
        raise ValueError("query must be a non-empty string")
    if k < 1:
        raise ValueError("k must be at least 1")
    return retrieve_papers(store, query, k, [doc_id], **overrides)
