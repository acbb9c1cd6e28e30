"""The web app's server side over real HTTP (uvicorn on 127.0.0.1): its JSON endpoints, the quote
boxes against PyMuPDF renderings, the token rules, offline /docs and /redoc, and package data.

The browser itself is driven in ``test_web_browser.py``.
"""

from __future__ import annotations

import re
import shutil
from importlib.resources import files

import pyarrow as pa
import pyarrow.parquet as pq
import pymupdf
import pytest

from tests.test_service import Served
from vectree.demo import DEMO_QUESTIONS
from vectree.retrieval.store import atomic_write_parquet
from vectree.service.http import create_app
from vectree.service.web.quotes import quote_boxes


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def mark_some_sections(store, doc_id: str) -> dict[str, str]:
    """Rewrite one paper's stored tree so one section is unverified and one repaired, as the
    verifier leaves them; returns ``{node_id: mark}`` of the changed nodes."""
    path = store.tree_path(doc_id)
    rows = pq.read_table(path).to_pylist()
    first, second = [r for r in rows if r["level"] == 1][:2]
    first.update(verified=False, verify_note="title not found on pages 2-3")
    second.update(repair_rounds=2, verify_note="page range repaired from 1-1 to 1-2")
    atomic_write_parquet(path, pa.Table.from_pylist(rows, schema=pq.read_schema(path)))
    return {first["node_id"]: "unverified", second["node_id"]: "repaired"}


def add_quarantined_row(store) -> dict:
    """A failed file in the catalog, as ``paper_catalog`` records one."""
    rows = store.read_catalog()
    bad = dict(rows[0], doc_id="broken-0123456789", slug="broken", title="broken.pdf", status="failed",
               error="not a PDF: no PDF header", n_pages=0, n_chars=0, source_path="/corpus/broken.pdf",
               source_paths=["/corpus/broken.pdf"], sha256="0123456789" + "0" * 54)
    store.write_catalog(rows + [bad])
    return bad


@pytest.fixture(scope="module")
def web_store(demo_store, tmp_path_factory):
    from vectree.retrieval.store import Store

    root = tmp_path_factory.mktemp("web") / "store"
    shutil.copytree(demo_store.root, root)
    return Store(root)


@pytest.fixture(scope="module")
def question(web_store):
    q = DEMO_QUESTIONS[0]
    doc = next(r["doc_id"] for r in web_store.read_catalog() if r["slug"] == q["slug"])
    other = next(r["doc_id"] for r in web_store.read_catalog() if r["slug"] != q["slug"])
    return q, doc, other


@pytest.fixture(scope="module")
def edited(web_store, question):
    _, _, other = question
    from vectree.retrieval.snapshot import publish

    out = {"marks": mark_some_sections(web_store, other), "bad": add_quarantined_row(web_store)}
    publish(web_store, force=True)  # the service reads published snapshots only
    return out


@pytest.fixture(scope="module")
def client(web_store, edited):
    with Served(create_app(web_store.root, token="")) as c:
        yield c


def test_corpus_summary(client, web_store, question, edited):
    _, _, other = question
    body = client.get("/corpus").json()
    ok = [r for r in web_store.read_catalog() if r["status"] == "ok"]
    assert [p["doc_id"] for p in body["papers"]] == [r["doc_id"] for r in ok]
    assert body["snapshot"]["id"] == client.get("/health").json()["snapshot"]
    assert body["snapshot"]["papers"] == len(ok)
    by_id = {p["doc_id"]: p for p in body["papers"]}
    edited_paper = by_id[other]
    assert (edited_paper["unverified"], edited_paper["repaired"]) == (1, 1)
    assert edited_paper["verified_fraction"] == pytest.approx(1 - 1 / edited_paper["sections"], abs=1e-3)
    assert all(p["verified_fraction"] == 1.0 for d, p in by_id.items() if d != other)
    assert all(p["pages"] > 0 and p["parsed_at"] and p["parse_seconds"] is not None for p in body["papers"])
    assert body["quarantined"] == [{"doc_id": edited["bad"]["doc_id"], "title": "broken.pdf",
                                    "source_path": "/corpus/broken.pdf", "status": "failed",
                                    "reason": "not a PDF: no PDF header"}]


