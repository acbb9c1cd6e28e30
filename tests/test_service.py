"""The query service under real uvicorn on 127.0.0.1, called over HTTP; and the MCP server over stdio."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import sys
import threading
import time

import httpx
import pytest
import uvicorn

from vectree.demo import DEMO_QUESTIONS, expected_pages
from vectree.service.http import create_app


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    def __init__(self, app):
        self.port = _free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60)

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def store_copy(demo_store, tmp_path_factory):
    """A private copy of the demo store, so the snapshot-swap test may publish into it."""
    from vectree.retrieval.store import Store

    root = tmp_path_factory.mktemp("served") / "store"
    shutil.copytree(demo_store.root, root)
    return Store(root)


@pytest.fixture(scope="module")
def client(store_copy):
    with Served(create_app(store_copy.root, token="")) as c:
        yield c


@pytest.fixture(scope="module")
def paper(store_copy):
    q = DEMO_QUESTIONS[0]
    doc = next(r["doc_id"] for r in store_copy.read_catalog() if r["slug"] == q["slug"])
    return q, doc, expected_pages(q)[0]


def test_every_endpoint(client, paper):
    q, doc, page = paper
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["snapshot"] and health["papers"] == 8
    assert len(client.get("/papers").json()["papers"]) == 8
    hits = client.get("/search", params={"q": q["question"], "k": 3}).json()
    assert hits["results"][0]["doc_id"] == doc and hits["tokens"] > 0
    tree = client.get(f"/papers/{doc}/tree").json()
    node = tree["sections"][0]["node_id"]
    section = client.get(f"/papers/{doc}/sections/{node}").json()
    assert section["node_id"] == node and section["pages"]
    within = client.get(f"/papers/{doc}/search", params={"q": q["question"]}).json()
    assert within["results"]
    text = client.get(f"/papers/{doc}/pages/{page}").json()
    assert text["pages"][0]["page"] == page and text["pages"][0]["text"]
    image = client.get(f"/papers/{doc}/pages/{page}/image.png", params={"dpi": 40})
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert image.content.startswith(b"\x89PNG")
    answer = client.post("/ask", json={"question": q["question"], "paper": doc}).json()
    assert answer["citations"] and all(c["valid"] for c in answer["citations"])
    assert answer["trace"]["steps"][0]["tool"] == "get_document_tree"
    corpus_answer = client.post("/ask", json={"question": q["question"]}).json()
    assert corpus_answer["trace"]["steps"][0]["tool"] == "search_papers"


@pytest.mark.parametrize("method,path,kwargs,status", [
    ("get", "/papers/unknown-paper-0000000000/tree", {}, 404),
    ("get", "/papers/{doc}/sections/n9999", {}, 404),
    ("get", "/papers/{doc}/pages/999", {}, 404),
    ("get", "/papers/{doc}/pages/999/image.png", {}, 404),
    ("get", "/papers/{doc}/pages/0", {}, 422),
    ("get", "/papers/{doc}/pages/two", {}, 422),
    ("get", "/papers/{doc}/sections/..%2F..%2Fdocs", {}, 404),  # a slash never matches an id segment
    ("get", "/papers/..%2F..%2Fetc/tree", {}, 404),
    ("get", "/papers/%2E%2E/tree", {}, 422),
    ("get", "/papers/Bad_ID!/tree", {}, 422),
    ("get", "/search", {"params": {"q": ""}}, 422),
    ("get", "/search", {"params": {"q": "x", "k": 500}}, 422),
    ("post", "/ask", {"json": {"question": ""}}, 422),
    ("post", "/ask", {"json": {"question": "x", "paper": "../secrets"}}, 422),
    ("post", "/ask", {"json": {"question": "x", "paper": "unknown-paper-0000000000"}}, 404),
])
def test_bad_input(client, paper, method, path, kwargs, status):
    _, doc, _ = paper
    response = getattr(client, method)(path.format(doc=doc), **kwargs)
    assert response.status_code == status, response.text
    assert "detail" in response.json()


def test_bearer_token(store_copy, paper):
    _, doc, _ = paper
    with Served(create_app(store_copy.root, token="s3cret")) as c:
        assert c.get("/health").status_code == 200  # health stays open for probes
        assert c.get(f"/papers/{doc}/tree").status_code == 401
        assert c.get(f"/papers/{doc}/tree", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get(f"/papers/{doc}/tree", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_new_snapshot_is_served_without_a_restart(client, store_copy, paper):
    """Publishing an index snapshot while serving: the next request sees it, none fails."""
    from vectree.retrieval.search import build_index

    q, doc, _ = paper
    before = client.get("/health").json()["snapshot"]
    errors: list[str] = []
    stop = threading.Event()

    def hammer():
        while not stop.is_set():
            r = client.get("/search", params={"q": q["question"], "k": 2})
            if r.status_code != 200 or r.json()["results"][0]["doc_id"] != doc:
                errors.append(r.text)

    thread = threading.Thread(target=hammer)
    thread.start()
    try:
        build_index(store_copy)
    finally:
        stop.set()
        thread.join()
    after = client.get("/health").json()["snapshot"]
    assert after != before and not errors
    assert client.get("/search", params={"q": q["question"]}).json()["results"][0]["doc_id"] == doc


def test_mcp_server_lists_and_calls_the_tools(store_copy, paper):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    q, doc, page = paper

    async def session_calls():
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "vectree.cli", "mcp", "--store", str(store_copy.root)],
                                       env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                tree = await session.call_tool("get_document_tree", {"doc_id": doc})
                search = await session.call_tool("search_papers", {"query": q["question"], "k": 2})
                image = await session.call_tool("get_page_image", {"doc_id": doc, "page": page, "dpi": 40})
                bad = await session.call_tool("get_page_content", {"doc_id": doc, "pages": [999]})
                return tools, tree, search, image, bad

    tools, tree, search, image, bad = asyncio.run(asyncio.wait_for(session_calls(), timeout=120))
    assert sorted(t.name for t in tools.tools) == sorted([
        "search_papers", "get_document_tree", "get_section", "search_within_paper", "get_page_content",
        "get_page_image", "submit_answer"])
    assert json.loads(tree.content[0].text)["doc_id"] == doc
    assert json.loads(search.content[0].text)["results"][0]["doc_id"] == doc
    assert image.content[0].type == "image" and image.content[0].mime_type == "image/png"
    assert bad.is_error and "out of range" in bad.content[0].text
