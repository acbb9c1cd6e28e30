"""The query service over HTTP: one route per tool, ``GET /papers``, ``POST /ask``, ``GET /health``.

The tool routes are generated from the declarations in :mod:`vectree.agent.toolspec` (path, query
parameters, argument constraints, result model, error statuses); a tool's typed error decides the
status (:class:`NotFound` 404, :class:`BadArgument` 422, :class:`Unavailable` 503).

Thin by design: it only reads the store (the pipeline is the only writer), and it picks up a
newly published snapshot on the next request (the search index reloads when ``index/CURRENT``
changes; trees, pages and the catalog are re-read when their files change), so a refresh needs
no restart.

Hardening, in request order:

* with a token (``VECTREE_API_TOKEN``), every route except :data:`PUBLIC_PATHS` answers 401
  unless ``Authorization: Bearer <token>`` is sent, checked by middleware *before* the body is
  read or parsed;
* request bodies are limited (``VECTREE_MAX_BODY_BYTES``, default 1 MB): a larger declared
  ``Content-Length`` gets 413 at once, a streamed body gets 413 as soon as it passes the limit;
* error texts repeat at most an excerpt of the input (200 characters) and never an absolute
  path; ``/health`` tells the snapshot id and counts, not where the store lives.
"""

from __future__ import annotations

import inspect
import os
import secrets
import typing
from typing import Annotated, Any

from fastapi import APIRouter, Body, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo
from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, SimpleUser
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.middleware.body_limit import RequestBodyLimitMiddleware

from vectree.agent.toolimpl import Toolbox
from vectree.agent.toolspec import (TOOLS, BadArgument, NotFound, ToolError, ToolSpec, Unavailable, excerpt,
                                    scrub_paths)
from vectree.retrieval.config import Settings, load_settings
from vectree.retrieval.injection import flag_pages
from vectree.retrieval.store import DOC_ID_RE, Store
from vectree.retrieval.threads import limit_blas_threads
from vectree.service.ids import ResolveDocIds, doc_id_error_body
from vectree.service.snapshots import PinSnapshot

DEFAULT_MAX_BODY_BYTES = 1_000_000
# open without a token: the liveness probe and the API description (no data in either)
PUBLIC_PATHS = frozenset({"/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc", "/", "/favicon.ico"})
# the web app's shell, scripts and styles, and the offline Swagger/ReDoc bundles: no data in any of them
PUBLIC_PREFIXES = ("/web/", "/docs-assets/")


class PaperRef(BaseModel):
    doc_id: str
    title: str


class ErrorBody(BaseModel):
    """Every error response: a short, path-free message and its kind."""

    detail: str
    error: str
    # a paper id that names no single paper: the ids it fits (409) or the closest ones (404)
    candidates: list[PaperRef] | None = None
    suggestions: list[PaperRef] | None = None


_ERROR_KIND = {NotFound: "not_found", BadArgument: "bad_argument", Unavailable: "unavailable"}
TOOL_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "the paper, section, page or file does not exist"},
    422: {"model": ErrorBody, "description": "malformed or out-of-range arguments"},
    503: {"model": ErrorBody, "description": "the store lacks the index or passages this needs (run vectree ingest)"},
}
BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "the body cannot be decoded (not UTF-8 JSON)"},
}
# routes that take a doc id accept a unique prefix (vectree.service.ids)
DOC_ID_ERRORS: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "the paper id is a prefix of several papers' ids (the candidates are listed)"},
}
GUARD_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "missing or wrong bearer token (when the service has a token)"},
    413: {"description": "request body larger than the service's limit"},
}


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=2000)
    paper: str | None = Field(default=None, pattern=DOC_ID_RE.pattern)
    agent: str = Field(default="auto", pattern=r"^(auto|offline|llm)$")


class Health(BaseModel):
    status: str
    snapshot: str | None
    papers: int
    papers_total: int


class PaperRow(BaseModel):
    doc_id: str
    title: str | None
    pages: int | None
    status: str | None
    error: str | None
    # 1-based pages whose text is instruction-like ("ignore previous instructions ..."), flagged at
    # ingest: a possible prompt injection; such text never counts as an answer's evidence
    instruction_pages: list[int] = Field(default_factory=list)
    flag: str | None = Field(default=None, description='e.g. "instruction-like text on p. 2"; null when none')


class PaperArtefact(BaseModel):
    artefact: str
    ok: bool
    detail: str | None


class PaperDetail(PaperRow):
    authors: list[str]
    abstract: str | None
    parsed_at: str | None
    artefacts: list[PaperArtefact]


class Papers(BaseModel):
    papers: list[PaperRow]


