"""``raptor``: RAPTOR (Sarthi et al., 2024) with extractive summaries, collapsed-tree retrieval.

Per document (RAPTOR builds one tree per document in its QASPER / NarrativeQA / QuALITY
experiments; a multi-document scope searches the union of the trees, as SproutRAG does):

1. **Leaves**: fixed 100-token chunks (RAPTOR's chunk size; MiniLM word pieces), embedded.
2. **Clustering**, level by level: the level's node vectors are reduced with PCA (at most 8
   dimensions; RAPTOR uses UMAP, which is not installed), a Gaussian mixture is fitted for 1..n/2
   components (diagonal covariances, the count with the lowest BIC wins, as in RAPTOR), nodes go
   to their most likely component, and a cluster larger than ``max_cluster`` is split again by
   k-means.  Everything is seeded, so the same seed builds the same trees.
3. **Summaries**, offline and extractive: a cluster's summary is the sentences of its members
   (the scorer's sentence rule) closest in MiniLM cosine to the members' mean vector, picked
   greedily (skipping near-duplicates, cosine > 0.95) until ``summary_tokens`` tokens, printed in
   document order.  Because the summary is made of source sentences, its character spans are
   exact, and the sentence scorer counts it like any other unit.  Singleton clusters are carried
   up unchanged; building stops when a level has one node, nothing merges, or after
   ``max_levels`` levels.  (With an LLM configured RAPTOR would write abstractive summaries; the
   harness keeps the extractive ones so runs stay comparable and offline.)
4. **Retrieval**: collapsed tree -- every node of every tree in scope (leaves and summaries) is
   ranked by cosine to the query and the top k are returned.  Summaries count as layer 1 tokens.
"""

from __future__ import annotations

import math
from typing import Collection, Sequence

import numpy as np

from ..sentences import split_sentences
from .base import ChunkTable, Doc, Hit, RetrieverSystem, count_tokens, fixed_token_chunks, top_k

LEAF_TOKENS = 100
SUMMARY_TOKENS = 128
MAX_LEVELS = 4
MAX_CLUSTER = 8
PCA_DIMS = 8
DUPLICATE_COSINE = 0.95


