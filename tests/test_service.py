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

from vectree.agent.toolspec import TOOLS, openai_tools
from vectree.demo import DEMO_QUESTIONS, expected_pages
from vectree.service.http import PUBLIC_PATHS, PUBLIC_PREFIXES, create_app
from vectree.service.mcp_server import tool_listing


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
    plain = client.get(f"/papers/{doc}/search", params={"q": q["question"], "passages_only": "true"}).json()
    assert plain["method"] == "passages" and plain["results"]
    assert client.get(f"/papers/{doc}/search", params={"q": q["question"], "passages_only": "maybe"}).status_code == 422
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


def _shared_prefix(ids: list[str]) -> tuple[str, list[str]]:
    """The shortest prefix that several of ``ids`` start with, and those ids."""
    for n in range(1, 20):
        groups: dict[str, list[str]] = {}
        for d in ids:
            groups.setdefault(d[:n], []).append(d)
        shared = [(p, g) for p, g in sorted(groups.items()) if len(g) > 1]
        if shared:
            return shared[0]
    raise AssertionError("no two ids share a prefix")


def test_a_unique_doc_id_prefix_works_on_every_route(client, paper):
    q, doc, page = paper
    ids = [p["doc_id"] for p in client.get("/papers").json()["papers"]]
    prefix = next(doc[:n] for n in range(1, len(doc)) if sum(d.startswith(doc[:n]) for d in ids) == 1)
    assert prefix != doc
    tree = client.get(f"/papers/{prefix}/tree")
    assert tree.status_code == 200 and tree.json()["doc_id"] == doc
    node = tree.json()["sections"][0]["node_id"]
    assert client.get(f"/papers/{prefix}/sections/{node}").json()["node_id"] == node
    assert client.get(f"/papers/{prefix}/search", params={"q": q["question"]}).json()["doc_id"] == doc
    assert client.get(f"/papers/{prefix}/pages/{page}").json()["doc_id"] == doc
    image = client.get(f"/papers/{prefix}/pages/{page}/image.png", params={"dpi": 30})
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
    assert client.get(f"/papers/{prefix}/sections").json()["doc_id"] == doc  # the web app's routes
    entries = client.get("/search/entries", params={"q": q["question"], "paper": prefix}).json()["results"]
    assert [e["doc_id"] for e in entries] == [doc]
    answer = client.post("/ask", json={"question": q["question"], "paper": prefix, "agent": "offline"})
    assert answer.status_code == 200 and answer.json()["trace"]["steps"][0]["tool"] == "get_document_tree"


def test_an_ambiguous_doc_id_prefix_gets_409_with_the_candidates(client):
    papers = {p["doc_id"]: p["title"] for p in client.get("/papers").json()["papers"]}
    prefix, ids = _shared_prefix(sorted(papers))
    for response in (client.get(f"/papers/{prefix}/tree"), client.get(f"/papers/{prefix}/pages/1"),
                     client.post("/ask", json={"question": "what is measured?", "paper": prefix})):
        assert response.status_code == 409, response.text
        body = response.json()
        assert body["error"] == "ambiguous_doc_id" and "ambiguous" in body["detail"]
        assert {c["doc_id"]: c["title"] for c in body["candidates"]} == {d: papers[d] for d in ids}
    spec = client.get("/openapi.json").json()
    assert "409" in spec["paths"]["/papers/{doc_id}/tree"]["get"]["responses"]
    assert "409" not in spec["paths"]["/search"]["get"]["responses"]


def test_an_unknown_doc_id_gets_404_with_close_suggestions(client, paper):
    _, doc, _ = paper
    typo = doc[:-3] + ("000" if not doc.endswith("000") else "111")  # the slug right, the hash wrong
    response = client.get(f"/papers/{typo}/tree")
    assert response.status_code == 404, response.text
    body = response.json()
    assert body["error"] == "not_found" and "did you mean" in body["detail"]
    assert body["suggestions"][0]["doc_id"] == doc and body["suggestions"][0]["title"]
    assert client.post("/ask", json={"question": "x", "paper": typo}).json()["suggestions"][0]["doc_id"] == doc


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
    # the listing is the declaration: the same argument schemas the LLM agent is given
    assert {t.name: t.input_schema for t in tools.tools} == {
        t["function"]["name"]: t["function"]["parameters"] for t in openai_tools()}
    assert sorted(t.name for t in tools.tools) == sorted([
        "search_papers", "get_document_tree", "get_section", "search_within_paper", "get_page_content",
        "get_page_image", "submit_answer"])
    assert json.loads(tree.content[0].text)["doc_id"] == doc
    assert json.loads(search.content[0].text)["results"][0]["doc_id"] == doc
    # every result (errors too) names the store snapshot it read
    live = store_copy.current_snapshot_id()
    assert live and all(r.meta["vectree/snapshot"] == live for r in (tree, search, image, bad))
    assert image.content[0].type == "image" and image.content[0].mime_type == "image/png"
    assert bad.is_error and "out of range" in bad.content[0].text


