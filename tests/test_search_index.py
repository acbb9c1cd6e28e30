"""Index lifecycle: incremental updates touch only the changed paper, removal reaches both
backends, atomic snapshots (readers during a rebuild see old or new, never a mix; a failed build
leaves the old one serving), garbage collection, embedder mismatch, the IVF-PQ threshold."""

from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from vectree.retrieval.embed import EmbedderInfo, EmbedderMismatchError, get_embedder
from vectree.retrieval.search import IndexNotBuiltError, SearchIndex, build_index, read_entries, update_index
from vectree.retrieval.config import load_settings
from vectree.retrieval.search.entries import Entry, store_entries
from vectree.retrieval.search.index import _Snapshot, current_snapshot_id
from vectree.retrieval.search.vectors import VectorTable
from vectree.retrieval.store import atomic_write_parquet
from tests.test_search_corpus import PAPERS, TREE_SCHEMA, make_store, papers_copy, tree_rows, write_catalog, write_paper

LFP, SEI, PEROV, PEM, CORAL, PROT = list(PAPERS)


class CountingEmbedder:
    """The real MiniLM, recording every document text it embeds."""

    def __init__(self, inner=None, fail_after: int | None = None, info: EmbedderInfo | None = None):
        self.inner = inner or get_embedder()
        self.texts: list[str] = []
        self.fail_after = fail_after
        self._info = info

    @property
    def info(self) -> EmbedderInfo:
        return self._info or self.inner.info

    def encode_documents(self, texts):
        if self.fail_after is not None and len(self.texts) + len(texts) > self.fail_after:
            raise RuntimeError("embedding failed (injected)")
        self.texts += list(texts)
        return self.inner.encode_documents(texts)

    def encode_queries(self, texts):
        return self.inner.encode_queries(texts)

    def encode_query(self, text):
        return self.inner.encode_query(text)


@pytest.fixture()
def store(tmp_path):
    return make_store(tmp_path / "store")


def _snapshots(store):
    return sorted(p.name for p in (store.index_dir / "snapshots").iterdir())


def _docs(results):
    return {r["doc_id"] for r in results}


def test_update_with_nothing_changed_publishes_nothing(store):
    first = build_index(store, embedder=get_embedder())
    again = update_index(store, embedder=CountingEmbedder())
    assert again.mode == "unchanged" and again.snapshot_id == first.snapshot_id and again.embedded == 0
    assert _snapshots(store) == [first.snapshot_id]


def test_incremental_update_touches_only_the_changed_paper(store):
    first = build_index(store, embedder=get_embedder())
    before = {e.entry_id: e for e in read_entries(store)}
    # change one section summary of SEI
    papers = papers_copy()
    title, _, p0, p1, ok = papers[SEI]["sections"][1]
    papers[SEI]["sections"][1] = (title, "Nyquist plots show a growing semicircle from the passivation film.", p0, p1, ok)
    write_paper(store, SEI, papers[SEI])

    counting = CountingEmbedder()
    report = update_index(store, embedder=counting)
    assert report.mode == "incremental" and report.changed == [SEI] and not report.added and not report.removed
    sei_entries = [e for e in store_entries(store) if e.doc_id == SEI]
    assert report.embedded == len(sei_entries) == len(counting.texts)
    assert sorted(counting.texts) == sorted(e.text for e in sei_entries)  # nothing else was re-embedded

    after = {e.entry_id: e for e in read_entries(store)}
    assert {k: v for k, v in after.items() if v.doc_id != SEI} == {k: v for k, v in before.items() if v.doc_id != SEI}
    index = SearchIndex.open(store)
    assert index.snapshot_id == report.snapshot_id != first.snapshot_id
    hit = index.search("nyquist semicircle", 3, mode="bm25")
    assert hit[0]["doc_id"] == SEI and hit[0]["matched_sections"][0]["node_id"] == "n2"
    assert not any(r["doc_id"] == SEI for r in index.search("charge-transfer resistance", 5, mode="bm25"))
    snap = index._snap
    for doc_id in PAPERS:
        n = sum(e.doc_id == doc_id for e in after.values())
        assert snap.bm25.count_doc(doc_id) == snap.vectors.count_doc(doc_id) == n

    # the snapshot it replaced is kept, and untouched (its files were linked or copied, never edited)
    old = _Snapshot.open(store.index_dir, first.snapshot_id)
    assert old.bm25.search("charge-transfer resistance", 3)[0].doc_id == SEI
    assert old.bm25.search("nyquist semicircle", 3) == []
    assert old.vectors.num_entries == old.bm25.num_entries == first.entries


