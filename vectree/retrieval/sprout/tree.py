"""The SproutRAG tree: bottom-up merges by mutual attention, progressive embeddings.

Given one document's aggregated attention ``A`` (``n x n``, rows are chunks attending to chunks):

1. mutual attention ``M = (A + A^T) / 2`` with the diagonal masked (:func:`mutual_attention`);
2. repeatedly merge the active pair with the highest mutual attention; the parent's relation to
   every other node is the strongest relation of either child (single linkage).  Merges need not be
   adjacent, so a node may join non-contiguous sentences (its text is its chunks in document
   order).  That procedure is exactly single-linkage agglomerative clustering on the similarity
   ``M`` -- a maximum spanning tree -- which :func:`single_linkage` computes with SciPy's
   ``linkage(method="single")`` (an O(n^2) minimum-spanning-tree algorithm) on the distance
   ``max(M) - M``.  :func:`greedy_single_linkage` is the naive O(n^3) procedure, kept as the
   reference the tests compare with.
3. progressive embeddings: a leaf's vector is its chunk embedding, a parent's
   ``(e_left + e_right) / 2`` (:func:`build_tree`).

Nodes are numbered like SciPy's clusters: leaves ``0..n-1`` (= chunk ids), the i-th merge creates
node ``n + i``, the root is ``2n - 2``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np


def mutual_attention(attention: np.ndarray) -> np.ndarray:
    """``(A + A^T) / 2`` with the diagonal set to ``-inf`` (a node never merges with itself)."""
    a = np.asarray(attention, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"attention must be a square matrix, got shape {a.shape}")
    m = (a + a.T) / 2.0
    np.fill_diagonal(m, -np.inf)
    return m


def _check_mutual(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"mutual attention must be square, got shape {m.shape}")
    off = m[~np.eye(len(m), dtype=bool)]
    if not np.all(np.isfinite(off)):
        raise ValueError("mutual attention has non-finite off-diagonal entries")
    if not np.allclose(m, m.T, equal_nan=True):
        raise ValueError("mutual attention must be symmetric; use mutual_attention(A)")
    return m


def single_linkage(mutual: np.ndarray, *, with_strength: bool = False):
    """Merges of single linkage on similarity ``mutual``: an ``(n-1, 2)`` int array of node ids
    (SciPy numbering), strongest merge first.  O(n^2) time and memory.  With ``with_strength``
    also the mutual attention at which each merge happened (non-increasing)."""
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform

    m = _check_mutual(mutual)
    n = len(m)
    if n < 2:
        empty = np.zeros((0, 2), dtype=np.int64)
        return (empty, np.zeros(0)) if with_strength else empty
    off = ~np.eye(n, dtype=bool)
    top = m[off].max()
    dist = top - m
    np.fill_diagonal(dist, 0.0)
    z = linkage(squareform(dist, checks=False), method="single")
    merges = z[:, :2].astype(np.int64)
    return (merges, top - z[:, 2]) if with_strength else merges


def greedy_single_linkage(mutual: np.ndarray) -> np.ndarray:
    """The naive O(n^3) procedure: merge the active pair with the highest relation, the parent
    keeping the maximum of its children's relations to every other node.  Same numbering and
    output as :func:`single_linkage`; for tests and small inputs only."""
    m = _check_mutual(mutual).copy()
    n = len(m)
    np.fill_diagonal(m, -np.inf)
    ids = list(range(n))  # node id held by each active row
    active = np.ones(n, dtype=bool)
    merges = []
    for step in range(n - 1):
        masked = np.where(active[:, None] & active[None, :], m, -np.inf)
        i, j = np.unravel_index(int(np.argmax(masked)), masked.shape)
        a, b = sorted((ids[i], ids[j]))
        merges.append((a, b))
        # the merged node lives in row i; its relation to k is the stronger of the two
        m[i, :] = np.maximum(m[i, :], m[j, :])
        m[:, i] = m[i, :]
        m[i, i] = -np.inf
        active[j] = False
        ids[i] = n + step
    return np.array(merges, dtype=np.int64).reshape(-1, 2)


@dataclass
class Tree:
    """A binary tree over ``n_leaves`` chunks.

    ``children[v]`` is ``(-1, -1)`` for leaves; ``parent[root] = -1``; ``depth[root] = 0``;
    ``vectors[v]`` the progressive embedding (not normalised); ``leaf_order`` lists the leaves
    in depth-first order, so the leaves under node ``v`` are ``leaf_order[lo[v]:hi[v]]``;
    ``weight[v]`` sums the leaves' weights (sentence counts when given); ``strength[v]`` is the
    mutual attention at which inner node ``v`` was formed (``inf`` for leaves), its cohesion;
    ``groups[c]`` (optional) the paragraph of chunk ``c`` (:meth:`single_group`); ``terms``
    (optional) the chunks' words for the scorer's lexical features.
    """

    n_leaves: int
    children: np.ndarray  # (n_nodes, 2) int
    parent: np.ndarray  # (n_nodes,) int
    depth: np.ndarray  # (n_nodes,) int
    vectors: np.ndarray  # (n_nodes, dim) float32
    leaf_order: np.ndarray  # (n_leaves,) int
    lo: np.ndarray  # (n_nodes,) int
    hi: np.ndarray  # (n_nodes,) int
    weight: np.ndarray  # (n_nodes,) float
    strength: np.ndarray | None = None  # (n_nodes,) float
    groups: np.ndarray | None = None  # (n_leaves,) int: each chunk's paragraph, when known
    # the chunks' BM25 words (retrieval.sprout.lexical.LeafTerms), for models whose scorer reads them
    terms: object | None = field(default=None, repr=False, compare=False)
    _single: np.ndarray | None = field(default=None, repr=False, compare=False)

    def single_group(self) -> np.ndarray | None:
        """``(n_nodes,)`` bool: the node's chunks all lie in one paragraph (``groups``); None when
        the paragraphs are not known.  O(n), computed once: a node spans one group exactly when
        the group never changes between consecutive leaves of its depth-first interval."""
        if self.groups is None:
            return None
        if self._single is None:
            g = np.asarray(self.groups)[self.leaf_order]
            changes = np.concatenate([[0], np.cumsum(g[1:] != g[:-1])])
            self._single = changes[self.hi - 1] == changes[self.lo]
        return self._single

    @property
    def n_nodes(self) -> int:
        return len(self.parent)

    @property
    def root(self) -> int:
        return self.n_nodes - 1

    def is_leaf(self, v: int) -> bool:
        return v < self.n_leaves

    def leaves(self, v: int) -> list[int]:
        """Chunk ids under node ``v``, in document order."""
        return sorted(int(x) for x in self.leaf_order[self.lo[v]:self.hi[v]])

    def size(self, v: int) -> int:
        return int(self.hi[v] - self.lo[v])

    def is_ancestor(self, a: int, b: int) -> bool:
        """True when ``a`` is ``b`` or one of its ancestors (leaf intervals nest)."""
        return self.lo[a] <= self.lo[b] and self.hi[b] <= self.hi[a]


def tree_from_merges(merges: np.ndarray, leaf_vectors: np.ndarray, leaf_weights: np.ndarray | None = None,
                     strengths: np.ndarray | None = None) -> Tree:
    """Assemble a :class:`Tree` from a merge list (SciPy numbering), the leaves' vectors and
    (optionally) their sentence counts and the merges' strengths."""
    x = np.asarray(leaf_vectors, dtype=np.float32)
    n = len(x)
    if n == 0:
        raise ValueError("a tree needs at least one leaf")
    merges = np.asarray(merges, dtype=np.int64).reshape(-1, 2)
    if len(merges) != n - 1:
        raise ValueError(f"{n} leaves need {n - 1} merges, got {len(merges)}")
    n_nodes = 2 * n - 1
    children = np.full((n_nodes, 2), -1, dtype=np.int64)
    children[n:] = merges
    parent = np.full(n_nodes, -1, dtype=np.int64)
    vectors = np.zeros((n_nodes, x.shape[1]), dtype=np.float32)
    vectors[:n] = x
    w = np.ones(n, dtype=np.float64) if leaf_weights is None else np.asarray(leaf_weights, dtype=np.float64)
    weight = np.zeros(n_nodes, dtype=np.float64)
    weight[:n] = w
    for i, (a, b) in enumerate(merges):
        v = n + i
        if not (0 <= a < v and 0 <= b < v) or parent[a] != -1 or parent[b] != -1 or a == b:
            raise ValueError(f"merge {i} ({a}, {b}) is not a merge of two active nodes")
        parent[a] = parent[b] = v
        vectors[v] = (vectors[a] + vectors[b]) / 2.0  # progressive embedding
        weight[v] = weight[a] + weight[b]
    # depth and a depth-first leaf order (iterative: single-linkage trees can be very deep)
    depth = np.zeros(n_nodes, dtype=np.int64)
    lo = np.zeros(n_nodes, dtype=np.int64)
    hi = np.zeros(n_nodes, dtype=np.int64)
    order: list[int] = []
    root = n_nodes - 1
    stack = [(root, False)]
    while stack:
        v, done = stack.pop()
        if done:
            hi[v] = len(order)
            continue
        lo[v] = len(order)
        if v < n:
            order.append(v)
            hi[v] = len(order)
            continue
        stack.append((v, True))
        a, b = children[v]
        depth[a] = depth[b] = depth[v] + 1
        stack.append((b, False))
        stack.append((a, False))
    strength = np.full(n_nodes, np.inf)
    if strengths is not None:
        strength[n:] = np.asarray(strengths, dtype=np.float64).reshape(-1)
    return Tree(n, children, parent, depth, vectors, np.array(order, dtype=np.int64), lo, hi, weight, strength)