# ---- guards ------------------------------------------------------------------------------------
class BearerToken(AuthenticationBackend):
    """Checks ``Authorization: Bearer <token>`` from the headers alone, so an unauthenticated
    request is refused before a byte of its body is read."""

    def __init__(self, token: str, public: frozenset[str]):
        self.token = token.encode()
        self.public = public

    async def authenticate(self, conn):
        path = conn.scope["path"]
        if path in self.public or path.startswith(PUBLIC_PREFIXES):
            return None
        scheme, _, value = conn.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(value.strip().encode(), self.token):
            raise AuthenticationError("missing or wrong bearer token")
        return AuthCredentials(["authenticated"]), SimpleUser("api")


def _unauthorized(_conn, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc), "error": "unauthorized"}, status_code=401,
                        headers={"WWW-Authenticate": "Bearer"})


def _error(status: int, detail: str, kind: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": excerpt(scrub_paths(detail)), "error": kind}, status_code=status, headers=headers)


def _validation_summary(exc: RequestValidationError) -> str:
    """Where and what, never the rejected input (a 1 MB question must not come back)."""
    parts = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {excerpt(e.get('msg', 'invalid'), 120)}")
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ToolError)
    def tool_error(_: Request, exc: ToolError) -> JSONResponse:
        return _error(exc.status, str(exc), _ERROR_KIND.get(type(exc), "tool_error"))

    @app.exception_handler(RequestValidationError)
    def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, _validation_summary(exc), "validation")

    @app.exception_handler(StarletteHTTPException)
    def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), "http", getattr(exc, "headers", None))

    @app.exception_handler(ValueError)
    def value_error(_: Request, exc: ValueError) -> JSONResponse:
        return _error(422, str(exc), "bad_argument")


# ---- routes generated from the tool declarations -------------------------------------------------
def _param(spec: ToolSpec, url_name: str, arg: str) -> inspect.Parameter:
    """The FastAPI parameter for URL name ``url_name``, with the type, constraints and default of
    the tool argument it fills (the item type when it fills a one-item list)."""
    route = spec.route
    field = spec.args.model_fields[arg]
    if url_name in route.as_list:
        field = FieldInfo.from_annotation(typing.get_args(field.annotation)[0])
    where = Path if "{" + url_name + "}" in route.path else Query
    kwargs: dict[str, Any] = {"description": field.description}
    default = inspect.Parameter.empty
    if where is Query and not field.is_required():
        default = field.default
    annotation = Annotated[(field.annotation, *field.metadata, where(**kwargs))]
    return inspect.Parameter(url_name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def tool_router(toolbox: Toolbox) -> APIRouter:
    """One route per declared tool (``spec.route``); each runs :meth:`Toolbox.call`."""
    router = APIRouter()
    for spec in TOOLS.values():
        _add_tool_route(router, toolbox, spec)
    return router


def _add_tool_route(router: APIRouter, toolbox: Toolbox, spec: ToolSpec) -> None:
    route = spec.route

    if route.method == "POST":
        def endpoint(body: Any) -> Any:
            return _respond(toolbox.call(spec.name, {k: getattr(body, k) for k in type(body).model_fields}))

        endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter("body", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[spec.args, Body()])])
    else:
        def endpoint(**params: Any) -> Any:
            args = {arg: [params[url]] if url in route.as_list else params[url] for url, arg in route.params.items()}
            return _respond(toolbox.call(spec.name, args))

        endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [_param(spec, url, arg) for url, arg in route.params.items()])

    def _respond(result):
        if route.png:
            return Response(content=result.image_png, media_type="image/png")
        return {**result.data, "tokens": result.tokens}

    endpoint.__name__ = spec.name
    extra = {"x-tool": {"name": spec.name, "layer": spec.layer, "arguments": dict(route.params)}}
    common = dict(operation_id=spec.name, summary=spec.name, description=spec.description,
                  responses={**TOOL_ERRORS, **GUARD_ERRORS, **(BODY_ERRORS if route.method == "POST" else {}),
                             **(DOC_ID_ERRORS if "{doc_id}" in route.path else {})},
                  openapi_extra=extra, tags=["tools"])
    if route.png:
        common["responses"] = {200: {"content": {"image/png": {}}, "description": "the page as PNG"},
                               **common["responses"]}
        router.add_api_route(route.path, endpoint, methods=[route.method], response_class=Response, **common)
    else:
        response_model = create_model(f"{spec.result.__name__}Response", __base__=spec.result,
                                      tokens=(int, Field(description="tokens of the compact JSON result")))
        router.add_api_route(route.path, endpoint, methods=[route.method], response_model=response_model,
                             response_model_exclude_unset=True, **common)


