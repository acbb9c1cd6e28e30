"""The seven tools and the offline navigator against a store built from the demo corpus."""

from __future__ import annotations

import json

import pytest

from vectree.agent.navigator import OfflineNavigator
from vectree.agent.tokens import count_tokens
from vectree.agent.tools import TOOL_NAMES, Toolbox, ToolError, openai_tools, validate_arguments
from vectree.retrieval.demo import DEMO_QUESTIONS, demo_headings, expected_pages
from vectree.retrieval.trees.normalize import title_key


@pytest.fixture(scope="module")
def toolbox(demo_store):
    return Toolbox(demo_store)


@pytest.fixture(scope="module")
def ids(demo_store):
    return {r["slug"]: r["doc_id"] for r in demo_store.read_catalog()}


def test_schemas_are_openai_tool_definitions():
    tools = openai_tools()
    assert [t["function"]["name"] for t in tools] == list(TOOL_NAMES) and len(tools) == 7
    for t in tools:
        assert t["type"] == "function" and t["function"]["parameters"]["type"] == "object"
        json.dumps(t)


def test_every_result_reports_its_tokens_by_one_rule(toolbox, ids):
    result = toolbox.call("get_document_tree", {"doc_id": ids["helix212-dataset"]})
    assert result.tokens == count_tokens(result.text) == (len(result.text) + 3) // 4
    assert json.loads(result.text) == result.data


def test_search_papers_finds_the_paper_compactly(toolbox, ids):
    hits = 0
    for q in DEMO_QUESTIONS:
        result = toolbox.search_papers(q["question"], k=3)
        hits += result.data["results"][0]["doc_id"] == ids[q["slug"]]
        assert result.tokens / len(result.data["results"]) < 120  # about 50 tokens a result
        assert result.layer == 0
    assert hits >= 0.9 * len(DEMO_QUESTIONS)


def test_document_tree_holds_the_true_headings_with_their_pages(toolbox, ids):
    for slug, doc_id in ids.items():
        result = toolbox.get_document_tree(doc_id, max_depth=3)
        assert 100 <= result.tokens <= 800, (slug, result.tokens)
        got = {title_key(s["title"]): s["pages"] for s in result.data["sections"]}
        truth = [(level, text, page) for level, text, page in demo_headings(slug) if level >= 1]
        found = [page for _, text, page in truth if title_key(text) in got and got[title_key(text)][0] == page]
        assert len(found) >= 0.8 * len(truth), (slug, sorted(got), truth)


def test_get_section_and_unknown_ids(toolbox, ids):
    doc = ids["calendar-ageing-nmc811"]
    sections = toolbox.get_document_tree(doc, max_depth=1).data["sections"]
    with_children = None
    for s in sections:
        res = toolbox.get_section(doc, s["node_id"])
        assert res.data["pages"] == s["pages"] and res.data["summary"]
        if res.data["children"]:
            with_children = res
    assert with_children is not None
    for child in with_children.data["children"]:
        assert with_children.data["pages"][0] <= child["pages"][0] <= child["pages"][1] <= with_children.data["pages"][1]
    with pytest.raises(ToolError, match="unknown node_id"):
        toolbox.get_section(doc, "n999")
    with pytest.raises(ToolError, match="unknown doc_id"):
        toolbox.get_document_tree("no-such-paper-0000000000")
    with pytest.raises(ToolError, match="invalid doc_id"):
        toolbox.call("get_document_tree", {"doc_id": "../../etc/passwd"})


def test_search_within_paper_points_at_the_evidence_page(toolbox, ids):
    hits = 0
    for q in DEMO_QUESTIONS:
        result = toolbox.search_within_paper(ids[q["slug"]], q["question"], k=3)
        pages = {r["page"] for r in result.data["results"]}
        hits += bool(pages & set(expected_pages(q)))
        for r in result.data["results"]:
            assert len(r["snippet"].split()) <= 60  # snippets, not full text
    assert hits >= 0.75 * len(DEMO_QUESTIONS)


