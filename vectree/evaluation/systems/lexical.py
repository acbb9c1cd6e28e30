"""``bm25``: Tantivy BM25 over fixed 256-token chunks (the same chunks as ``dense-rag``).

The analyser is Layer 0's (:mod:`vectree.retrieval.search.bm25`: simple tokenizer, lower case, ASCII
folding, English stop words, Porter stemming) and user text goes through its ``query_terms`` so
no query syntax survives.  One in-memory index holds the whole corpus; a per-question scope (the
question's paper, a HotpotQA question's own paragraphs) is a term-set filter on ``doc_id``, so
the IDF statistics are those of the whole corpus.
"""

from __future__ import annotations

from typing import Collection, Sequence

import tantivy

from vectree.retrieval.search.bm25 import ANALYZER, _analyzer, query_terms

from .base import Doc, Hit, RetrieverSystem, fixed_chunk_table

CHUNK_TOKENS = 256


class BM25System(RetrieverSystem):
    name = "bm25"
    description = "Tantivy BM25 over fixed 256-token chunks"

    def __init__(self, chunk_tokens: int = CHUNK_TOKENS):
        self.chunk_tokens = chunk_tokens

    def config(self):
        return {"description": self.description, "chunk_tokens": self.chunk_tokens, "chunker": "MiniLM word pieces"}

    def index(self, docs: Sequence[Doc]) -> None:
        self.table = fixed_chunk_table(docs, self.ctx.embedder.model.tokenizer, self.chunk_tokens)
        sb = tantivy.SchemaBuilder()
        sb.add_integer_field("row", stored=True, indexed=True)
        sb.add_text_field("doc_id", stored=False, tokenizer_name="raw")
        sb.add_text_field("body", stored=False, tokenizer_name=ANALYZER)
        self.schema = sb.build()
        self.ix = tantivy.Index(self.schema)
        self.ix.register_tokenizer(ANALYZER, _analyzer())
        writer = self.ix.writer(50_000_000, 1)
        for i, text in enumerate(self.table.texts):
            writer.add_document(tantivy.Document(row=i, doc_id=self.table.doc_ids[i], body=text))
        writer.commit()
        writer.wait_merging_threads()
        self.ix.reload()
        self.searcher = self.ix.searcher()
        self.n_docs = len({d for d in self.table.doc_ids})

    def search(self, query: str, k: int, scope: Collection[str] | None = None) -> list[Hit]:
        terms = query_terms(query)
        if not terms or not len(self.table):
            return []
        q, _ = self.ix.parse_query_lenient(terms, ["body"])
        if scope is not None and len(set(scope)) < self.n_docs:
            only = tantivy.Query.term_set_query(self.schema, "doc_id", sorted(set(scope)))
            q = tantivy.Query.boolean_query([(tantivy.Occur.Must, q), (tantivy.Occur.Must, only)])
        hits = self.searcher.search(q, limit=k).hits
        rows = [(self.searcher.doc(addr)["row"][0], score) for score, addr in hits]
        # equal scores: chunk order, so runs are reproducible
        rows.sort(key=lambda r: (-r[1], r[0]))
        return [self.table.hit(i, s) for i, s in rows]
