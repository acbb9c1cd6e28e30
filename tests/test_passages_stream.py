"""Streamed passages (embedded a fixed batch at a time) equal the one-call build, on a real
multi-page PDF parsed into a store; the encoder never sees more than one batch."""

from __future__ import annotations

import numpy as np

from tests import pdfmaker
from vectree.retrieval.corpus import scan
from vectree.retrieval.embed import get_embedder
from vectree.retrieval.ingest import ingest_paper
from vectree.retrieval.passages import build_passages, iter_pages, stream_passages
from vectree.retrieval.store import Store, read_parquet


class CountingEmbedder:
    """The real MiniLM encoder, recording the size of every call."""

    def __init__(self, inner):
        self.inner = inner
        self.calls: list[int] = []

    def encode_documents(self, texts):
        self.calls.append(len(texts))
        return self.inner.encode_documents(texts)


def test_streamed_passages_equal_the_one_call_build_in_bounded_batches(tmp_path):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    sections = [(f"{i + 1} {h.split(' ', 1)[-1]}", body) for i, (h, body) in enumerate(pdfmaker.GOOD_SECTIONS * 6)]
    pdfmaker.write_paper(folder / "long.pdf", "Streaming Passages Over Many Pages", sections)
    store = Store(tmp_path / "store")
    files = scan([str(folder)])
    record = ingest_paper(store, files)
    assert record["status"] == "ok" and record["n_pages"] >= 3
    doc_id = record["doc_id"]
    pages = store.read_pages(doc_id)
    nodes = [{"node_id": "n1", "parent_id": "n0", "level": 1, "page_start": 1, "page_end": 2, "verified": True, "title": "a"},
             {"node_id": "n2", "parent_id": "n0", "level": 1, "page_start": 3, "page_end": record["n_pages"], "verified": True,
              "title": "b"}]
    embedder = CountingEmbedder(get_embedder())
    whole = build_passages(pages, nodes, embedder)
    assert embedder.calls == [whole.num_rows] and whole.num_rows > 12
    embedder.calls.clear()
    stats = stream_passages(store, doc_id, nodes, embedder, batch=5)
    assert max(embedder.calls) <= 5 and sum(embedder.calls) == whole.num_rows and len(embedder.calls) > 2
    streamed = read_parquet(store.passages_path(doc_id))
    assert stats == {"passages": whole.num_rows,
                     "pages_with_passages": len(set(whole.column("page_no").to_pylist()))}
    assert streamed.drop_columns(["vector"]).to_pylist() == whole.drop_columns(["vector"]).to_pylist()
    np.testing.assert_allclose(np.array(streamed.column("vector").to_pylist()),
                               np.array(whole.column("vector").to_pylist()), atol=1e-5)
    assert [p["page_no"] for p in iter_pages(store, doc_id)] == [p["page_no"] for p in pages]