def build_tree(mutual: np.ndarray, leaf_vectors: np.ndarray, leaf_weights: np.ndarray | None = None) -> Tree:
    """The SproutRAG tree of one document from its mutual attention and leaf embeddings."""
    x = np.asarray(leaf_vectors)
    if len(x) != len(mutual):
        raise ValueError(f"{len(x)} leaf vectors for a {len(mutual)}x{len(mutual)} attention matrix")
    merges, strength = single_linkage(mutual, with_strength=True)
    return tree_from_merges(merges, x, leaf_weights, strength)


def progressive_weights(merges: np.ndarray, n_leaves: int) -> tuple[np.ndarray, np.ndarray]:
    """Leaf weights of every node's progressive embedding, and node membership.

    Returns ``(P, B)``, both ``(2n - 1, n)``: ``P[v] @ leaf_vectors`` is node ``v``'s progressive
    embedding (each merge halves its children's weights), ``B[v, c] = 1`` when chunk ``c`` is under
    ``v``.  Used in training, where node vectors must stay differentiable in the leaf vectors.
    """
    merges = np.asarray(merges, dtype=np.int64).reshape(-1, 2)
    n_nodes = 2 * n_leaves - 1
    p = np.zeros((n_nodes, n_leaves), dtype=np.float32)
    p[np.arange(n_leaves), np.arange(n_leaves)] = 1.0
    for i, (a, b) in enumerate(merges):
        p[n_leaves + i] = (p[a] + p[b]) / 2.0
    return p, (p > 0).astype(np.float32)


