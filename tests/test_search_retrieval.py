"""BM25, dense and hybrid retrieval on a small corpus with known answers; query syntax safety;
fusion arithmetic; unverified sections and page text never reach either backend."""

from __future__ import annotations

import pytest

from vectree.retrieval.embed import get_embedder
from vectree.retrieval.search import SearchIndex, build_index, search
from vectree.retrieval.search.bm25 import BM25Index, query_terms
from vectree.retrieval.search.entries import paper_entry, section_entry
from vectree.retrieval.search.fusion import RRF_K, fuse, minmax, rrf_scores, weighted_scores
from tests.test_search_corpus import PAPERS, make_store

LFP, SEI, PEROV, PEM, CORAL, PROT = sorted(PAPERS, key=lambda d: list(PAPERS).index(d))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    store = make_store(tmp_path_factory.mktemp("search") / "store")
    report = build_index(store, embedder=get_embedder())
    return store, SearchIndex.open(store), report


def _top(results):
    return [r["doc_id"] for r in results]


def test_build_report_counts_papers_and_entries(indexed):
    store, index, report = indexed
    verified = sum(1 for s in PAPERS.values() for sec in s["sections"] if sec[4])
    assert report.mode == "full" and report.papers == len(PAPERS)
    assert report.entries == len(PAPERS) + verified
    assert index.meta["embedder"] == {"name": get_embedder().info.name, "dim": get_embedder().info.dim}
    assert report.vector_index == "flat"  # far below the IVF-PQ threshold
    assert report.bytes["total"] == report.bytes["bm25"] + report.bytes["vectors"] + report.bytes["entries"] > 0


def test_bm25_finds_the_paper_sharing_the_rare_words(indexed):
    _, index, _ = indexed
    assert _top(index.search("platinum catalyst membrane", 3, mode="bm25"))[0] == PEM
    # stemming: "humid" / "degrading" match "Humidity degradation"
    assert _top(index.search("humid degrading", 3, mode="bm25"))[0] == PEROV
    # a word in no entry matches nothing
    assert index.search("xylophone", 3, mode="bm25") == []


def test_dense_finds_a_paraphrase_that_shares_no_word(indexed):
    _, index, _ = indexed
    query = "global warming hurts undersea wildlife"
    assert CORAL not in _top(index.search(query, 10, mode="bm25"))  # no lexical overlap at all
    assert _top(index.search(query, 3, mode="dense"))[0] == CORAL


def test_hybrid_ranks_the_known_paper_first_with_its_matched_section(indexed):
    _, index, _ = indexed
    for fusion in ("rrf", "weighted"):
        results = index.search("stopped-flow tryptophan fluorescence of folding proteins", 3, fusion=fusion)
        assert results[0]["doc_id"] == PROT
        assert results[0]["title"] == PAPERS[PROT]["title"]
        first = results[0]["matched_sections"][0]
        assert first == {"node_id": "n1", "title": "Stopped-flow fluorescence", "pages": [2, 3]}
        scores = [r["score"] for r in results]
        assert scores == sorted(scores, reverse=True)
    # the module-level entry point gives the same ranking from a Store
    store = indexed[0]
    assert _top(search(store, "coin cells cycled at 4C", k=2))[0] == LFP


def test_results_are_papers_with_at_most_max_sections(indexed):
    _, index, _ = indexed
    results = index.search("cells", 10, max_sections=1)
    assert len({r["doc_id"] for r in results}) == len(results)  # one result per paper
    assert all(len(r["matched_sections"]) <= 1 for r in results)
    assert set(results[0]) == {"doc_id", "title", "score", "matched_sections"}


@pytest.mark.parametrize("query", [
    '"unbalanced quote', "title:platinum", "catalyst AND", "OR", "NOT fuel", "-cell", "*", "plat*",
    "(fuel cell", "fuel cell)", "[1 TO 5", "{a TO b}", "cathode^2", "cell~2", "a:b:c", "\\", "/regex.*/",
    "+required -excluded", "&& || !", "  ", "", "\u00e9lectrode \u2013 \u03b1-phase",
])
def test_query_syntax_characters_never_raise(indexed, query):
    _, index, _ = indexed
    for mode in ("bm25", "dense", "hybrid"):
        results = index.search(query, 5, mode=mode)
        assert isinstance(results, list)
    assert "*" not in query_terms(query) and ":" not in query_terms(query)


def test_syntax_around_real_words_is_read_as_words(indexed):
    _, index, _ = indexed
    hostile = 'title:"platinum catalyst" AND (fuel OR -membrane*'
    assert _top(index.search(hostile, 3, mode="bm25"))[0] == PEM
    # "*" must not turn into match-everything, nor a field name into a filter
    assert index.search("*", 5, mode="bm25") == []
    assert index.search("kind:paper", 5, mode="bm25") == []  # as a filter it would match every paper