def test_an_mcp_call_that_spans_a_refresh_reads_one_snapshot(store_copy, paper, monkeypatch):
    """A refresh that removes the paper publishes while a get_page_content call runs (between its
    catalog lookup and its page read): the call still reads the snapshot it started on, whole."""
    from mcp import Client

    from vectree.agent.toolimpl import Toolbox
    from vectree.service.mcp_server import build_server

    _, doc, page = paper
    before = store_copy.current_snapshot_id()
    view = store_copy.view()
    rows, index, model = view.read_catalog(), view.index_snapshot_id, view.sprout_model_id
    expected = view.read_page_texts(doc)[page - 1]
    published: list[str] = []
    lookup = Toolbox.paper

    def lookup_then_refresh(self, doc_id):
        row = lookup(self, doc_id)
        if not published:
            published.append(store_copy.publish_snapshot([r for r in rows if r["doc_id"] != doc],
                                                         index_snapshot=index, sprout_model=model))
        return row

    async def calls():
        async with Client(build_server(store_copy.root)) as client:
            spanning = await client.call_tool("get_page_content", {"doc_id": doc, "pages": [page]})
            later = await client.call_tool("get_page_content", {"doc_id": doc, "pages": [page]})
            return spanning, later

    monkeypatch.setattr(Toolbox, "paper", lookup_then_refresh)
    try:
        spanning, later = asyncio.run(asyncio.wait_for(calls(), timeout=120))
    finally:
        store_copy.publish_snapshot(rows, index_snapshot=index, sprout_model=model)  # the paper back
    assert published and published[0] != before
    assert not spanning.is_error, spanning.content[0].text
    assert spanning.meta["vectree/snapshot"] == before
    assert json.loads(spanning.content[0].text)["pages"][0]["text"] == expected
    # the next call reads the new snapshot, where the paper is gone
    assert later.is_error and later.meta["vectree/snapshot"] == published[0]


# ---- one declaration ------------------------------------------------------------------------------
def test_openai_schema_mcp_listing_and_openapi_name_the_same_tools_and_arguments(store_copy):
    openai = {t["function"]["name"]: t["function"]["parameters"] for t in openai_tools()}
    mcp = {t.name: t.input_schema for t in tool_listing()}
    assert list(openai) == list(mcp) == list(TOOLS) and len(openai) == 7
    assert openai == mcp
    spec = create_app(store_copy.root, token="").openapi()
    ops = {op["operationId"]: (method, path, op) for path, item in spec["paths"].items()
           for method, op in item.items() if "x-tool" in op}
    assert set(ops) == set(openai)
    # today's URLs, kept
    assert {name: (m, p) for name, (m, p, _) in ops.items()} == {
        "search_papers": ("get", "/search"), "get_document_tree": ("get", "/papers/{doc_id}/tree"),
        "get_section": ("get", "/papers/{doc_id}/sections/{node_id}"),
        "search_within_paper": ("get", "/papers/{doc_id}/search"),
        "get_page_content": ("get", "/papers/{doc_id}/pages/{page}"),
        "get_page_image": ("get", "/papers/{doc_id}/pages/{page}/image.png"),
        "submit_answer": ("post", "/answers/check")}
    for name, (_, _, op) in ops.items():
        mapping = op["x-tool"]["arguments"]  # URL or body name -> tool argument
        schemas = {p["name"]: p["schema"] for p in op.get("parameters", [])}
        if "requestBody" in op:
            ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
            schemas.update(spec["components"]["schemas"][ref]["properties"])
        assert set(schemas) == set(mapping), name
        assert set(mapping.values()) == set(openai[name]["properties"]), name
        for url_name, arg in mapping.items():
            declared = openai[name]["properties"][arg]
            if declared.get("type") == "array" and schemas[url_name].get("type") != "array":
                declared = declared["items"]  # /pages/{page} fills pages=[page]
            for key in ("type", "minimum", "maximum", "pattern", "minLength", "maxLength", "default"):
                assert schemas[url_name].get(key) == declared.get(key), (name, url_name, key)
        assert {"404", "422"} <= set(op["responses"]), name


