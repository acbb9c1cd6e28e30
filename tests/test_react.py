"""The ReAct loop through the real openai client against a scripted server on 127.0.0.1."""

from __future__ import annotations

import pytest

from vectree.retrieval.llm import LLMClient
from vectree.agent.react import FORCE_ANSWER, SYSTEM_PROMPT, ReactAgent
from vectree.agent.tools import Toolbox
from vectree.demo import DEMO_QUESTIONS, expected_pages
from tests.fake_openai import Reply, fake_openai  # noqa: F401  (the fixture)


@pytest.fixture(scope="module")
def toolbox(demo_store):
    return Toolbox(demo_store)


@pytest.fixture(scope="module")
def question(demo_store):
    q = DEMO_QUESTIONS[0]
    doc = next(r["doc_id"] for r in demo_store.read_catalog() if r["slug"] == q["slug"])
    return q, doc, expected_pages(q)[0]


def agent_for(server, toolbox, **kw) -> ReactAgent:
    client = LLMClient(base_url=server.base_url, api_key="test-key", model="fake-model", timeout=5, max_retries=0)
    return ReactAgent(toolbox, client, **kw)


def quote_from(toolbox, doc, page) -> str:
    text = toolbox.get_page_content(doc, [page]).data["pages"][0]["text"]
    return " ".join(text.split()[10:22])


def test_locate_then_read_episode(fake_openai, toolbox, question):
    q, doc, page = question
    quote = quote_from(toolbox, doc, page)
    fake_openai.script(
        Reply.tools([("search_papers", {"query": q["question"], "k": 3})]),
        Reply.tools([("get_document_tree", {"doc_id": doc})]),
        Reply.tools([("search_within_paper", {"doc_id": doc, "query": q["question"]})]),
        Reply.tools([("get_page_content", {"doc_id": doc, "pages": [page]})]),
        Reply.tools([("submit_answer", {"answer": q["answer"], "citations": [{"doc_id": doc, "page": page, "quote": quote}]})]),
    )
    answer = agent_for(fake_openai, toolbox).answer(q["question"])
    assert answer.answer == q["answer"] and answer.agent == "llm"
    assert [c["valid"] for c in answer.citations] == [True]
    assert [s["tool"] for s in answer.trace["steps"]] == [
        "search_papers", "get_document_tree", "search_within_paper", "get_page_content", "submit_answer"]
    tokens = answer.trace["tokens"]
    assert tokens["layer0"] > 0 and tokens["layer1"] > 0 and tokens["layer2"] > tokens["layer1"] / 4
    requests = fake_openai.chat_requests
    assert len(requests) == 5
    first = requests[0].body
    assert {t["function"]["name"] for t in first["tools"]} >= {"search_papers", "submit_answer"}
    assert first["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    # page text travels only in tool messages, never in the system prompt
    last = requests[-1].messages
    assert all(m["content"] == SYSTEM_PROMPT for m in last if m["role"] == "system")
    assert any(m["role"] == "tool" and quote.split()[0] in m["content"] for m in last)
    assert all(m.get("tool_call_id") for m in last if m["role"] == "tool")


def test_unknown_tool_bad_arguments_and_tool_errors_go_back_to_the_model(fake_openai, toolbox, question):
    q, doc, page = question
    fake_openai.script(
        Reply.tools([("delete_corpus", {})]),
        Reply.tools([("get_page_content", "{not json")]),
        Reply.tools([("get_page_content", {"doc_id": doc, "pages": ["three"]})]),
        Reply.tools([("get_page_content", {"doc_id": doc, "pages": [999]})]),
        Reply.text("I think the answer is 78.4%."),  # plain text is not an answer: the agent nudges
        Reply.tools([("submit_answer", {"answer": "unknown", "citations": []})]),
    )
    answer = agent_for(fake_openai, toolbox).answer(q["question"], paper=doc)
    errors = [s["error"] for s in answer.trace["steps"] if s["error"]]
    assert len(errors) == 4
    assert "unknown tool" in errors[0] and "not valid JSON" in errors[1]
    assert "must be of type integer" in errors[2] and "out of range" in errors[3]
    tool_msgs = [m for m in fake_openai.chat_requests[-1].messages if m["role"] == "tool"]
    assert [m["content"].startswith("ERROR:") for m in tool_msgs[:4]] == [True] * 4
    assert "submit_answer" in fake_openai.chat_requests[5].text  # the nudge
    assert answer.answer == "unknown"


def test_budget_exhaustion_forces_an_answer(fake_openai, toolbox, question):
    q, doc, page = question
    quote = quote_from(toolbox, doc, page)
    fake_openai.script(
        Reply.tools([("get_document_tree", {"doc_id": doc})]),
        Reply.tools([("get_page_content", {"doc_id": doc, "pages": [page]})]),
        Reply.tools([("submit_answer", {"answer": "forced", "citations": [{"doc_id": doc, "page": page, "quote": quote}]})]),
    )
    answer = agent_for(fake_openai, toolbox, max_iterations=2).answer(q["question"], paper=doc)
    assert answer.trace["forced_answer"] and answer.trace["iterations"] == 2
    last = fake_openai.chat_requests[-1].body
    assert last["tool_choice"] == {"type": "function", "function": {"name": "submit_answer"}}
    assert last["messages"][-1]["content"] == FORCE_ANSWER
    assert answer.answer == "forced" and answer.citations[0]["valid"]


def test_invalid_citation_is_marked(fake_openai, toolbox, question):
    q, doc, page = question
    fake_openai.script(Reply.tools([("submit_answer", {"answer": "made up", "citations": [
        {"doc_id": doc, "page": page, "quote": "this sentence is not in the paper at all"}]})]))
    answer = agent_for(fake_openai, toolbox).answer(q["question"], paper=doc)
    assert answer.citations[0]["valid"] is False and "not found" in answer.citations[0]["reason"]
    assert answer.evidence == []


def test_page_image_is_sent_as_an_image_part(fake_openai, toolbox, question):
    q, doc, page = question
    fake_openai.script(
        Reply.tools([("get_page_image", {"doc_id": doc, "page": page, "dpi": 40})]),
        Reply.tools([("submit_answer", {"answer": "seen", "citations": []})]),
    )
    agent_for(fake_openai, toolbox).answer(q["question"], paper=doc)
    parts = fake_openai.chat_requests[1].messages[-1]["content"]
    assert isinstance(parts, list)
    assert any(p.get("type") == "image_url" and p["image_url"]["url"].startswith("data:image/png;base64,")
               for p in parts)


def test_refused_key_is_a_clear_error(fake_openai, toolbox, question):
    from vectree.retrieval.llm import LLMAuthError

    q, doc, _ = question
    fake_openai.script(Reply.error(401, "invalid api key"))
    with pytest.raises(LLMAuthError, match="refused the API key"):
        agent_for(fake_openai, toolbox).answer(q["question"], paper=doc)
