"""The web app's routes: the HTML shell, its static files, offline API docs, and the few JSON
endpoints the pages need beyond the tool endpoints of :mod:`vectree.service.http`.

The shell and the static files are public (they hold no data); every JSON endpoint takes the
service's bearer-token dependency, like the tool endpoints.  Nothing here writes to the store.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from vectree.agent.tools import Toolbox, ToolError
from vectree.retrieval.store import DOC_ID_RE

from .quotes import quote_boxes

STATIC = Path(str(files("vectree.service.web") / "static"))
STATIC_URL = "/web"
DOCS_ASSETS_URL = "/docs-assets"
SNIPPET_WORDS = 40

DocId = Annotated[str, PathParam(pattern=DOC_ID_RE.pattern, max_length=96, description="paper id")]
PageNo = Annotated[int, PathParam(ge=1, le=100000, description="1-based page number")]


def _docs_assets() -> Path:
    """Swagger UI and ReDoc bundles shipped by the ``fastapi-offline`` package (no CDN at run time)."""
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


def _words(text: str | None, n: int) -> str:
    parts = (text or "").split()
    return " ".join(parts[:n]) + (" …" if len(parts) > n else "")


def _snippet(text: str | None, query: str, n: int = SNIPPET_WORDS) -> str:
    """About ``n`` words of ``text`` starting near the first word of ``query`` it contains."""
    words = (text or "").split()
    if len(words) <= n:
        return " ".join(words)
    terms = {w.lower() for w in re.findall(r"\w{4,}", query)}
    start = next((i for i, w in enumerate(words) if re.sub(r"\W", "", w).lower() in terms), 0)
    start = max(0, min(start - 5, len(words) - n))
    return ("… " if start else "") + " ".join(words[start:start + n]) + (" …" if start + n < len(words) else "")


def _mark(node: dict[str, Any]) -> tuple[str, str | None]:
    """``verified`` / ``repaired`` / ``unverified`` and the reason the verifier gave, if any."""
    if not node["verified"]:
        return "unverified", node.get("verify_note") or "failed verification against the page text"
    if node.get("repair_rounds"):
        rounds = node["repair_rounds"]
        note = node.get("verify_note")
        return "repaired", note or f"verified after {rounds} repair round{'s' if rounds != 1 else ''}"
    return "verified", node.get("verify_note")


def _http_error(exc: ToolError) -> HTTPException:
    msg = str(exc)
    code = 404 if ("unknown" in msg or "out of range" in msg or "no pages" in msg or "no stored" in msg) else 422
    return HTTPException(status_code=code, detail=msg)


def build_router(toolbox: Toolbox, auth: list, *, token_required: bool,
                 responses: dict | None = None, doc_id_responses: dict | None = None) -> APIRouter:
    store = toolbox.store
    # ``responses``: the service's documented error bodies (404/422/401/...), so the OpenAPI
    # description states what these endpoints really answer
    router = APIRouter(responses=responses or {})

    def paper_row(doc_id: str) -> dict[str, Any]:
        try:
            return toolbox.paper(doc_id)
        except ToolError as exc:
            raise _http_error(exc) from None

    # ---- the app shell (public) -----------------------------------------------------------
    @router.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @router.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    @router.get("/web/config", tags=["web"])
    def config() -> dict[str, Any]:
        """Public: whether API calls need a bearer token (the page then asks for it once)."""
        return {"auth": token_required}

    # ---- JSON for the pages (token required) ----------------------------------------------
    @router.get("/corpus", dependencies=auth, tags=["web"])
    def corpus() -> dict[str, Any]:
        """Every paper with pages, verified-tree share and indexing time; quarantined files with
        their reasons; the search-index snapshot being served."""
        snap_id = store.index_snapshot_id  # the index of the snapshot this request reads
        snapshot = None
        if snap_id:
            try:
                meta = json.loads((store.index_snapshot_dir(snap_id) / "meta.json").read_text())
            except (OSError, ValueError):
                meta = {}
            snapshot = {"id": snap_id, "created_at": meta.get("created_at"), "papers": meta.get("papers"),
                        "entries": meta.get("entries"), "embedder": (meta.get("embedder") or {}).get("name")}
        papers, quarantined = [], []
        for row in store.read_catalog():
            if row["status"] != "ok":
                quarantined.append({"doc_id": row["doc_id"], "title": row["title"], "source_path": row["source_path"],
                                    "status": row["status"], "reason": row["error"]})
                continue
            try:
                nodes = [n for n in toolbox.tree(row["doc_id"]) if n["level"] > 0]
            except ToolError:
                nodes = []
            marks = [_mark(n)[0] for n in nodes]
            try:
                parse_seconds = store.read_record(row["doc_id"]).get("parse_seconds")
            except Exception:  # a record being rewritten: the catalog row still answers
                parse_seconds = None
            papers.append({
                "doc_id": row["doc_id"], "title": row["title"], "authors": row["authors"] or [],
                "pages": row["n_pages"], "sections": len(nodes),
                "verified": marks.count("verified"), "repaired": marks.count("repaired"),
                "unverified": marks.count("unverified"),
                "verified_fraction": round((len(nodes) - marks.count("unverified")) / len(nodes), 3) if nodes else None,
                "parsed_at": row["parsed_at"], "parse_seconds": parse_seconds,
            })
        return {"store": str(store.root), "snapshot": snapshot, "papers": papers, "quarantined": quarantined}

    @router.get("/search/entries", dependencies=auth, tags=["web"], responses=doc_id_responses)
    def search_entries(q: Annotated[str, Query(min_length=1, max_length=2000)],
                       k: Annotated[int, Query(ge=1, le=50)] = 10,
                       paper: Annotated[list[str] | None, Query(max_length=50)] = None) -> dict[str, Any]:
        """Layer 0 with snippets: papers and their matched sections, optionally only ``paper``s."""
        from vectree.retrieval.search import IndexNotBuiltError

        from vectree.retrieval.ids import DocIdError
        from vectree.service.ids import doc_id_error_body, resolve

        for doc_id in paper or []:
            if not DOC_ID_RE.match(doc_id):
                raise HTTPException(status_code=422, detail=f"malformed paper id {doc_id!r}")
        try:  # unique prefixes name papers here too
            wanted = {resolve(toolbox, doc_id) for doc_id in paper or []}
        except DocIdError as exc:
            status, body = doc_id_error_body(exc)
            return JSONResponse(body, status_code=status)
        catalog = toolbox.catalog()
        try:
            # with a filter, rank every paper so a low-ranked chosen paper still shows
            hits = toolbox.search_index().search(q, k=max(k, len(catalog)) if wanted else k)
        except IndexNotBuiltError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from None
        results = []
        for h in hits:
            if wanted and h["doc_id"] not in wanted:
                continue
            row = catalog.get(h["doc_id"], {})
            try:
                summaries = {n["node_id"]: n["summary"] for n in toolbox.tree(h["doc_id"])}
            except ToolError:
                summaries = {}
            results.append({
                "doc_id": h["doc_id"], "title": h["title"], "score": round(float(h["score"]), 4),
                "pages": row.get("n_pages"), "snippet": _snippet(row.get("abstract"), q),
                "sections": [{"node_id": s["node_id"], "title": s["title"], "pages": list(s["pages"]),
                              "snippet": _snippet(summaries.get(s["node_id"]), q, 25)}
                             for s in h["matched_sections"]],
            })
            if len(results) >= k:
                break
        return {"query": q, "results": results}

    @router.get("/papers/{doc_id}/sections", dependencies=auth, tags=["web"], responses=doc_id_responses)
    def sections(doc_id: DocId) -> dict[str, Any]:
        """The whole section tree, unverified nodes included, each with its verification mark."""
        row = paper_row(doc_id)
        try:
            nodes = toolbox.tree(doc_id)
        except ToolError as exc:
            raise _http_error(exc) from None
        out = []
        for n in nodes:
            mark, reason = _mark(n)
            out.append({"node_id": n["node_id"], "parent_id": n["parent_id"], "level": n["level"],
                        "title": n["title"], "summary": _words(n["summary"], 60),
                        "pages": [n["page_start"], n["page_end"]], "mark": mark, "reason": reason,
                        "repair_rounds": n.get("repair_rounds") or 0, "source": n.get("source")})
        return {"doc_id": doc_id, "title": row["title"], "authors": row["authors"] or [], "pages": row["n_pages"],
                "status": row["status"], "nodes": out}

    @router.get("/papers/{doc_id}/pages/{page}/boxes", dependencies=auth, tags=["web"], responses=doc_id_responses)
    def boxes(doc_id: DocId, page: PageNo,
              quote: Annotated[str, Query(min_length=1, max_length=4000)]) -> dict[str, Any]:
        """The rectangles of ``quote`` on the page (PyMuPDF ``search_for`` on the stored PDF), in PDF
        points of the rendered page with its width and height, so a client scales them to its image."""
        row = paper_row(doc_id)
        if row["status"] not in ("ok", "no_text"):
            raise HTTPException(status_code=404, detail=f"paper {doc_id} has no pages: {row['status']}")
        if not 1 <= page <= (row["n_pages"] or 0):
            raise HTTPException(status_code=404,
                                detail=f"page {page} is out of range: paper {doc_id} has pages 1-{row['n_pages']}")
        pdf = store.pdf_path(doc_id)
        if not pdf.exists():
            raise HTTPException(status_code=404, detail=f"paper {doc_id} has no stored PDF")
        try:
            return {"doc_id": doc_id, **quote_boxes(pdf, page, quote)}
        except IndexError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from None

    return router


# ReDoc's sidebar footer always loads its logo from Redocly's CDN (no option turns it off); the
# bundle is served with that one URL pointed at our own icon, so the page makes no outside request
REDOC_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


@lru_cache(maxsize=1)
def _redoc_bundle() -> bytes:
    return (_docs_assets() / "redoc.standalone.js").read_bytes().replace(REDOC_CDN_LOGO, f"{STATIC_URL}/favicon.svg".encode())


def _offline_docs(app: FastAPI) -> None:
    """Replace FastAPI's ``/docs`` and ``/redoc`` (which load Swagger UI and ReDoc from a CDN) with
    pages that load the same bundles from this service."""
    replaced = {app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url} - {None}
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) not in replaced]
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2 = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    def swagger(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=root + openapi_url, title=f"{app.title} - Swagger UI", oauth2_redirect_url=root + oauth2,
            swagger_js_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{STATIC_URL}/favicon.svg",
            # no validator badge: it would send the spec to validator.swagger.io
            swagger_ui_parameters={"validatorUrl": None, **(app.swagger_ui_parameters or {})},
        )

    @app.get(oauth2, include_in_schema=False)
    def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(openapi_url=root + openapi_url, title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{root}{DOCS_ASSETS_URL}/redoc.standalone.js",
                              redoc_favicon_url=f"{root}{STATIC_URL}/favicon.svg", with_google_fonts=False)

    # before the mount below, so this route answers instead of the unpatched file
    @app.get(f"{DOCS_ASSETS_URL}/redoc.standalone.js", include_in_schema=False)
    def redoc_js() -> Response:
        return Response(_redoc_bundle(), media_type="text/javascript",
                        headers={"Cache-Control": "public, max-age=3600"})

    app.mount(DOCS_ASSETS_URL, StaticFiles(directory=_docs_assets()), name="docs-assets")


def mount_web(app: FastAPI, toolbox: Toolbox, auth: list, *, token_required: bool,
              responses: dict | None = None, doc_id_responses: dict | None = None) -> None:
    """Add the web app to ``app`` (the hook :func:`vectree.service.http.create_app` calls);
    ``doc_id_responses``: the extra statuses of a route with a doc id (an ambiguous prefix)."""
    app.include_router(build_router(toolbox, auth, token_required=token_required, responses=responses,
                                    doc_id_responses=doc_id_responses))
    app.mount(STATIC_URL, StaticFiles(directory=STATIC), name="web")
    _offline_docs(app)