# ---- hardening ------------------------------------------------------------------------------------
def _raw(port: int, head: bytes, parts=(), timeout: float = 15) -> bytes:
    """Send a request by hand (headers, then body parts) and return the status line: a test of
    what the server answers before the body is complete."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        for part in parts:
            try:
                sock.sendall(part)
            except OSError:  # the server answered and closed: it did not want the rest
                break
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        return data.split(b"\r\n", 1)[0]


@pytest.fixture(scope="module")
def guarded(store_copy):
    served = Served(create_app(store_copy.root, token="s3cret", max_body_bytes=100_000))
    client = served.__enter__()
    yield served, client
    served.__exit__()


AUTH = {"Authorization": "Bearer s3cret"}


def test_every_protected_route_answers_401_without_the_token(guarded, paper):
    served, c = guarded
    _, doc, page = paper
    spec = c.get("/openapi.json").json()  # the API description is public, like /health
    values = {"doc_id": doc, "node_id": "n1", "page": page}
    protected = 0
    for path, item in spec["paths"].items():
        for method in item:
            url = path.format(**values)
            bodies = {"/ask": {"question": "x"}, "/answers/check": {"answer": "x", "citations": []}}
            kw = {"params": {"q": "capacity", "quote": "capacity"}} if method == "get" else {"json": bodies[path]}
            r = c.request(method.upper(), url, **kw)
            if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
                assert r.status_code == 200, path
                continue
            protected += 1
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", (method, path, r.text)
            assert c.request(method.upper(), url, headers={"Authorization": "Bearer wrong"}, **kw).status_code == 401
            assert c.request(method.upper(), url, headers=AUTH, **kw).status_code == 200, (method, path)
    assert protected == 14  # /papers, /papers/{doc_id}, /ask, the seven tools and the web app's four JSON endpoints
    # malformed bodies are not parsed for a caller without the token: 401, not 422
    for path in ("/ask", "/answers/check"):
        broken = {"content": b'{"question": ', "headers": {"content-type": "application/json"}}
        assert c.post(path, **broken).status_code == 401
        assert c.post(path, content=broken["content"], headers={**broken["headers"], **AUTH}).status_code == 422


def test_an_unauthenticated_body_is_never_read(guarded):
    """A 200 MB body announced without a token is refused from the headers, before it is sent."""
    served, _ = guarded
    head = (b"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 200000000\r\n\r\n")
    assert _raw(served.port, head, [b'{"question": "' + b"x" * 4096]).startswith(b"HTTP/1.1 401")


def test_request_bodies_are_limited_while_streaming(guarded, monkeypatch, store_copy):
    served, c = guarded
    auth = b"Authorization: Bearer s3cret\r\n"
    # announced larger than the limit: 413 at once, before the body arrives
    head = (b"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + auth +
            b"Content-Length: 5000000\r\n\r\n")
    assert _raw(served.port, head, [b"{"]).startswith(b"HTTP/1.1 413")
    # streamed without a length: 413 as soon as it passes the limit, though the stream never ends
    head = (b"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + auth +
            b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"x" * 65536
    parts = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * 3  # 196 KB, and no closing chunk
    assert _raw(served.port, head, parts).startswith(b"HTTP/1.1 413")
    # within the limit a body is read as usual
    assert c.post("/answers/check", json={"answer": "x" * 1000, "citations": []}, headers=AUTH).status_code == 200
    # the default limit is 1 MB, and VECTREE_MAX_BODY_BYTES sets it
    from vectree.retrieval.config import load_settings

    assert load_settings().max_body_bytes == 1_000_000
    monkeypatch.setenv("VECTREE_MAX_BODY_BYTES", "2048")
    from starlette.testclient import TestClient

    small = TestClient(create_app(store_copy.root, token=""))
    assert small.post("/answers/check", json={"answer": "x" * 4000, "citations": []}).status_code == 413
    assert small.post("/answers/check", json={"answer": "x" * 1000, "citations": []}).status_code == 200


def test_validation_errors_echo_only_an_excerpt(client):
    r = client.post("/ask", json={"question": "why " * 200_000})  # 800 KB: under the body limit
    assert r.status_code == 422 and len(r.content) < 400 and "why why" not in r.text
    r = client.get("/search", params={"q": "q" * 5000})
    assert r.status_code == 422 and len(r.content) < 400
    r = client.post("/answers/check", json={"answer": "x", "citations": [], "extra": "e" * 50_000})
    assert r.status_code == 422 and len(r.content) < 400


def test_health_and_errors_reveal_no_paths(demo_store, tmp_path):
    from starlette.testclient import TestClient

    from vectree.retrieval.store import Store

    root = tmp_path / "store"
    shutil.copytree(demo_store.root, root)
    store = Store(root)
    rows = store.read_catalog()
    bad = rows[0]["doc_id"]
    rows[0].update(status="failed", error=f"cannot open {root}/pdfs/{bad}.pdf: damaged")
    store.write_catalog(rows)
    shutil.rmtree(store.index_dir)  # no search index: the index error names where it looked
    from vectree.retrieval.snapshot import publish

    publish(store, force=True)  # the service reads published snapshots only
    c = TestClient(create_app(root, token=""))
    responses = {
        "health": c.get("/health"), "papers": c.get("/papers"), "page": c.get(f"/papers/{bad}/pages/1"),
        "search": c.get("/search", params={"q": "capacity"}), "tree": c.get(f"/papers/{bad}/tree"),
        "ask": c.post("/ask", json={"question": "How much capacity was retained?"}),
    }
    assert {k: r.status_code for k, r in responses.items()} == {
        "health": 200, "papers": 200, "page": 404, "search": 503, "tree": 200, "ask": 200}
    for name, r in responses.items():
        assert str(tmp_path) not in r.text and "/store/" not in r.text, (name, r.text[:300])
    health = responses["health"].json()
    assert set(health) == {"status", "snapshot", "papers", "papers_total"}
    failed = next(p for p in responses["papers"].json()["papers"] if p["doc_id"] == bad)
    assert failed["error"].startswith("cannot open …/") and f"{bad}.pdf" in failed["error"]
    assert responses["search"].json()["error"] == "unavailable"


@pytest.fixture()
def served_elsewhere(store_copy):
    """The service in its own process on 127.0.0.1 (hypothesis walks ``sys.modules`` while it
    describes strategies, which must not race with a server thread importing lazily)."""
    import os
    import subprocess

    port = _free_port()
    code = ("import sys, uvicorn; from vectree.service.http import create_app; "
            "uvicorn.run(create_app(sys.argv[1], token=''), host='127.0.0.1', port=int(sys.argv[2]), "
            "log_level='warning')")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-c", code, str(store_copy.root), str(port)], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError("the service did not start")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_schemathesis_finds_no_server_error_and_no_undocumented_status(served_elsewhere, paper):
    """A bounded property-based run over the OpenAPI description, on loopback: valid and invalid
    inputs for every operation; no 5xx, every status and body as documented."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                                   status_code_conformance)

    _, doc, _ = paper
    base = served_elsewhere
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    httpx.post(f"{base}/ask", json={"question": "warm up the encoder"}, timeout=120)  # load the model once
    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    calls = []
    for result in schema.get_all_operations():
        operation = result.ok()
        fixed = {"doc_id": doc} if "{doc_id}" in operation.path else None
        raw = operation.definition.raw
        modes = [(GenerationMode.POSITIVE, None), (GenerationMode.POSITIVE, fixed)]
        if raw.get("parameters") or raw.get("requestBody"):  # nothing to make invalid otherwise
            modes.append((GenerationMode.NEGATIVE, None))
        for mode, path_parameters in modes:
            @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path_parameters))
            @settings(max_examples=6, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck))
            def run(case):
                response = case.call_and_validate(base_url=base, checks=checks, timeout=120)
                calls.append((operation.label, response.status_code))

            run()
    statuses = {code for _, code in calls}
    print(f"schemathesis: {len(calls)} calls, statuses {sorted(statuses)}")
    assert len(calls) >= 100 and max(statuses) < 500
    assert {200, 404, 422} <= statuses
