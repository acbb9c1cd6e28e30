"""The Layer 0 dense table's ANN (IVF-PQ) index and incremental updates, on real text.

Entries are built from PubMedQA abstracts (``../shared/data/pubmedqa/corpus.jsonl``): one paper
entry per abstract (MeSH terms as the title, the first section as the body) and one section entry
per labelled abstract section, embedded with the real MiniLM model.  A small
``vector_index_min_rows`` makes the index appear at test size.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from vectree.retrieval.config import load_settings
from vectree.retrieval.embed import get_embedder
from vectree.retrieval.search import SearchIndex, build_index, read_entries, update_index
from vectree.retrieval.search.entries import paper_entry, section_entry
from vectree.retrieval.search.publish import ENTRIES_DIR, IndexPaths, read_meta
from vectree.retrieval.search.vectors import VectorTable

N_DOCS = 140


def _pubmed_entries(path, n: int, skip: int = 0):
    out = []
    with open(path) as fh:
        for i, line in enumerate(fh):
            if i < skip:
                continue
            if i >= skip + n:
                break
            doc = json.loads(line)
            doc_id = f"pmid-{doc['pmid']}"
            out.append(paper_entry(doc_id, "; ".join(doc["meshes"][:6]), doc["contexts"][0], doc["labels"], n_pages=1))
            for j, (label, text) in enumerate(zip(doc["labels"], doc["contexts"]), 1):
                out.append(section_entry(doc_id, f"n{j}", label.title(), text, 1, 1))
    return out


@pytest.fixture(scope="module")
def corpus(shared_data):
    path = shared_data / "pubmedqa" / "corpus.jsonl"
    return _pubmed_entries(path, N_DOCS), _pubmed_entries(path, 1, skip=N_DOCS)


@pytest.fixture(scope="module")
def embedder():
    return get_embedder()


def _snap(root):
    paths = IndexPaths.of(root)
    return paths.snapshot(paths.current())


def test_ann_index_above_the_threshold_agrees_with_exact_search(tmp_path, corpus, embedder):
    entries, _ = corpus
    assert len(entries) > 400
    settings = load_settings(vector_index_min_rows=300)
    report = build_index(tmp_path / "ix", entries, embedder=embedder, settings=settings)
    assert report.vector_index != "flat"
    table = VectorTable.open(_snap(tmp_path / "ix") / "vectors", settings=settings)
    assert table.vector_index_type is not None
    # queries: the opening words of 30 section texts (real sentences, not the stored strings)
    queries = [" ".join(e.body.split()[:12]) for e in entries if e.kind == "section"][::7][:30]
    recalls = []
    for q in queries:
        v = embedder.encode_query(q)
        ann = {h.entry_id for h in table.search(v, 10)}
        exact = {h.entry_id for h in table.search(v, 10, exact=True)}
        assert len(exact) == 10
        recalls.append(len(ann & exact) / 10)
    assert np.mean(recalls) >= 0.95, recalls


def test_below_the_threshold_there_is_no_vector_index(tmp_path, corpus, embedder):
    entries, _ = corpus
    report = build_index(tmp_path / "ix", entries, embedder=embedder,
                         settings=load_settings(vector_index_min_rows=len(entries) + 1))
    assert report.vector_index == "flat"
    assert VectorTable.open(_snap(tmp_path / "ix") / "vectors").vector_index_type is None


def test_adding_a_paper_appends_keeps_earlier_rows_and_is_searchable(tmp_path, corpus, embedder):
    entries, (extra_paper) = corpus
    extra = list(extra_paper)
    root = tmp_path / "ix"
    settings = load_settings(vector_index_min_rows=300)
    build_index(root, entries, embedder=embedder, settings=settings)
    before = _snap(root)
    old_fragments = {p.name: os.stat(p).st_ino for p in (before / ENTRIES_DIR).glob("*.parquet")}
    new_doc = extra[0].doc_id

    report = update_index(root, extra, embedder=embedder, doc_ids=[new_doc], settings=settings)
    assert report.mode == "incremental" and report.added == [new_doc] and report.embedded == len(extra)
    after = _snap(root)
    meta = read_meta(after)
    assert meta["entries"] == len(entries) + len(extra) and meta["papers"] == N_DOCS + 1
    assert meta["vector_index"] != "flat" and meta["build"]["folded"] is False  # appended, not re-optimised
    # the earlier entries fragments are the same files (hard links), not rewritten; one fragment came
    now = {p.name: os.stat(p).st_ino for p in (after / ENTRIES_DIR).glob("*.parquet")}
    assert all(now.get(name) == ino for name, ino in old_fragments.items())
    assert len(now) == len(old_fragments) + 1
    assert {e.entry_id for e in read_entries(root)} == {e.entry_id for e in entries + extra}

    table = VectorTable.open(after / "vectors", settings=settings)
    assert table.num_entries == len(entries) + len(extra) and table.unindexed_rows() == len(extra)
    section = next(e for e in extra if e.kind == "section")
    hits = table.search(embedder.encode_query(section.body), 5)
    assert hits[0].entry_id == section.entry_id  # the unindexed new rows are searched too
    results = SearchIndex(root, embedder=embedder).search(" ".join(section.body.split()[:20]), 3)
    assert results[0]["doc_id"] == new_doc

    # removing it again drops its rows from the table and the entries, and the rest stays
    report = update_index(root, [], embedder=embedder, doc_ids=[new_doc], settings=settings)
    assert report.removed == [new_doc]
    assert {e.entry_id for e in read_entries(root)} == {e.entry_id for e in entries}
    assert VectorTable.open(_snap(root) / "vectors").count_doc(new_doc) == 0