def test_unverified_sections_and_page_text_reach_neither_backend(indexed):
    _, index, _ = indexed
    snap = index._snap
    assert index.search("zanzibarite", 5, mode="bm25") == []
    assert index.search("quokka mascot", 5, mode="bm25") == []
    unverified = [f"n{i}" for i, s in enumerate(PAPERS[LFP]["sections"], 1) if not s[4]]
    assert unverified
    for node_id in unverified:
        assert snap.vectors.table.count_rows(f"doc_id = '{LFP}' AND node_id = '{node_id}'") == 0
    # and no dense hit ever names it
    hits = index.entry_hits("Zanzibarite crystals were discussed but never checked", mode="dense")["dense"]
    assert hits and all(not (h.doc_id == LFP and h.node_id in unverified) for h in hits)
    assert snap.bm25.num_entries == snap.vectors.num_entries == snap.meta["entries"]


def test_bad_arguments_are_clear_errors(indexed):
    _, index, _ = indexed
    with pytest.raises(ValueError, match="mode"):
        index.search("x", mode="sparse")
    with pytest.raises(ValueError, match="fusion"):
        index.search("x", fusion="borda")
    with pytest.raises(ValueError, match="k must"):
        index.search("x", 0)
    with pytest.raises(ValueError, match="dense_weight"):
        index.search("x", dense_weight=1.5)


def test_title_matches_are_boosted(tmp_path):
    entries = [paper_entry("a", "graphene membranes", "other words entirely here"),
               paper_entry("b", "other words entirely", "graphene membranes here")]
    ix = BM25Index.create(tmp_path / "bm25", entries)
    hits = ix.search("graphene", 2)
    assert [h.doc_id for h in hits] == ["a", "b"] and hits[0].score > hits[1].score
    assert [h.doc_id for h in ix.search("graphene", 2, title_boost=1.0)] != [] and ix.count_doc("a") == 1


# ---- fusion arithmetic -------------------------------------------------------------------
class _H:
    def __init__(self, doc_id, score, node_id=None, title="", pages=(None, None)):
        self.entry_id = f"{doc_id}#{node_id or 'paper'}"
        self.doc_id, self.node_id, self.score, self.title = doc_id, node_id, score, title
        self.kind = "section" if node_id else "paper"
        self.page_start, self.page_end = pages


def test_rrf_is_the_sum_of_reciprocal_ranks():
    fused = rrf_scores({"bm25": ["a", "b"], "dense": ["b", "c"]})
    assert fused["a"] == pytest.approx(1 / (RRF_K + 1))
    assert fused["b"] == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert fused["c"] == pytest.approx(1 / (RRF_K + 2))


def test_weighted_fusion_normalises_each_retriever():
    assert minmax({"a": 10.0, "b": 5.0, "c": 0.0}) == {"a": 1.0, "b": 0.5, "c": 0.0}
    fused = weighted_scores({"bm25": {"a": 12.0, "b": 2.0}, "dense": {"a": 0.2, "b": 0.6}}, {"bm25": 0.3, "dense": 0.7})
    assert fused == pytest.approx({"a": 0.3, "b": 0.7})


def test_sections_roll_up_to_their_paper_by_best_entry():
    bm25 = [_H("p1", 9.0, "s2", "Results", (4, 5)), _H("p2", 8.0), _H("p1", 7.0), _H("p1", 1.0, "s1", "Intro", (1, 1))]
    dense = [_H("p2", 0.9), _H("p1", 0.8, "s1", "Intro", (1, 1))]
    out = fuse({"bm25": bm25, "dense": dense}, fusion="rrf", k=5, paper_titles={"p1": "Paper one"})
    assert {r["doc_id"] for r in out} == {"p1", "p2"}  # four p1 entries, still one p1 result
    p1 = next(r for r in out if r["doc_id"] == "p1")
    assert p1["title"] == "Paper one"
    # s1 is dense rank 2 (index 1), s2 is bm25 rank 1 (index 0): s2 first
    assert p1["matched_sections"] == [{"node_id": "s2", "title": "Results", "pages": [4, 5]},
                                      {"node_id": "s1", "title": "Intro", "pages": [1, 1]}]
    # both papers are first in one list and second in the other: a tie, broken by doc_id
    assert [r["doc_id"] for r in out] == ["p1", "p2"] and out[0]["score"] == out[1]["score"]
    only = fuse({"bm25": bm25}, k=5)
    assert [r["doc_id"] for r in only] == ["p1", "p2"] and only[0]["score"] == 9.0