def test_sections_carry_marks_and_reasons(client, question, edited):
    _, _, other = question
    body = client.get(f"/papers/{other}/sections").json()
    marks = {n["node_id"]: (n["mark"], n["reason"]) for n in body["nodes"]}
    for node_id, mark in edited["marks"].items():
        assert marks[node_id][0] == mark and marks[node_id][1]
    assert marks[next(iter(edited["marks"]))][1] == "title not found on pages 2-3"
    # the tool endpoint hides the unverified node; this one shows it, marked
    tool = client.get(f"/papers/{other}/tree").json()
    assert all(s["node_id"] not in marks or marks[s["node_id"]][0] != "unverified" for s in tool["sections"])
    assert sum(1 for m, _ in marks.values() if m == "verified") == len(marks) - 2  # all but the two edited


def test_search_entries_with_snippets_and_paper_filter(client, question):
    q, doc, other = question
    body = client.get("/search/entries", params={"q": q["question"], "k": 3}).json()
    assert body["results"][0]["doc_id"] == doc and len(body["results"]) <= 3
    assert body["results"][0]["snippet"] and body["results"][0]["sections"]
    filtered = client.get("/search/entries", params=[("q", q["question"]), ("paper", other)]).json()
    assert [r["doc_id"] for r in filtered["results"]] == [other]
    assert client.get("/search/entries", params={"q": "x", "paper": "../etc"}).status_code == 422


def test_quote_boxes_cover_the_cited_quote(client, web_store, question):
    q, doc, _ = question
    answer = client.post("/ask", json={"question": q["question"]}).json()
    cited = [c for c in answer["citations"] if c["valid"]]
    assert cited
    for c in cited:
        body = client.get(f"/papers/{c['doc_id']}/pages/{c['page']}/boxes", params={"quote": c["quote"]}).json()
        assert body["match"] == "exact" and body["boxes"], body
        with pymupdf.open(web_store.pdf_path(c["doc_id"])) as pdf:
            page = pdf[c["page"] - 1]
            assert (body["width"], body["height"]) == (round(page.rect.width, 2), round(page.rect.height, 2))
            inside = " ".join(page.get_textbox(pymupdf.Rect(b)) for b in body["boxes"])
        quoted = _words(c["quote"])
        found = set(_words(inside))
        assert sum(w in found for w in quoted) >= 0.9 * len(quoted), (c["quote"], inside)


def test_quote_boxes_partial_and_missing(client, question):
    q, doc, _ = question
    answer = client.post("/ask", json={"question": q["question"], "paper": doc}).json()
    c = answer["citations"][0]
    words = c["quote"].split()
    assert len(words) >= 12, c["quote"]
    garbled = " ".join(words[:5] + ["zzqx"] + words[6:])  # one word the page does not have
    part = client.get(f"/papers/{doc}/pages/{c['page']}/boxes", params={"quote": garbled}).json()
    assert part["match"] == "partial" and 0 < part["coverage"] < 1 and part["boxes"]
    none = client.get(f"/papers/{doc}/pages/{c['page']}/boxes", params={"quote": "qqq zzz www xxx yyy"}).json()
    assert none["match"] == "none" and none["boxes"] == []


