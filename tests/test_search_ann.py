"""The Layer-0 ANN index on a real small corpus (PubMedQA abstracts, MiniLM vectors, LanceDB on disk).

Above ``vector_index_min_rows`` the dense table gets an IVF-PQ index; its answers agree with an
exact flat scan; adding a paper appends (the earlier entries files and Lance data files are
carried over, not rewritten) and the new paper is found at once; below the threshold there is
no index.  The threshold is a setting, so a small corpus exercises the same code as 10,000 papers.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from vectree.retrieval.config import load_settings
from vectree.retrieval.embed import get_embedder
from vectree.retrieval.search import SearchIndex, build_index, read_entries, update_index
from vectree.retrieval.search.entries import PAPER, SECTION, Entry
from vectree.retrieval.search.publish import IndexPaths, read_meta
from vectree.retrieval.search.vectors import VectorTable

THRESHOLD = 1000  # entries; the corpus below has ~1,400 (the 100 first abstracts: ~440)


class CachingEmbedder:
    """The real MiniLM embedder, each text embedded once per test module (vectors unchanged)."""

    def __init__(self):
        self.inner = get_embedder()
        self.cache: dict[str, np.ndarray] = {}

    @property
    def info(self):
        return self.inner.info

    def encode_documents(self, texts):
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.inner.encode_documents(todo)))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, self.info.dim), np.float32)

    def encode_queries(self, texts):
        return self.inner.encode_queries(texts)

    def encode_query(self, text):
        return self.inner.encode_query(text)


def _pubmedqa_entries(shared_data, n_docs: int) -> list[Entry]:
    """One paper entry (first sentence as title, abstract as body) and one section entry per
    labelled abstract paragraph, for the first ``n_docs`` PubMedQA documents."""
    out = []
    lines = (shared_data / "pubmedqa/corpus.jsonl").read_text().splitlines()[:n_docs]
    for line in lines:
        doc = json.loads(line)
        doc_id = f"pm{doc['pmid']}"
        ctx = [" ".join(c.split()) for c in doc["contexts"]]
        labels = doc.get("labels") or []
        title = ctx[0].split(". ")[0][:120]
        out.append(Entry(f"{doc_id}#paper", doc_id, None, PAPER, title, " ".join(ctx)[:600], 1, len(ctx)))
        for j, text in enumerate(ctx, start=1):
            label = labels[j - 1].title() if j - 1 < len(labels) else "Results"
            out.append(Entry(f"{doc_id}#n{j}", doc_id, f"n{j}", SECTION, label, text[:400], j, j))
    return out


@pytest.fixture(scope="module")
def corpus(shared_data):
    entries = _pubmedqa_entries(shared_data, 420)
    doc_ids = list(dict.fromkeys(e.doc_id for e in entries))
    held_out = doc_ids[-1]  # the paper added later
    base = [e for e in entries if e.doc_id != held_out]
    assert len(base) > THRESHOLD
    questions = [json.loads(x)["question"] for x in (shared_data / "pubmedqa/questions.jsonl").read_text().splitlines()]
    return {"entries": entries, "base": base, "held_out": held_out, "questions": questions[:40],
            "embedder": CachingEmbedder()}


@pytest.fixture(scope="module")
def ann_index(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("ann") / "index"
    settings = load_settings(vector_index_min_rows=THRESHOLD)
    build_index(root, corpus["base"], embedder=corpus["embedder"], settings=settings)
    return root, settings


def _vectors(root, settings) -> VectorTable:
    paths = IndexPaths.of(root)
    return VectorTable.open(paths.snapshot(paths.current()) / "vectors", settings=settings)


def test_ann_index_is_created_above_the_threshold(ann_index):
    root, settings = ann_index
    meta = read_meta(IndexPaths.of(root).snapshot(IndexPaths.of(root).current()))
    assert meta["entries"] > THRESHOLD
    assert meta["vector_index"] != "flat"
    table = _vectors(root, settings)
    assert table.vector_index_type is not None
    assert any("vector" in ix.columns for ix in table.table.list_indices())


def test_ann_results_agree_with_exact_search(ann_index, corpus):
    root, settings = ann_index
    table = _vectors(root, settings)
    embedder = corpus["embedder"]
    recalls = []
    for q in corpus["questions"]:
        v = embedder.encode_query(q)
        ann = {h.entry_id for h in table.search(v, 10)}
        exact = table.search(v, 10, exact=True)
        assert len(exact) == 10
        recalls.append(len(ann & {h.entry_id for h in exact}) / 10)
    assert np.mean(recalls) >= 0.9, recalls
    # and the service-level search answers through the index
    hits = SearchIndex.open(root, embedder=embedder).search(corpus["questions"][0], 5, mode="dense")
    assert len(hits) == 5


def test_incremental_add_keeps_earlier_rows_and_is_searchable(ann_index, corpus):
    root, settings = ann_index
    paths = IndexPaths.of(root)
    before = paths.current()
    prev_dir = paths.snapshot(before)
    prev_meta = read_meta(prev_dir)
    old_files = {f.name: os.stat(f).st_ino for f in (prev_dir / "entries").glob("*.parquet")}
    old_lance = {f.relative_to(prev_dir / "vectors"): os.stat(f).st_ino
                 for f in (prev_dir / "vectors").rglob("data/*.lance")}
    new = corpus["held_out"]
    report = update_index(root, corpus["entries"], doc_ids=[new], embedder=corpus["embedder"], settings=settings)
    assert report.mode == "incremental"
    after = paths.current()
    assert after != before
    snap = paths.snapshot(after)
    meta = read_meta(snap)
    fresh = [e for e in corpus["entries"] if e.doc_id == new]
    assert meta["entries"] == prev_meta["entries"] + len(fresh)
    assert meta["build"]["embedded"] == len(fresh) and meta["build"]["folded"] is False
    assert meta["vector_index"] == prev_meta["vector_index"]
    # every earlier row is still there, and the earlier files were carried over, not rewritten
    assert {e.entry_id for e in read_entries(root, after)} == {e.entry_id for e in corpus["entries"]}
    for name, ino in old_files.items():
        assert os.stat(snap / "entries" / name).st_ino == ino
    assert old_lance and all(os.stat(snap / "vectors" / rel).st_ino == ino for rel, ino in old_lance.items())
    # the new paper is searchable at once (rows no index covers yet are scanned exactly)
    table = _vectors(root, settings)
    assert table.num_entries == meta["entries"] and table.count_doc(new) == len(fresh)
    for e in fresh:
        hit = table.search(corpus["embedder"].encode_documents([e.text])[0], 1)[0]
        assert hit.entry_id == e.entry_id
    section = fresh[1]
    found = SearchIndex.open(root, embedder=corpus["embedder"]).search(section.body, 3, mode="hybrid")
    assert found[0]["doc_id"] == new


def test_no_index_below_the_threshold(corpus, tmp_path):
    small = [e for e in corpus["base"] if e.doc_id in {x.doc_id for x in corpus["base"][:400]}]
    assert len(small) < THRESHOLD
    settings = load_settings(vector_index_min_rows=THRESHOLD)
    build_index(tmp_path / "index", small, embedder=corpus["embedder"], settings=settings)
    paths = IndexPaths.of(tmp_path / "index")
    assert read_meta(paths.snapshot(paths.current()))["vector_index"] == "flat"
    table = _vectors(tmp_path / "index", settings)
    assert table.vector_index_type is None
    assert not any("vector" in ix.columns for ix in table.table.list_indices())
    # exact either way: the flat scan and the bypass agree
    v = corpus["embedder"].encode_query(corpus["questions"][0])
    assert [h.entry_id for h in table.search(v, 10)] == [h.entry_id for h in table.search(v, 10, exact=True)]