def node_text(tree: Tree, chunk_texts: Sequence[str], v: int) -> str:
    """The text of node ``v``: its chunks in document order, joined by a space."""
    return " ".join(chunk_texts[c] for c in tree.leaves(v))


def text_vectors(tree: Tree, chunk_texts: Sequence[str], nodes: Sequence[int],
                 encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """``encode`` of the texts of ``nodes`` (rows in the order of ``nodes``, float32)."""
    if not len(nodes):
        return np.zeros((0, tree.vectors.shape[1]), dtype=np.float32)
    return np.asarray(encode([node_text(tree, chunk_texts, int(v)) for v in nodes]), dtype=np.float32)


def with_text_vectors(tree: Tree, chunk_vectors: np.ndarray, chunk_texts: Sequence[str],
                      encode: Callable[[list[str]], np.ndarray], max_chunks: int) -> Tree:
    """``tree`` with every node of at most ``max_chunks`` chunks represented by the MiniLM vector
    of its own text (leaves: ``chunk_vectors``, the chunk's own embedding; inner nodes: ``encode``
    of their chunks joined in document order); larger nodes keep their progressive embedding.

    Why: a paragraph's mean of sentence vectors ranks paragraphs far worse than the bi-encoder
    reading the paragraph whole (DragonBall, paragraph nodes of the shipped trees, IE@1 .181 by
    progressive vector against .252 by text vector: ``benchmarks/diag_sprout_nodes.py``), and the
    encoder reads a few chunks whole (256 word pieces); above that, only the progressive mean is
    left.  The structure (which chunks form a node) is the tree's, learned from attention."""
    if max_chunks <= 0:
        return tree
    x = np.asarray(chunk_vectors, dtype=np.float32)
    if len(x) != tree.n_leaves or len(chunk_texts) != tree.n_leaves:
        raise ValueError(f"{tree.n_leaves} leaves, {len(x)} chunk vectors, {len(chunk_texts)} chunk texts")
    vectors = tree.vectors.copy()
    vectors[: tree.n_leaves] = x
    inner = np.flatnonzero(tree.hi[tree.n_leaves:] - tree.lo[tree.n_leaves:] <= max_chunks) + tree.n_leaves
    vectors[inner] = text_vectors(tree, chunk_texts, inner, encode)
    return Tree(tree.n_leaves, tree.children, tree.parent, tree.depth, vectors, tree.leaf_order, tree.lo, tree.hi,
                tree.weight, tree.strength, tree.groups)


def range_sum(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``values[lo:hi].sum(axis=0)`` for every interval, by prefix sums (``values``: per leaf in
    depth-first leaf order, 1-D or one column per quantity): the sum under every node in O(n)."""
    v = np.asarray(values, dtype=np.float64)
    prefix = np.concatenate([np.zeros((1,) + v.shape[1:]), np.cumsum(v, axis=0)])
    return prefix[hi] - prefix[lo]


def range_reduce(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, fn) -> np.ndarray:
    """``fn``-reduction (np.maximum / np.minimum) of ``values[lo:hi]`` for every interval, with a
    sparse table: O(n log n) to build, O(1) per interval, all vectorised."""
    n = len(values)
    levels = [values]
    k = 1
    while (1 << k) <= n:
        prev, half = levels[-1], 1 << (k - 1)
        levels.append(fn(prev[:-half], prev[half:]))
        k += 1
    table = np.empty((len(levels), n), dtype=values.dtype)
    for j, row in enumerate(levels):
        table[j, : len(row)] = row
        table[j, len(row):] = row[-1]
    length = hi - lo
    j = np.floor(np.log2(np.maximum(length, 1))).astype(np.int64)
    return fn(table[j, lo], table[j, hi - (1 << j)])