def test_adding_a_paper_embeds_only_that_paper(store):
    papers = papers_copy()
    new_id = "new-paper-aaaaaaaaa7"
    spec = dict(title="Sodium ion batteries with hard carbon", abstract="Hard carbon hosts sodium.", n_pages=4,
                sections=[("Sodiation plateau", "The low-voltage plateau stores most sodium.", 2, 3, True)],
                page_only="")
    build_index(store, embedder=get_embedder())
    write_paper(store, new_id, spec)
    write_catalog(store, {**papers, new_id: spec})
    counting = CountingEmbedder()
    report = update_index(store, embedder=counting)
    assert report.added == [new_id] and not report.changed and report.embedded == 2 == len(counting.texts)
    assert SearchIndex.open(store).search("hard carbon sodiation", 1, mode="bm25")[0]["doc_id"] == new_id


def test_removing_a_paper_removes_its_entries_from_both_backends(store):
    build_index(store, embedder=get_embedder())
    index = SearchIndex.open(store)
    assert index._snap.bm25.count_doc(PEM) > 0 and index._snap.vectors.count_doc(PEM) > 0
    assert PEM in _docs(index.search("platinum catalyst", 3))

    papers = papers_copy()
    del papers[PEM]
    write_catalog(store, papers)
    store.remove_paper(PEM)
    report = update_index(store, embedder=CountingEmbedder())
    assert report.removed == [PEM] and report.embedded == 0

    assert index.search("platinum catalyst", 10, mode="hybrid")  # the open reader picked up the new snapshot
    assert index.snapshot_id == report.snapshot_id
    snap = index._snap
    assert snap.bm25.count_doc(PEM) == 0 and snap.vectors.count_doc(PEM) == 0
    for mode in ("bm25", "dense", "hybrid"):
        assert PEM not in _docs(index.search("platinum catalyst proton exchange membrane", 10, mode=mode))
    assert snap.bm25.num_entries == snap.vectors.num_entries == len(read_entries(store))
    assert PEM not in {e.doc_id for e in read_entries(store)}


def test_scoped_update_compares_only_the_named_papers(store):
    build_index(store, embedder=get_embedder())
    papers = papers_copy()
    papers[CORAL]["abstract"] = "Marine heatwaves bleach reefs; zooxanthellae leave the coral."
    write_catalog(store, papers)
    report = update_index(store, embedder=CountingEmbedder(), doc_ids=[CORAL])
    assert report.changed == [CORAL]
    assert SearchIndex.open(store).search("zooxanthellae", 1, mode="bm25")[0]["doc_id"] == CORAL


def test_a_failed_build_leaves_the_old_snapshot_serving(store):
    first = build_index(store, embedder=get_embedder())
    index = SearchIndex.open(store)
    expected = index.search("platinum catalyst", 3)
    with pytest.raises(RuntimeError, match="injected"):
        build_index(store, embedder=CountingEmbedder(fail_after=0))
    papers = papers_copy()
    papers[LFP]["abstract"] = "Changed abstract to force an incremental update."
    write_catalog(store, papers)
    with pytest.raises(RuntimeError, match="injected"):
        update_index(store, embedder=CountingEmbedder(fail_after=0))
    assert current_snapshot_id(store.index_dir) == first.snapshot_id
    assert _snapshots(store) == [first.snapshot_id]  # no half-built snapshot left behind
    assert index.search("platinum catalyst", 3) == expected
    assert SearchIndex.open(store).snapshot_id == first.snapshot_id


