"""Which section a passage belongs to (retrieval.passages.SectionCursor), and the front matter
the offline navigator neither reads nor cites when the body has evidence."""

import pytest

from vectree.retrieval.passages import SectionCursor, passage_rows


def _node(node_id, title, start, end, parent="n0", level=1):
    return {"node_id": node_id, "title": title, "page_start": start, "page_end": end, "parent_id": parent,
            "level": level, "verified": True}


NODES = [_node("n0", "A Study of Things", 1, 3, parent=None, level=0), _node("n1", "Abstract", 1, 1),
         _node("n2", "Introduction", 1, 2), _node("n3", "Method", 2, 2), _node("n4", "Results", 2, 3),
         _node("n5", "Conclusion", 3, 3)]
PAGES = [
    {"page_no": 1, "text": "A Study of Things\n\nAbstract\n\nWe study things. Results show more things.\n\n"
                          "1 Introduction\n\nThings matter a great deal to everyone."},
    {"page_no": 2, "text": "More on why things matter.\n\n2 Method\n\nWe count the things twice.\n\n"
                          "3 Results\n\nResults show that the counts agree in every case we tried."},
    {"page_no": 3, "text": "The agreement holds on all twelve datasets.\n\nConclusion\n\nThings are countable."},
]


def test_each_passage_gets_the_section_it_is_in_not_the_last_one_on_its_page():
    rows = passage_rows(PAGES, NODES)
    by_text = {r["text"]: r["node_id"] for r in rows}
    assert by_text["A Study of Things"] == "n0"  # before the first heading: the paper itself
    assert by_text["We study things. Results show more things."] == "n1"
    assert by_text["Things matter a great deal to everyone."] == "n2"
    assert by_text["More on why things matter."] == "n2"  # a section carries over a page break
    assert by_text["We count the things twice."] == "n3"
    # a body sentence that opens with a later section's title is not its heading...
    assert by_text["Results show that the counts agree in every case we tried."] == "n4"  # ...but "3 Results" was
    assert by_text["The agreement holds on all twelve datasets."] == "n4"
    assert by_text["Things are countable."] == "n5"


def test_a_sentence_opening_with_a_title_does_not_move_the_cursor():
    cursor = SectionCursor(NODES)
    assert cursor.section(1, "Abstract") == "n1"
    assert cursor.section(1, "Introduction of new things into old processes is hard to measure well.") == "n1"
    assert cursor.section(1, "Abstract -- a run-in abstract heading keeps its text") == "n1"


def test_missed_headings_fall_back_to_the_page_rule_and_never_go_back():
    cursor = SectionCursor(NODES)
    assert cursor.section(1, "Title words") == "n0"
    # no heading met at all: on page 3 the page rule (the deepest, latest-starting section) decides
    assert cursor.section(3, "Some text far into the paper.") == "n5"
    assert cursor.section(3, "Method") == "n5"  # an earlier section's title never moves it back


def test_the_navigator_cites_the_body_not_the_abstract(demo_store):
    from vectree.agent.navigator import OfflineNavigator, front_matter
    from vectree.agent.tools import Toolbox

    tb = Toolbox(demo_store)
    if tb.reranker() is None:
        pytest.skip("no shipped reader model")
    answer = OfflineNavigator(tb).answer("What accuracy did RELAX-DV reach?")
    assert not answer.abstained and answer.citations
    for c in answer.citations:
        passages = tb.passages(c["doc_id"])
        node = next(passages.nodes[i] for i, t in enumerate(passages.texts) if t == c["quote"])
        assert node not in front_matter(tb, c["doc_id"]), c
    # the demo papers have an abstract: the front matter is the paper node and that section
    doc = answer.citations[0]["doc_id"]
    titles = {n["node_id"]: n["title"] for n in tb.tree(doc)}
    assert sorted(titles[i] for i in front_matter(tb, doc))[0] in ("Abstract", titles[tb.tree(doc)[0]["node_id"]])
    assert "Abstract" in {titles[i] for i in front_matter(tb, doc)}