# ---- the rest of the service ---------------------------------------------------------------------
def service_router(store: Store, toolbox: Toolbox, settings: Settings) -> APIRouter:
    router = APIRouter()

    @router.get("/health", response_model=Health, tags=["service"])
    def health() -> dict[str, Any]:
        """Liveness and what is served: the snapshot id and paper counts (no filesystem paths)."""
        from vectree.retrieval.search.index import current_snapshot_id, index_root

        catalog = store.view().read_catalog()
        # (a machine that only reads a store on object storage has no working index: the live one's)
        return {"status": "ok", "snapshot": current_snapshot_id(index_root(store)) or store.view().index_snapshot_id,
                "papers": sum(1 for r in catalog if r["status"] == "ok"), "papers_total": len(catalog)}

    def paper_row(r: dict[str, Any]) -> dict[str, Any]:
        return {"doc_id": r["doc_id"], "title": r["title"], "pages": r["n_pages"], "status": r["status"],
                "error": scrub_paths(r["error"]) if r["error"] else r["error"],
                "instruction_pages": r["instruction_pages"], "flag": flag_pages(r["instruction_pages"]) or None}

    @router.get("/papers", response_model=Papers, responses=GUARD_ERRORS, tags=["service"])
    def papers() -> dict[str, Any]:
        return {"papers": [paper_row(r) for r in store.view().read_catalog()]}

    @router.get("/papers/{doc_id}", response_model=PaperDetail, tags=["service"],
                responses={404: {"model": ErrorBody, "description": "no such paper"},
                           422: {"model": ErrorBody, "description": "malformed paper id"},
                           **DOC_ID_ERRORS, **GUARD_ERRORS})
    def paper(doc_id: Annotated[str, Path(pattern=DOC_ID_RE.pattern)]) -> Any:
        """One paper of the served snapshot: its catalog row, per-artefact status and flags."""
        for r in store.view().read_catalog():
            if r["doc_id"] == doc_id:
                return {**paper_row(r), "authors": r["authors"] or [], "abstract": r["abstract"],
                        "parsed_at": r["parsed_at"],
                        "artefacts": [{**a, "detail": scrub_paths(a["detail"]) if a["detail"] else a["detail"]}
                                      for a in r["artefacts"] or []]}
        return _error(404, f"no paper {doc_id}", "not_found")

    @router.post("/ask", responses={**TOOL_ERRORS, **DOC_ID_ERRORS, **GUARD_ERRORS, **BODY_ERRORS,
                                    502: {"model": ErrorBody, "description": "the LLM endpoint failed"}},
                 tags=["service"])
    def ask(body: AskRequest) -> dict[str, Any]:
        from vectree.agent.ask import ask as ask_question
        from vectree.retrieval.ids import DocIdError
        from vectree.retrieval.llm import LLMError
        from vectree.service.ids import resolve

        if body.paper is not None:  # a unique prefix names the paper too
            try:
                body = body.model_copy(update={"paper": resolve(toolbox, body.paper)})
            except DocIdError as exc:
                status, payload = doc_id_error_body(exc)
                return JSONResponse(payload, status_code=status)
        try:
            answer = ask_question(toolbox, body.question, paper=body.paper, agent=body.agent, settings=settings)
        except LLMError as exc:
            return _error(502, f"the LLM endpoint failed: {exc}", "llm")
        return answer.as_dict()

    return router


def create_app(store_root: str | os.PathLike, *, token: str | None = None, max_body_bytes: int | None = None,
               settings: Settings | None = None) -> FastAPI:
    """The FastAPI app over one store.  ``settings`` default to the environment's (built once,
    here); ``token`` and ``max_body_bytes`` default to their ``api_token`` (empty means none) and
    ``max_body_bytes``."""
    settings = settings or load_settings(store_root)
    limit_blas_threads(settings.blas_threads)  # see retrieval/threads.py: BLAS threads slow the query encoder
    token = (token if token is not None else settings.token) or None
    max_body_bytes = settings.max_body_bytes if max_body_bytes is None else max_body_bytes
    store = Store(store_root)
    toolbox = Toolbox(store)
    app = FastAPI(title="vectree", version="0.1.0",
                  description="Answers over scientific PDFs with page-level citations.")
    app.state.store, app.state.toolbox = store, toolbox
    app.include_router(service_router(store, toolbox, settings))
    app.include_router(tool_router(toolbox))
    install_error_handlers(app)
    from vectree.service.web import mount_web  # the browser pages and offline /docs (service/web/)

    # no per-route dependencies: the token middleware below guards every non-public path
    mount_web(app, toolbox, [], token_required=token is not None, responses={**TOOL_ERRORS, **GUARD_ERRORS},
              doc_id_responses=DOC_ID_ERRORS)
    # added before PinSnapshot, so it runs inside the request's snapshot: prefixes resolve against it
    app.add_middleware(ResolveDocIds, toolbox=toolbox)
    app.add_middleware(PinSnapshot, store=store)  # one store snapshot per request, named in a header
    # the last middleware added runs first: the token is checked before the body limit reads anything
    app.add_middleware(RequestBodyLimitMiddleware, max_body_size=max_body_bytes)
    if token is not None:
        app.add_middleware(AuthenticationMiddleware, backend=BearerToken(token, PUBLIC_PATHS),
                           on_error=_unauthorized)
    return app