def test_garbage_collection_keeps_current_and_previous(store):
    ids = []
    papers = papers_copy()
    for i in range(3):
        papers[PROT]["abstract"] = f"Folding rates, revision {i}."
        write_catalog(store, papers)
        ids.append((build_index if i == 0 else update_index)(store, embedder=get_embedder()).snapshot_id)
    assert len(set(ids)) == 3
    assert _snapshots(store) == sorted(ids[1:])
    assert current_snapshot_id(store.index_dir) == ids[2]


def test_reader_during_rebuilds_sees_old_or_new_never_a_mix(store):
    old_papers = {d: PAPERS[d] for d in (LFP, SEI, PEM)}
    new_papers = {d: PAPERS[d] for d in (CORAL, SEI, PEM)}
    old_entries = [e for e in store_entries(store) if e.doc_id in old_papers]
    new_entries = [e for e in store_entries(store) if e.doc_id in new_papers]
    embedder = get_embedder()
    build_index(store, old_entries, embedder=embedder)
    early = SearchIndex.open(store)  # opened before the rebuilds
    pinned = SearchIndex.open(store, auto_refresh=False)  # never asks for a new snapshot itself
    allowed = {frozenset(old_papers), frozenset(new_papers)}
    errors: list[BaseException] = []
    done = threading.Event()

    def rebuild():
        try:
            for i in range(4):
                build_index(store, new_entries if i % 2 == 0 else old_entries, embedder=embedder)
                update_index(store, old_entries if i % 2 == 0 else new_entries, embedder=embedder)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=rebuild)
    thread.start()
    while not any(p.name.startswith(".tmp-") for p in (store.index_dir / "snapshots").iterdir()) and not done.is_set():
        time.sleep(0.002)
    during = SearchIndex.open(store)  # opened while a snapshot was being built
    seen: dict[str, set[str]] = {"early": set(), "during": set()}
    queries = 0
    while not done.is_set() or queries < 5:
        for name, reader in (("early", early), ("during", during)):
            results = reader.search("cathode cracking and platinum", 10)
            assert frozenset(_docs(results)) in allowed, _docs(results)
            seen[name].add(reader.snapshot_id)
        assert frozenset(_docs(pinned.search("cathode cracking and platinum", 10))) in allowed
        queries += 1
    thread.join()
    assert not errors, errors
    assert len(seen["early"]) >= 2  # it did move to newer snapshots while the rebuilds ran
    final = current_snapshot_id(store.index_dir)
    early.search("anything", 1)
    during.search("anything", 1)
    assert early.snapshot_id == during.snapshot_id == final
    assert _docs(early.search("cathode", 10)) == set(new_papers)


def test_embedder_mismatch_is_a_clear_error(store):
    real = get_embedder()
    build_index(store, embedder=real)
    other = CountingEmbedder(info=EmbedderInfo("allenai/specter2_base", 768))
    with pytest.raises(EmbedderMismatchError, match="specter2_base"):
        SearchIndex.open(store, embedder=other)
    renamed = CountingEmbedder(info=EmbedderInfo("some-other-minilm", real.info.dim))  # same dim, other model
    with pytest.raises(EmbedderMismatchError, match="some-other-minilm"):
        SearchIndex.open(store, embedder=renamed)

    # an index built with another model: BM25 still answers, dense refuses (lazily loaded default)
    build_index(store, embedder=renamed)
    index = SearchIndex.open(store)
    assert index.search("platinum catalyst", 2, mode="bm25")[0]["doc_id"] == PEM
    for mode in ("dense", "hybrid"):
        with pytest.raises(EmbedderMismatchError, match="some-other-minilm"):
            index.search("platinum catalyst", 2, mode=mode)
    # the pipeline's update notices the model change and rebuilds everything with the new one
    report = update_index(store, embedder=real)
    assert report.mode == "full" and "embedder changed" in report.reason and report.embedded == report.entries
    assert SearchIndex.open(store, embedder=real).search("platinum catalyst", 1)[0]["doc_id"] == PEM


