"""Dense baselines: ``dense-rag`` (fixed 256-token chunks, MiniLM, top-k), ``reranked-dense-rag``
(dense top-50 reranked by a local cross-encoder) and ``flat`` (SproutRAG's 1-2-sentence chunks,
same encoder: plain chunk retrieval without a tree).

Vectors come from the shared embedder through the on-disk cache; retrieval is an exact scan
(cosine of unit vectors = dot product), ties broken by chunk order.
"""

from __future__ import annotations

from typing import Collection, Sequence

import numpy as np

from .base import (ChunkTable, Doc, Hit, NotAvailable, RetrieverSystem, fixed_chunk_table, load_cross_encoder,
                   sentence_chunk_table, top_k)

CHUNK_TOKENS = 256
RERANK_DEPTH = 50


class DenseSystem(RetrieverSystem):
    name = "dense-rag"
    description = "fixed 256-token chunks of the text, MiniLM cosine, top-k"

    def __init__(self, chunk_tokens: int = CHUNK_TOKENS, name: str | None = None):
        self.chunk_tokens = chunk_tokens
        if name:
            self.name = name
            self.description = f"fixed {chunk_tokens}-token chunks, MiniLM cosine, top-k"

    def config(self):
        return {"description": self.description, "chunk_tokens": self.chunk_tokens, "chunker": "MiniLM word pieces"}

    def chunk(self, docs: Sequence[Doc]) -> ChunkTable:
        return fixed_chunk_table(docs, self.ctx.embedder.model.tokenizer, self.chunk_tokens)

    def index(self, docs: Sequence[Doc]) -> None:
        self.table = self.chunk(docs)
        self.vectors = self.ctx.embedder.encode_documents(self.table.texts) if len(self.table) else \
            np.zeros((0, self.ctx.embedder.info.dim), np.float32)

    def scores(self, query: str, scope: Collection[str] | None) -> tuple[np.ndarray, np.ndarray | None]:
        q = self.ctx.embedder.encode_query(query)
        rows = self.table.rows(scope)
        mat = self.vectors if rows is None else self.vectors[rows]
        return mat @ q, rows

    def search(self, query: str, k: int, scope: Collection[str] | None = None) -> list[Hit]:
        if not len(self.table):
            return []
        sims, rows = self.scores(query, scope)
        best = top_k(sims, k)
        return [self.table.hit(int(i if rows is None else rows[i]), sims[i]) for i in best]


class FlatSystem(DenseSystem):
    name = "flat"
    description = "SproutRAG's 1-2-sentence chunks, MiniLM cosine, top-k (no tree)"

    def __init__(self):
        super().__init__(chunk_tokens=0)

    def config(self):
        return {"description": self.description, "chunker": "vectree.retrieval.sprout.chunks.chunk_text (pysbd, 1-2 sentences)"}

    def chunk(self, docs: Sequence[Doc]) -> ChunkTable:
        return sentence_chunk_table(docs)


class RerankedDenseSystem(DenseSystem):
    name = "reranked-dense-rag"
    description = ("dense top-50 (256-token chunks) reranked by the trained reader shipped with vectree "
                   "(or the cross-encoder at VECTREE_CROSS_ENCODER)")

    def __init__(self, model_path: str | None = None):
        super().__init__()
        if model_path is None:
            from vectree.retrieval.config import load_settings

            cross_encoder = load_settings().cross_encoder  # VECTREE_CROSS_ENCODER
            model_path = str(cross_encoder) if cross_encoder else None
        self.model_path = model_path
        self._model = None
        self._reader = None

    def unavailable(self) -> str | None:
        if not self.model_path:
            from vectree.retrieval.rerank.model import RerankerError, get_reader

            try:
                self._reader = get_reader()
            except RerankerError as exc:
                return str(exc)
            return None if self._reader is not None else \
                "no trained reader (VECTREE_RERANKER=off) and no VECTREE_CROSS_ENCODER"
        try:
            self._model = load_cross_encoder(self.model_path)
        except NotAvailable as exc:
            return str(exc)
        return None

    def config(self):
        return {**super().config(), "cross_encoder": self.model_path or (
            f"vectree reader {self._reader.config.model_id}" if self._reader else None), "rerank_depth": RERANK_DEPTH}

    def search(self, query: str, k: int, scope: Collection[str] | None = None) -> list[Hit]:
        candidates = super().search(query, max(k, RERANK_DEPTH), scope)
        if not candidates:
            return []
        if self._reader is not None:
            # the reader's logit fused with the chunk's cosine, as calibrated on dev (what vectree ranks by)
            from vectree.retrieval.rerank.calibrate import relevance_prob

            logits = self._reader.score(query, [h.text for h in candidates], max_len=192)
            scores = relevance_prob(logits, self._reader.config.calibration, [h.score for h in candidates])
        else:
            scores = np.asarray(self._model.predict([(query, h.text) for h in candidates], show_progress_bar=False),
                                dtype=np.float64).reshape(-1)
        order = top_k(scores, k)
        return [Hit(candidates[i].doc_id, candidates[i].spans, candidates[i].text, float(scores[i]),
                    candidates[i].pages, candidates[i].layer, candidates[i].unit_id) for i in order]