def cluster_nodes(vectors: np.ndarray, seed: int, *, max_cluster: int = MAX_CLUSTER) -> list[list[int]]:
    """Groups of row indices of ``vectors`` (GMM by BIC on PCA-reduced vectors, big groups split
    by k-means); deterministic for a seed.  Fewer than 3 rows form a single group."""
    # why local: scikit-learn costs ~2.5 s to import; only RAPTOR's tree building needs it
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA
    from sklearn.mixture import GaussianMixture

    n = len(vectors)
    if n <= 2:
        return [list(range(n))]
    dims = max(1, min(PCA_DIMS, n - 2))
    x = PCA(n_components=dims, random_state=seed).fit_transform(vectors.astype(np.float64))
    best, best_bic = None, math.inf
    for c in range(1, max(1, n // 2) + 1):
        gm = GaussianMixture(c, covariance_type="diag", random_state=seed, reg_covar=1e-4).fit(x)
        bic = gm.bic(x)
        if bic < best_bic - 1e-9:
            best, best_bic = gm, bic
    labels = best.predict(x)
    groups = [sorted(np.flatnonzero(labels == c).tolist()) for c in sorted(set(labels.tolist()))]
    out: list[list[int]] = []
    for g in groups:
        if len(g) <= max_cluster:
            out.append(g)
            continue
        parts = math.ceil(len(g) / max_cluster)
        km = KMeans(parts, random_state=seed, n_init=4).fit(vectors[g])
        for c in range(parts):
            members = [g[i] for i in np.flatnonzero(km.labels_ == c)]
            if members:
                out.append(members)
    return sorted(out, key=lambda g: g[0])


class RaptorSystem(RetrieverSystem):
    name = "raptor"
    description = "RAPTOR: GMM clustering of chunk embeddings, extractive summaries, collapsed-tree retrieval"

    def __init__(self, leaf_tokens: int = LEAF_TOKENS, summary_tokens: int = SUMMARY_TOKENS,
                 max_levels: int = MAX_LEVELS, max_cluster: int = MAX_CLUSTER):
        self.leaf_tokens, self.summary_tokens = leaf_tokens, summary_tokens
        self.max_levels, self.max_cluster = max_levels, max_cluster

    def config(self):
        return {"description": self.description, "leaf_tokens": self.leaf_tokens,
                "summary_tokens": self.summary_tokens, "max_levels": self.max_levels, "max_cluster": self.max_cluster,
                "clustering": "PCA(<=8) + GaussianMixture(diag, BIC) + KMeans split", "summaries": "extractive"}

    # ---- building ----------------------------------------------------------------------
    def index(self, docs: Sequence[Doc]) -> None:
        emb = self.ctx.embedder
        tok = emb.model.tokenizer
        self.table = ChunkTable()
        self.layers: list[int] = []
        self.levels: list[int] = []
        vectors: list[np.ndarray] = []
        # embed every sentence and every leaf of the corpus in two batches
        sent_spans = {d.doc_id: split_sentences(d.text) for d in docs}
        flat_sents = [" ".join(d.text[a:b].split()) for d in docs for a, b in sent_spans[d.doc_id]]
        sent_vecs_all = emb.encode_documents(flat_sents) if flat_sents else np.zeros((0, emb.info.dim), np.float32)
        leaf_spans = {d.doc_id: fixed_token_chunks(d.text, tok, self.leaf_tokens) for d in docs}
        leaf_texts = [d.text[a:b] for d in docs for a, b in leaf_spans[d.doc_id]]
        leaf_vecs_all = emb.encode_documents(leaf_texts) if leaf_texts else np.zeros((0, emb.info.dim), np.float32)
        si = li = 0
        self.n_summaries = 0
        for d in docs:
            spans = sent_spans[d.doc_id]
            svecs = sent_vecs_all[si:si + len(spans)]
            si += len(spans)
            leaves = leaf_spans[d.doc_id]
            lvecs = leaf_vecs_all[li:li + len(leaves)]
            li += len(leaves)
            self._build_tree(d, spans, svecs, leaves, lvecs, vectors)
        self.vectors = np.vstack(vectors) if vectors else np.zeros((0, emb.info.dim), np.float32)

    def _build_tree(self, d: Doc, sent_spans, sent_vecs, leaves, leaf_vecs, vectors: list) -> None:
        emb = self.ctx.embedder
        mids = np.asarray([(a + b) / 2 for a, b in sent_spans]) if sent_spans else np.zeros(0)
        sent_tokens = [count_tokens(" ".join(d.text[a:b].split())) for a, b in sent_spans]
        # a node: (row in the table, vector, sentence indices it holds)
        level_nodes: list[tuple[int, np.ndarray, list[int]]] = []
        for (a, b), v in zip(leaves, leaf_vecs):
            row = self.table.add(d, [(a, b)])
            self.layers.append(2)
            self.levels.append(0)
            vectors.append(v[None, :])
            held = np.flatnonzero((mids >= a) & (mids < b)).tolist()
            level_nodes.append((row, v, held))
        for level in range(1, self.max_levels + 1):
            if len(level_nodes) <= 1:
                break
            groups = cluster_nodes(np.vstack([v for _, v, _ in level_nodes]), self.ctx.seed,
                                   max_cluster=self.max_cluster)
            if all(len(g) == 1 for g in groups):
                break
            nxt, new_texts, new_meta = [], [], []
            for g in groups:
                if len(g) == 1:
                    nxt.append(level_nodes[g[0]])
                    continue
                members = [level_nodes[i] for i in g]
                chosen = self._summary_sentences(members, sent_vecs, sent_tokens)
                if not chosen:
                    nxt.extend(members)
                    continue
                spans = [sent_spans[i] for i in chosen]
                text = " ".join(" ".join(d.text[a:b].split()) for a, b in spans)
                new_texts.append(text)
                new_meta.append((spans, chosen))
            if not new_texts:
                break
            new_vecs = emb.encode_documents(new_texts)
            for text, (spans, chosen), v in zip(new_texts, new_meta, new_vecs):
                row = self.table.add(d, spans, text=text)
                self.layers.append(1)
                self.levels.append(level)
                vectors.append(v[None, :])
                self.n_summaries += 1
                nxt.append((row, v, chosen))
            if len(nxt) >= len(level_nodes):
                break
            level_nodes = nxt

    def _summary_sentences(self, members, sent_vecs: np.ndarray, sent_tokens: Sequence[int]) -> list[int]:
        pool = sorted({i for _, _, held in members for i in held})
        if not pool:
            return []
        centroid = np.mean([v for _, v, _ in members], axis=0)
        centroid = centroid / (np.linalg.norm(centroid) or 1.0)
        sims = sent_vecs[pool] @ centroid
        chosen: list[int] = []
        budget = 0
        for j in top_k(sims, len(pool)):
            i = pool[int(j)]
            if any(float(sent_vecs[i] @ sent_vecs[c]) > DUPLICATE_COSINE for c in chosen):
                continue
            cost = sent_tokens[i]
            if chosen and budget + cost > self.summary_tokens:
                continue
            chosen.append(i)
            budget += cost
            if budget >= self.summary_tokens:
                break
        return sorted(chosen)

    # ---- retrieval ---------------------------------------------------------------------
    def search(self, query: str, k: int, scope: Collection[str] | None = None) -> list[Hit]:
        if not len(self.table):
            return []
        q = self.ctx.embedder.encode_query(query)
        rows = self.table.rows(scope)
        sims = (self.vectors if rows is None else self.vectors[rows]) @ q
        out = []
        for i in top_k(sims, k):
            row = int(i if rows is None else rows[i])
            out.append(self.table.hit(row, sims[i], layer=self.layers[row]))
        return out
