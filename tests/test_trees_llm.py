"""The LLM path of the section trees, through the real ``openai`` client over loopback HTTP.

A small real PDF (headings on known pages) is ingested into a store; the fake server
(:mod:`tests.fake_openai`) plays the model.  Every tree the LLM proposes is checked by the
verifier against the ingested page text, so the assertions follow from the PDF, not from the
scripted replies.
"""

from __future__ import annotations

import json
import re
import socket

import pymupdf
import pytest

from vectree.retrieval.llm import LLMAuthError, LLMClient, LLMResponseError, LLMUnavailable
from vectree.retrieval.corpus import scan
from vectree.retrieval.ingest import ingest_paper
from vectree.retrieval.store import Store
from vectree.retrieval.trees.build import build_tree
from vectree.retrieval.trees.llm_extract import CHARS_PER_TOKEN, PROMPT_RESERVE_TOKENS, ExtractConfig, extract_sections, page_windows, parse_json_reply
from vectree.retrieval.trees.schema import check_invariants, indexable_nodes, read_tree
from tests.fake_openai import Reply, fake_openai  # noqa: F401  (the fixture)

TITLE = "Sodium Widget Dynamics in Practice"
# (page, level, heading, a sentence only that page holds)
LAYOUT = [
    (1, 1, "Abstract", "We measure how sodium widgets age under cycling."),
    (1, 1, "1 Introduction", "Widgets are everywhere in modern laboratories."),
    (2, 1, "2 Methods", "Our calorimeter recorded heat flow every second."),
    (3, 1, "3 Results", "The widget efficiency reached 93.7 percent at room temperature."),
    (4, 2, "3.1 Ablations", "Removing the separator halved the lifetime of every cell."),
    (5, 1, "4 Conclusion", "Sodium widgets are ready for pilot production lines."),
]
FILLER = ("This paragraph adds ordinary running text so that the page looks like a paper page. " * 3).strip()


def write_pdf(path):
    doc = pymupdf.open()
    for page_no in range(1, 6):
        page = doc.new_page()
        y = 72
        if page_no == 1:
            page.insert_text((72, y), TITLE, fontsize=18, fontname="hebo")
            y += 40
        for p, _, heading, sentence in LAYOUT:
            if p != page_no:
                continue
            page.insert_text((72, y), heading, fontsize=12, fontname="hebo")
            y += 18
            page.insert_textbox(pymupdf.Rect(72, y, 540, y + 110), f"{sentence} {FILLER}", fontsize=10)
            y += 130
    doc.set_metadata({"title": TITLE})
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llm-corpus")
    write_pdf(folder / "widgets.pdf")
    store = Store(tmp_path_factory.mktemp("llm-store"))
    files = scan([folder])
    record = ingest_paper(store, files)
    assert record["status"] == "ok"
    return store, record["doc_id"]


def good_sections():
    return [
        {"title": h, "level": lv, "page_start": p, "page_end": (4 if h == "3 Results" else p),
         "summary": f"Section {h} says: {s}"}
        for p, lv, h, s in LAYOUT
    ]


def client(server, **kw):
    opts = {"timeout": 1.0, "max_retries": 2}
    opts.update(kw)
    return LLMClient(base_url=server.base_url, api_key="test-key", model="fake-model", **opts)


def titles(nodes):
    return [n["title"] for n in nodes[1:]]


def test_good_tree(paper, fake_openai):
    store, doc_id = paper
    fake_openai.script(Reply.json({"sections": good_sections()}))
    result = build_tree(store, doc_id, llm=client(fake_openai))
    assert result.source == "llm" and result.repair_rounds == 0 and result.problems == []
    nodes = read_tree(store, doc_id)
    assert titles(nodes) == [h for _, _, h, _ in LAYOUT]
    assert all(n["verified"] and n["source"] == "llm" for n in nodes)
    by_title = {n["title"]: n for n in nodes}
    assert by_title["3.1 Ablations"]["parent_id"] == by_title["3 Results"]["node_id"]
    assert by_title["2 Methods"]["summary"].startswith("Section 2 Methods says")
    assert nodes[0]["title"] == TITLE and (nodes[0]["page_start"], nodes[0]["page_end"]) == (1, 5)
    assert len(indexable_nodes(nodes)) == len(LAYOUT)
    (req,) = fake_openai.chat_requests
    assert req.headers["authorization"] == "Bearer test-key"
    assert req.body["model"] == "fake-model"
    assert req.body["response_format"]["type"] == "json_schema"
    assert req.body["response_format"]["json_schema"]["schema"]["required"] == ["sections"]
    for p, _, _, sentence in LAYOUT:
        assert f"[page {p}]" in req.text and sentence in req.text