def test_page_content_and_image(toolbox, ids):
    q = DEMO_QUESTIONS[0]
    doc, page = ids[q["slug"]], expected_pages(q)[0]
    content = toolbox.call("get_page_content", {"doc_id": doc, "pages": [page]})
    assert content.layer == 2 and q["answer"].split()[0] in content.data["pages"][0]["text"]
    assert 300 <= content.tokens <= 2600
    with pytest.raises(ToolError, match="out of range"):
        toolbox.call("get_page_content", {"doc_id": doc, "pages": [99]})
    with pytest.raises(ToolError, match="at most 3"):
        toolbox.call("get_page_content", {"doc_id": doc, "pages": [1, 2, 3, 4]})
    image = toolbox.call("get_page_image", {"doc_id": doc, "page": page, "dpi": 50})
    assert image.image_png.startswith(b"\x89PNG\r\n\x1a\n") and image.tokens > 85


def test_submit_answer_checks_every_quote_against_its_page(toolbox, ids):
    q = DEMO_QUESTIONS[0]
    doc, page = ids[q["slug"]], expected_pages(q)[0]
    text = toolbox.get_page_content(doc, [page]).data["pages"][0]["text"]
    quote = " ".join(text.split()[20:32]).upper()  # case and line breaks do not matter
    result = toolbox.call("submit_answer", {"answer": "x", "citations": [
        {"doc_id": doc, "page": page, "quote": quote},
        {"doc_id": doc, "page": page, "quote": "a sentence that this paper never printed"},
        {"doc_id": doc, "page": 77, "quote": quote},
    ]})
    valid = [c["valid"] for c in result.data["citations"]]
    assert valid == [True, False, False]
    assert "not found" in result.data["citations"][1]["reason"]


@pytest.mark.parametrize("name,args,message", [
    ("drop_tables", {}, "unknown tool"),
    ("search_papers", "{not json", "not valid JSON"),
    ("search_papers", {}, "missing required"),
    ("search_papers", {"query": "x", "k": "five"}, "must be of type integer"),
    ("search_papers", {"query": "x", "k": 0}, "at least 1"),
    ("get_page_content", {"doc_id": "a", "pages": []}, "at least 1 item"),
    ("search_papers", {"query": "x", "limit": 3}, "unknown arguments"),
])
def test_bad_arguments_give_messages_for_the_model(name, args, message):
    with pytest.raises(ToolError, match=message):
        validate_arguments(name, args)


def test_offline_navigator_answers_with_page_citations(toolbox, ids):
    nav = OfflineNavigator(toolbox)
    right_pages = right_numbers = 0
    for q in DEMO_QUESTIONS:
        answer = nav.answer(q["question"])  # from the whole corpus: search first
        tools = [s["tool"] for s in answer.trace["steps"]]
        if answer.abstained:  # the calibrated reader found no good evidence: counted as wrong below
            assert tools[0] == "search_papers" and tools[-1] == "submit_answer" and "get_page_content" not in tools
            assert answer.citations == []
            continue
        assert tools[:3] == ["search_papers", "get_document_tree", "search_within_paper"]
        assert tools[-1] == "submit_answer" and "get_page_content" in tools
        assert all(c["valid"] for c in answer.citations)
        assert answer.trace["tokens"]["layer0"] > 0 and answer.trace["tokens"]["layer2"] > 0
        right_pages += bool({c["page"] for c in answer.citations if c["doc_id"] == ids[q["slug"]]}
                            & set(expected_pages(q)))
        numbers = [t for t in q["answer"].replace(",", "").split() if any(ch.isdigit() for ch in t)]
        right_numbers += bool(numbers) and numbers[0].rstrip("%.") in answer.answer.replace(",", "")
    assert right_pages >= 0.6 * len(DEMO_QUESTIONS)
    assert right_numbers >= 0.4 * len(DEMO_QUESTIONS)


def test_navigator_within_a_given_paper_skips_corpus_search(toolbox, ids):
    q = DEMO_QUESTIONS[0]
    answer = OfflineNavigator(toolbox).answer(q["question"], paper=ids[q["slug"]])
    assert answer.trace["steps"][0]["tool"] == "get_document_tree"
    assert answer.trace["tokens"]["layer0"] == 0
    with pytest.raises(ToolError):
        OfflineNavigator(toolbox).answer(q["question"], paper="unknown-paper-0000000000")