@pytest.mark.parametrize("rotation", [0, 90])
def test_quote_boxes_land_on_the_rendered_text(tmp_path, rotation):
    """Boxes are in the rendered page's coordinates, rotation included: the pixels under them are ink."""
    path = tmp_path / "p.pdf"
    with pymupdf.open() as pdf:
        page = pdf.new_page(width=400, height=600)
        page.insert_text((60, 120), "The separator was 25 micrometres thick.", fontsize=12)
        page.set_rotation(rotation)
        pdf.save(path)
    body = quote_boxes(path, 1, "separator was 25 micrometres")
    assert body["match"] == "exact" and len(body["boxes"]) == 1
    assert (body["width"], body["height"]) == ((400, 600) if rotation == 0 else (600, 400))
    with pymupdf.open(path) as pdf:
        pix = pdf[0].get_pixmap(dpi=72)  # 1 px = 1 point
    assert (pix.width, pix.height) == (round(body["width"]), round(body["height"]))
    x0, y0, x1, y1 = (int(v) for v in body["boxes"][0])
    dark = sum(1 for x in range(x0, x1) for y in range(y0, y1) if sum(pix.pixel(x, y)) < 300)
    assert dark > 20, "no ink under the box"
    with pytest.raises(IndexError):
        quote_boxes(path, 2, "separator")


@pytest.mark.parametrize("path,status", [
    ("/papers/unknown-paper-0000000000/sections", 404),
    ("/papers/Bad_ID!/sections", 422),
    ("/papers/{doc}/pages/999/boxes?quote=x", 404),
    ("/papers/{doc}/pages/0/boxes?quote=x", 422),
    ("/papers/{doc}/pages/1/boxes", 422),
    ("/papers/{doc}/pages/1/boxes?quote=", 422),
    ("/search/entries?q=", 422),
])
def test_bad_input(client, question, path, status):
    _, doc, _ = question
    response = client.get(path.format(doc=doc))
    assert response.status_code == status, response.text
    assert "detail" in response.json()


def test_token_guards_the_data_but_not_the_shell(web_store, question):
    _, doc, _ = question
    with Served(create_app(web_store.root, token="s3cret")) as c:
        for public in ("/", "/web/app.js", "/web/app.css", "/web/favicon.svg", "/docs", "/redoc",
                       "/docs-assets/swagger-ui-bundle.js"):
            assert c.get(public).status_code == 200, public
        assert c.get("/web/config").json() == {"auth": True}
        for private in ("/corpus", f"/papers/{doc}/sections", f"/papers/{doc}/pages/1/boxes?quote=cells",
                        "/search/entries?q=cells"):
            assert c.get(private).status_code == 401, private
            assert c.get(private, headers={"Authorization": "Bearer s3cret"}).status_code == 200, private
        # no token: 401 before any parameter is looked at
        for malformed in ("/search/entries?q=", "/papers/Bad_ID!/sections", f"/papers/{doc}/pages/0/boxes"):
            assert c.get(malformed).status_code == 401, malformed
    with Served(create_app(web_store.root, token="")) as c:
        assert c.get("/web/config").json() == {"auth": False}


def test_docs_pages_load_only_local_assets(client):
    for page in ("/docs", "/redoc"):
        html = client.get(page).text
        refs = re.findall(r"""(?:src|href)=["']([^"']+)""", html)
        assert refs and all(r.startswith("/") for r in refs), refs
        for ref in refs:
            assert client.get(ref).status_code == 200, ref
        assert "googleapis" not in html and "cdn." not in html
    bundle = client.get("/docs-assets/redoc.standalone.js")
    assert bundle.status_code == 200 and len(bundle.content) > 500_000
    assert b"cdn.redoc.ly" not in bundle.content


def test_the_shell_loads_nothing_from_elsewhere(client):
    html = client.get("/").text
    refs = re.findall(r"""(?:src|href)=["']([^"']+)""", html)
    assert refs and all(not re.match(r"^[a-z]+:", r) or r.startswith("#") for r in refs), refs
    for ref in (r for r in refs if not r.startswith("#")):
        assert client.get("/" + ref).status_code == 200, ref
    js = client.get("/web/app.js").text + client.get("/web/app.css").text
    assert not re.search(r"https?://", js), "the app must not reference outside URLs"


def test_static_files_are_package_data():
    static = files("vectree.service.web") / "static"
    assert {p.name for p in static.iterdir()} >= {"index.html", "app.js", "app.css", "favicon.svg"}
    import tomllib
    from tests.conftest import REPO

    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "static/*" in data["vectree.service.web"]