def test_repair_round_fixes_an_off_by_two_page_and_keeps_a_hallucination_unverified(paper, fake_openai):
    store, doc_id = paper
    claimed = good_sections()
    results = next(s for s in claimed if s["title"] == "3 Results")
    results["page_start"] = results["page_end"] = 5  # printed on page 3: two pages off
    claimed.insert(5, {"title": "5 Quantum Entanglement of Widgets", "level": 1, "page_start": 4, "page_end": 4,
                       "summary": "made up"})
    seen_repairs = []

    def repair(request):
        text = request["messages"][-1]["content"]
        seen_repairs.append(text)
        ids = {m.group(2): int(m.group(1)) for m in re.finditer(r'- id (\d+): \{"title": "([^"]+)"', text)}
        fixes = []
        if "3 Results" in ids:
            fixes.append({"id": ids["3 Results"], "title": "3 Results", "level": 1, "page_start": 3, "page_end": 4,
                          "summary": "Results, repaired."})
        return Reply.json({"sections": fixes})

    fake_openai.script(Reply.json({"sections": claimed}), Reply.dynamic(repair), Reply.dynamic(repair))
    result = build_tree(store, doc_id, llm=client(fake_openai), repair_rounds=2)
    assert result.problems == [] and not fake_openai.exhausted
    nodes = read_tree(store, doc_id)
    by_title = {n["title"]: n for n in nodes}
    fixed = by_title["3 Results"]
    assert fixed["verified"] and fixed["page_start"] == 3 and fixed["repair_rounds"] == 1
    assert by_title["3.1 Ablations"]["verified"]  # back inside its parent once the parent moved
    fake = by_title["5 Quantum Entanglement of Widgets"]
    assert not fake["verified"] and fake["repair_rounds"] == 2
    assert "not found" in fake["verify_note"] and "after 2 repair round" in fake["verify_note"]
    assert result.repair_rounds == 2 and result.n_verified == len(LAYOUT)
    assert fake["node_id"] not in {n["node_id"] for n in indexable_nodes(nodes)}
    # the repair request carried the failure reasons and the text of the candidate pages
    first = seen_repairs[0]
    assert "title not found on pages 4-5 (claimed page 5); it appears on page(s) 3" in first
    assert "title not found on pages 3-5 (claimed page 4)" in first  # the hallucination
    assert "[page 3]" in first and "93.7 percent" in first
    assert "[page 5]" in first and "pilot production" in first
    assert '"title": "3 Results"' not in seen_repairs[1]  # fixed in round 1, not sent again
    assert '"title": "5 Quantum Entanglement of Widgets"' in seen_repairs[1]
    assert len(fake_openai.chat_requests) == 3


def test_no_repair_rounds_leaves_failures_marked(paper, fake_openai):
    store, doc_id = paper
    claimed = good_sections()
    claimed[2]["page_start"] = claimed[2]["page_end"] = 4  # "2 Methods" is on page 2
    fake_openai.script(Reply.json({"sections": claimed}))
    result = build_tree(store, doc_id, llm=client(fake_openai), repair_rounds=0)
    assert len(fake_openai.chat_requests) == 1
    bad = result.unverified
    assert [n["title"] for n in bad] == ["2 Methods"] and bad[0]["repair_rounds"] == 0
    assert result.verified_fraction == pytest.approx((len(LAYOUT) - 1) / len(LAYOUT))


def test_malformed_json_is_asked_again_then_parsed(paper, fake_openai):
    store, doc_id = paper
    fenced = "Here you go:\n```json\n" + json.dumps({"sections": good_sections()}) + "\n```\nAnything else?"
    fake_openai.script(Reply.text('Sure! {"sections": [{"title": "1 Intro'), Reply.text(fenced))
    result = build_tree(store, doc_id, llm=client(fake_openai))
    assert result.source == "llm" and result.n_verified == len(LAYOUT)
    first, second = fake_openai.chat_requests
    assert "not valid JSON" in second.messages[-1]["content"]
    assert second.messages[-2] == {"role": "assistant", "content": 'Sure! {"sections": [{"title": "1 Intro'}


def test_malformed_twice_falls_back_to_the_offline_extractor(paper, fake_openai):
    store, doc_id = paper
    fake_openai.script(Reply.text("no json here"), Reply.text("still {not json"))
    result = build_tree(store, doc_id, llm=client(fake_openai))
    assert result.source in ("layout", "outline")
    assert any("unusable" in n for n in result.notes)
    assert check_invariants(result.nodes, 5) == []
    assert {"2 Methods", "3 Results"} <= set(titles(result.nodes))


def test_timeout_then_success(paper, fake_openai):
    store, doc_id = paper
    body = {"sections": good_sections()}
    fake_openai.script(Reply.json(body, delay=2.0), Reply.json(body))
    result = build_tree(store, doc_id, llm=client(fake_openai, timeout=0.5))
    assert result.source == "llm" and result.n_verified == len(LAYOUT)
    assert len(fake_openai.chat_requests) == 2  # the first attempt timed out and was retried


def test_refused_key_is_a_clear_error(paper, fake_openai):
    store, doc_id = paper
    fake_openai.script(Reply.error(401, "Incorrect API key provided", code="invalid_api_key"))
    with pytest.raises(LLMAuthError, match=r"refused the API key \(HTTP 401\).*Incorrect API key.*OPENAI_API_KEY"):
        build_tree(store, doc_id, llm=client(fake_openai))
    assert len(fake_openai.chat_requests) == 1  # a refused key is not retried