def test_no_index_and_bad_entries_are_clear_errors(store, tmp_path):
    with pytest.raises(IndexNotBuiltError, match="vectree ingest"):
        SearchIndex.open(store)
    with pytest.raises(IndexNotBuiltError):
        read_entries(tmp_path / "nowhere")
    dup = [Entry("a#paper", "a", None, "paper", "A", "x"), Entry("a#paper", "a", None, "paper", "A", "y")]
    with pytest.raises(ValueError, match="duplicate entry id"):
        build_index(tmp_path / "ix", dup, embedder=get_embedder())
    orphan = [Entry("a#s1", "a", "s1", "section", "S", "x")]
    with pytest.raises(ValueError, match="exactly one paper entry"):
        build_index(tmp_path / "ix", orphan, embedder=get_embedder())
    with pytest.raises(TypeError, match="entries are required"):
        build_index(tmp_path / "ix", embedder=get_embedder())
    assert not (tmp_path / "ix" / "CURRENT").exists()


def test_empty_corpus_builds_an_empty_index(tmp_path):
    store = make_store(tmp_path / "store", {})
    report = build_index(store, embedder=get_embedder())
    assert report.entries == 0
    assert SearchIndex.open(store).search("anything", 5) == []


def test_tree_rewritten_with_a_section_unverified_drops_it_from_the_index(store):
    build_index(store, embedder=get_embedder())
    rows = tree_rows(PEROV, PAPERS[PEROV])
    rows[2]["verified"] = False  # "Encapsulation strategies" failed a later verification
    atomic_write_parquet(store.tree_path(PEROV), pa.Table.from_pylist(rows, schema=TREE_SCHEMA))
    report = update_index(store, embedder=CountingEmbedder())
    assert report.changed == [PEROV]
    assert SearchIndex.open(store).search("glass edge sealant encapsulation", 5, mode="bm25") == []


def test_vector_index_is_built_once_the_table_is_large_enough(tmp_path):
    settings = load_settings(vector_index_min_rows=600)
    rng = np.random.default_rng(0)
    dim, n = 32, 700
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    entries = [Entry(f"d{i // 7}#s{i}", f"d{i // 7}", f"s{i}", "section", f"t{i}", "") for i in range(n)]
    small = VectorTable.create(tmp_path / "small", dim, entries[:500], vecs[:500], settings=settings)
    assert small.vector_index_type is None  # exact flat scan below the threshold
    table = VectorTable.create(tmp_path / "big", dim, entries, vecs, settings=settings)
    assert table.vector_index_type is not None
    assert any("doc_id" in ix.columns for ix in table.table.list_indices())
    for i in (0, 123, 699):  # refine_factor re-ranks with exact vectors: a stored vector finds itself
        assert table.search(vecs[i], 5)[0].entry_id == entries[i].entry_id
    table.replace([], None, delete_doc_ids=["d0"])
    assert table.count_doc("d0") == 0 and table.num_entries == n - 7


def test_an_update_with_nothing_to_embed_never_loads_the_model(store):
    """A no-change refresh must not spend seconds loading MiniLM: the default embedder reads its
    name and dimension from the model's folder and loads the weights only to encode."""
    import subprocess
    import sys

    from vectree.retrieval.embed import LazyEmbedder

    assert LazyEmbedder().info == get_embedder().info  # the folder says what the model says
    build_index(store, embedder=get_embedder())
    probe = ("import sys\nfrom vectree.retrieval.store import Store\nfrom vectree.retrieval.search import update_index\n"
             f"r = update_index(Store({str(store.root)!r}))\n"
             "print(r.mode, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["unchanged", "False", "False"]
