"""The query service over HTTP: one endpoint per tool, ``POST /ask``, ``GET /health``.

Thin by design: it only reads the store (the pipeline is the only writer), and it picks up a
newly published snapshot on the next request (the search index reloads when ``index/CURRENT``
changes; trees, pages and the catalog are re-read when their files change), so a refresh needs
no restart.  Set ``VECTREE_API_TOKEN`` to require ``Authorization: Bearer <token>`` on every
endpoint except ``/health``.
"""

from __future__ import annotations

import os
import secrets
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from vectree.agent.tools import Toolbox, ToolError
from vectree.retrieval.store import DOC_ID_RE, Store
from vectree.retrieval.threads import limit_blas_threads

DocId = Annotated[str, Path(pattern=DOC_ID_RE.pattern, max_length=96, description="paper id")]
NodeId = Annotated[str, Path(pattern=r"^n\d{1,6}$", description="section node id, e.g. n3")]


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=2000)
    paper: str | None = Field(default=None, pattern=DOC_ID_RE.pattern)
    agent: str = Field(default="auto", pattern=r"^(auto|offline|llm)$")


def _not_found(exc: ToolError) -> HTTPException:
    msg = str(exc)
    code = 404 if ("unknown" in msg or "out of range" in msg or "no pages" in msg) else 422
    return HTTPException(status_code=code, detail=msg)


def create_app(store_root: str | os.PathLike, *, token: str | None = None) -> FastAPI:
    """The FastAPI app over one store.  ``token`` defaults to ``$VECTREE_API_TOKEN``; empty means none."""
    limit_blas_threads()  # see retrieval/threads.py: BLAS threads slow the query encoder
    store = Store(store_root)
    toolbox = Toolbox(store)
    token = (token if token is not None else os.environ.get("VECTREE_API_TOKEN")) or None
    app = FastAPI(title="vectree", version="0.1.0",
                  description="Answers over scientific PDFs with page-level citations.")

    def require_token(request: Request) -> None:
        if token is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(value.strip(), token):
            raise HTTPException(status_code=401, detail="missing or wrong bearer token",
                                headers={"WWW-Authenticate": "Bearer"})

    auth = [Depends(require_token)]

    def run(name: str, **args: Any) -> dict[str, Any]:
        try:
            result = toolbox.call(name, args)
        except ToolError as exc:
            raise _not_found(exc) from None
        return {**result.data, "tokens": result.tokens}

    @app.get("/health")
    def health() -> dict[str, Any]:
        from vectree.retrieval.search.index import current_snapshot_id, index_root

        catalog = store.read_catalog()
        return {"status": "ok", "store": str(store.root), "snapshot": current_snapshot_id(index_root(store)),
                "papers": sum(1 for r in catalog if r["status"] == "ok"), "papers_total": len(catalog)}

    @app.get("/papers", dependencies=auth)
    def papers() -> dict[str, Any]:
        return {"papers": [{"doc_id": r["doc_id"], "title": r["title"], "pages": r["n_pages"], "status": r["status"],
                            "error": r["error"]} for r in store.read_catalog()]}

    @app.get("/search", dependencies=auth)
    def search(q: Annotated[str, Query(min_length=1, max_length=2000)],
               k: Annotated[int, Query(ge=1, le=20)] = 5) -> dict[str, Any]:
        return run("search_papers", query=q, k=k)

    @app.get("/papers/{doc_id}/tree", dependencies=auth)
    def tree(doc_id: DocId, max_depth: Annotated[int, Query(ge=1, le=6)] = 2) -> dict[str, Any]:
        return run("get_document_tree", doc_id=doc_id, max_depth=max_depth)

    @app.get("/papers/{doc_id}/sections/{node_id}", dependencies=auth)
    def section(doc_id: DocId, node_id: NodeId) -> dict[str, Any]:
        return run("get_section", doc_id=doc_id, node_id=node_id)

    @app.get("/papers/{doc_id}/search", dependencies=auth)
    def search_within(doc_id: DocId, q: Annotated[str, Query(min_length=1, max_length=2000)],
                      k: Annotated[int, Query(ge=1, le=20)] = 5) -> dict[str, Any]:
        return run("search_within_paper", doc_id=doc_id, query=q, k=k)

    @app.get("/papers/{doc_id}/pages/{page}", dependencies=auth)
    def page(doc_id: DocId, page: Annotated[int, Path(ge=1, le=100000)]) -> dict[str, Any]:
        return run("get_page_content", doc_id=doc_id, pages=[page])

    @app.get("/papers/{doc_id}/pages/{page}/image.png", dependencies=auth, response_class=Response)
    def page_image(doc_id: DocId, page: Annotated[int, Path(ge=1, le=100000)],
                   dpi: Annotated[int, Query(ge=30, le=200)] = 100) -> Response:
        try:
            png, _, _ = toolbox.render_page_png(doc_id, page, dpi)
        except ToolError as exc:
            raise _not_found(exc) from None
        return Response(content=png, media_type="image/png")

    @app.post("/ask", dependencies=auth)
    def ask(body: AskRequest) -> dict[str, Any]:
        from vectree.agent.ask import ask as ask_question

        try:
            answer = ask_question(toolbox, body.question, paper=body.paper, agent=body.agent)
        except ToolError as exc:
            raise _not_found(exc) from None
        return answer.as_dict()

    @app.exception_handler(ValueError)
    def value_error(_: Request, exc: ValueError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": str(exc)})

    from vectree.service.web import mount_web  # the browser pages and offline /docs (service/web/)

    mount_web(app, toolbox, auth, token_required=token is not None)
    return app