def test_rate_limit_and_server_errors_are_retried(fake_openai):
    llm = client(fake_openai, max_retries=2)
    fake_openai.script(Reply.error(429, "slow down", headers={"Retry-After": "0"}), Reply.error(503, "busy"), Reply.text("ok"))
    reply = llm.chat([{"role": "user", "content": "hi"}])
    assert reply.content == "ok" and reply.attempts == 3
    fake_openai.script(*[Reply.error(500, "boom")] * 3)
    with pytest.raises(LLMUnavailable, match=r"HTTP 500 \(3 attempts\): boom"):
        llm.chat([{"role": "user", "content": "hi"}])


def test_unreachable_endpoint_is_a_clear_error():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = LLMClient(base_url=f"http://127.0.0.1:{port}/v1", timeout=0.5, max_retries=1)
    with pytest.raises(LLMUnavailable, match=r"cannot reach the LLM endpoint .*OPENAI_BASE_URL"):
        llm.chat([{"role": "user", "content": "hi"}])


def test_refused_json_schema_steps_down_to_json_object(paper, fake_openai):
    store, doc_id = paper
    fake_openai.script(Reply.error(400, "response_format json_schema is not supported"), Reply.json({"sections": good_sections()}))
    result = build_tree(store, doc_id, llm=client(fake_openai))
    assert result.source == "llm" and result.n_verified == len(LAYOUT)
    first, second = fake_openai.chat_requests
    assert first.body["response_format"]["type"] == "json_schema"
    assert second.body["response_format"] == {"type": "json_object"}
    assert any("json_schema" in n for n in result.notes)


def test_page_windows_fit_the_context_and_carry_the_sections_found(paper, fake_openai):
    store, doc_id = paper
    page_texts = store.read_page_texts(doc_id)

    def read_like_a_model(request):
        text = request["messages"][-1]["content"]
        pages = {int(p) for p in re.findall(r"\[page (\d+)\]", text)}
        return Reply.json({"sections": [s for s in good_sections() if s["page_start"] in pages]})

    # a context that holds little more than one page
    longest = max(len(t) for t in page_texts)
    config = ExtractConfig(context_tokens=int(1.3 * longest / CHARS_PER_TOKEN) + 500 + PROMPT_RESERVE_TOKENS, output_tokens=500)
    windows = page_windows(page_texts, budget_chars=config.budget_chars)
    assert len(windows) >= 3 and all(sum(len(t) + 12 for _, t in w) <= config.budget_chars for w in windows)
    fake_openai.script(*[Reply.dynamic(read_like_a_model)] * len(windows))
    sections = extract_sections(client(fake_openai), page_texts, title=TITLE, config=config)
    assert [s["title"] for s in sections] == [h for _, _, h, _ in LAYOUT]
    requests = fake_openai.chat_requests
    assert len(requests) == len(windows)
    assert "Sections found on earlier pages" not in requests[0].text
    assert "Sections found on earlier pages" in requests[-1].text and "- 2 Methods (level 1, page 2)" in requests[-1].text
    # "3 Results" runs on past its window: its end reaches the next top-level section's page
    results = next(s for s in sections if s["title"] == "3 Results")
    assert results["page_end"] >= 4


def test_tool_calls_for_the_agent(fake_openai):
    llm = client(fake_openai)
    tools = [{"type": "function", "function": {"name": "search", "description": "search the corpus",
                                               "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]
    fake_openai.script(Reply.tools([("search", {"q": "widgets"}), ("search", "{broken")]))
    reply = llm.chat([{"role": "user", "content": "find widgets"}], tools=tools, tool_choice="auto")
    assert reply.finish_reason == "tool_calls" and [t.name for t in reply.tool_calls] == ["search", "search"]
    assert reply.tool_calls[0].parsed_arguments() == {"q": "widgets"}
    with pytest.raises(LLMResponseError, match="malformed JSON arguments"):
        reply.tool_calls[1].parsed_arguments()
    msg = reply.assistant_message()
    assert msg["role"] == "assistant" and msg["tool_calls"][0]["function"]["name"] == "search"
    (req,) = fake_openai.chat_requests
    assert req.body["tools"] == tools and req.body["tool_choice"] == "auto"


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"sections": []}', {"sections": []}),
        ('```json\n[{"title": "A"}]\n```', [{"title": "A"}]),
        ('<think>hmm {no}</think>{"a": 1}', {"a": 1}),
        ('Result: {"a": [1, 2,],} thanks', {"a": [1, 2]}),
    ],
)
def test_parse_json_reply_is_defensive(text, expected):
    assert parse_json_reply(text) == expected


def test_parse_json_reply_rejects_non_json():
    with pytest.raises(ValueError):
        parse_json_reply("no braces at all")
    with pytest.raises(ValueError):
        parse_json_reply("")
