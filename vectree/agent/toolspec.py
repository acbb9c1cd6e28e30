"""The seven progressive-disclosure tools, declared once.

Each tool is one :class:`ToolSpec`: a name, its disclosure layer, a description for the model,
a pydantic model of its arguments and one of its result, and the HTTP route that serves it.
Everything else is generated from these declarations:

* the OpenAI tool definitions the LLM agent sends (:func:`openai_tools`);
* argument validation and coercion for every caller (:func:`validate_arguments`), with
  messages written for the model to act on;
* the MCP tool listing and handlers (:mod:`vectree.service.mcp_server`);
* the HTTP routes and their OpenAPI description (:mod:`vectree.service.http`).

The implementations live in :mod:`vectree.agent.toolimpl` (one :class:`Toolbox` method per
tool, same name).  Failures are typed: :class:`ToolError` and its subclasses carry the HTTP
status they map to (:class:`NotFound` 404, :class:`BadArgument` 422, :class:`Unavailable` 503),
so no caller decides a status by reading a message.

Layers of growing size (tokens by :mod:`vectree.agent.tokens`, on the compact JSON returned):

* Layer 0 ``search_papers``: which papers, and which of their sections matched (~50 tokens each).
* Layer 1 ``get_document_tree`` (200-500 tokens a paper), ``get_section`` (one node),
  ``search_within_paper`` (best sections and pages of one paper with short snippets).
* Layer 2 ``get_page_content`` (full text of a page or a short range, capped),
  ``get_page_image`` (the rendered page as PNG, for figures and tables).
* ``submit_answer`` ends an episode; every citation is checked against its page.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WrapValidator

from vectree.retrieval.store import DOC_ID_RE

MAX_PAGES_PER_CALL = 3
MAX_PAGE_CHARS = 8000  # about 2,000 tokens a page
MAX_K = 20
MAX_QUERY_CHARS = 2000
MIN_QUOTE_WORDS = 5  # a citation's quote must be at least this many words to count as evidence
ERROR_EXCERPT = 200  # the most characters of caller input that an error message repeats


# ---- errors ------------------------------------------------------------------------------------
_ABS_PATH = re.compile(r"(?<![\w.:/~\\-])(?:[A-Za-z]:\\|/)(?:[^\s/\\'\"`:;,()<>\[\]{}]+[/\\])+"
                       r"([^\s/\\'\"`:;,()<>\[\]{}]*)")


def scrub_paths(text: str) -> str:
    """``text`` with every absolute filesystem path cut down to its last component
    (``/srv/store/pages/x.parquet`` -> ``…/x.parquet``): error texts reach clients, paths must not."""
    return _ABS_PATH.sub(lambda m: "…/" + m.group(1), str(text))


def excerpt(value: Any, limit: int = ERROR_EXCERPT) -> str:
    """At most ``limit`` characters of ``value``'s repr, so an error never echoes a whole input."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


class ToolError(Exception):
    """A tool could not do what was asked; the message is returned to the model as the result.

    ``status`` is the HTTP status the error maps to.  Messages never carry absolute paths.
    """

    status = 422

    def __init__(self, message: str):
        super().__init__(scrub_paths(message))


class BadArgument(ToolError):
    """The arguments are malformed or out of their declared range (HTTP 422)."""

    status = 422


class NotFound(ToolError):
    """The paper, section, page or file named by the arguments does not exist (HTTP 404)."""

    status = 404


class Unavailable(ToolError):
    """The store lacks an artefact the tool needs (no search index, no passages yet; HTTP 503)."""

    status = 503


# ---- argument types ----------------------------------------------------------------------------
def _coerce_int(value: Any) -> Any:
    """``"3"`` -> 3 and ``3.0`` -> 3: unambiguous spellings of an integer, as LLMs write them.
    Anything else (``True``, ``"three"``, ``3.5``) is left to fail the strict integer check."""
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d{1,9}\s*", value):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _int(ge: int, le: int, description: str | None = None) -> Any:
    """An integer argument in ``[ge, le]`` that also takes ``"3"``.  The bounds sit before the
    coercion in the annotation, so that the JSON schema carries them as minimum/maximum."""
    return Annotated[int, Field(strict=True, ge=ge, le=le, description=description), BeforeValidator(_coerce_int)]


PageNo = _int(1, 100_000, "1-based page number")
DocId = Annotated[str, Field(pattern=DOC_ID_RE.pattern, description="paper id from search_papers, "
                                                                      "e.g. 'attention-3f2a9c1b07'")]
NodeId = Annotated[str, Field(pattern=r"^n\d{1,6}$", description="node id from the tree, e.g. 'n4'")]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
K = _int(1, MAX_K, "how many results")

_PATTERN_HINTS = {
    "doc_id": "expected lowercase letters, digits and '-' (a paper id from search_papers)",
    "node_id": "expected a node id from the paper's tree such as 'n4'",
}


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown arguments are errors, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


class SearchPapersArgs(ToolArgs):
    query: Query
    k: K = 5


class GetDocumentTreeArgs(ToolArgs):
    doc_id: DocId
    max_depth: _int(1, 6, "deepest tree level shown") = 2


class GetSectionArgs(ToolArgs):
    doc_id: DocId
    node_id: NodeId


class SearchWithinPaperArgs(ToolArgs):
    doc_id: DocId
    query: Query
    k: K = 5
    passages_only: bool = Field(
        False, description="rank the paper's sentences by BM25, cosine and the reader only, even where "
                           "SproutRAG nodes are switched on")


class GetPageContentArgs(ToolArgs):
    doc_id: DocId
    pages: list[PageNo] = Field(min_length=1, max_length=MAX_PAGES_PER_CALL,
                                description="1-based page numbers")


class GetPageImageArgs(ToolArgs):
    doc_id: DocId
    page: PageNo
    dpi: _int(30, 200, "resolution of the rendered page") = 100


class Citation(BaseModel):
    """One piece of evidence: a quote copied exactly from a page."""

    model_config = ConfigDict(extra="ignore")

    doc_id: str
    page: PageNo
    quote: str = Field(description=f"at least {MIN_QUOTE_WORDS} words copied exactly from the page")


@dataclass
class RejectedCitation:
    """A citation item that failed validation: kept in its place, reported unverified."""

    raw: Any
    reason: str


def _citation_or_rejected(value: Any, handler) -> Citation | RejectedCitation:
    # one malformed citation must not reject the whole answer: it is kept and marked unverified
    if isinstance(value, RejectedCitation):  # validated before (an HTTP body is checked twice)
        return value
    try:
        return handler(value)
    except ValidationError as exc:
        return RejectedCitation(value, "; ".join(_messages(exc, None)))


CitationItem = Annotated[Citation, WrapValidator(_citation_or_rejected)]


class SubmitAnswerArgs(ToolArgs):
    answer: Annotated[str, Field(max_length=20_000)]
    citations: list[CitationItem] = Field(max_length=50)



# ---- result types ------------------------------------------------------------------------------
class ToolData(BaseModel):
    """Base of every tool's result.  Optional keys are absent, not null, when they do not apply."""

    model_config = ConfigDict(extra="forbid")


class SectionHit(ToolData):
    node_id: str
    title: str | None
    pages: list[int]


class PaperHit(ToolData):
    doc_id: str
    title: str | None
    score: float
    sections: list[SectionHit]


class SearchPapersResult(ToolData):
    query: str
    results: list[PaperHit]
    # "relevance" when the trained reranker scored the results (a calibrated probability, said
    # once for the list rather than per result: Layer 0 stays about 50 tokens a paper)
    score: Literal["relevance"] | None = None


class TreeEntry(ToolData):
    node_id: str
    level: int
    title: str | None
    pages: list[int]
    summary: str | None = None


class GetDocumentTreeResult(ToolData):
    doc_id: str
    title: str | None
    pages: int | None
    summary: str | None
    sections: list[TreeEntry]
    unverified_sections_hidden: int | None = None
    deeper_levels: str | None = None


class NodeRef(ToolData):
    node_id: str
    title: str | None


class ChildRef(ToolData):
    node_id: str
    title: str | None
    pages: list[int]


class GetSectionResult(ToolData):
    doc_id: str
    node_id: str
    title: str | None
    level: int
    pages: list[int]
    summary: str | None
    parent: NodeRef | None
    children: list[ChildRef]


class WithinHit(ToolData):
    page: int | None
    node_id: str | None
    section: str | None
    score: float
    snippet: str
    pages: list[int] | None = None  # SproutRAG nodes span pages
    sprout_node: str | int | None = None
    relevance: float | None = None  # the trained reranker's calibrated relevance
    passage: int | None = None  # the passage's index in the paper (the navigator reads it back)


class SearchWithinPaperResult(ToolData):
    doc_id: str
    query: str
    method: Literal["sprout", "passages"]
    results: list[WithinHit]
    # the query as searched when the paper's own abbreviations were added (retrieval.acronyms)
    searched_as: str | None = None


class PageText(ToolData):
    page: int
    text: str
    truncated_chars: int | None = None


class GetPageContentResult(ToolData):
    doc_id: str
    pages: list[PageText]
    skipped: list[str] | None = None  # requested pages that do not exist (the others are returned)


class GetPageImageResult(ToolData):
    doc_id: str
    page: int
    width: int
    height: int
    format: Literal["png"]
    note: str


class CheckedCitation(ToolData):
    doc_id: Any = None
    page: Any = None
    quote: Any = ""
    valid: bool
    reason: str | None = None
    instruction_like: bool | None = None


class SubmitAnswerResult(ToolData):
    answer: str
    citations: list[CheckedCitation]
    verified: int
    flags: list[str] | None = None


# ---- the declarations --------------------------------------------------------------------------
@dataclass(frozen=True)
class Route:
    """How a tool is served over HTTP.  ``params`` maps each URL name (path or query parameter,
    or a JSON body field for ``POST``) to the tool argument it fills; ``as_list`` names the URL
    parameters that fill a list argument with one item (``/pages/{page}`` -> ``pages=[page]``)."""

    method: Literal["GET", "POST"]
    path: str
    params: dict[str, str] = field(default_factory=dict)
    as_list: frozenset[str] = frozenset()
    png: bool = False  # the route answers with the tool's image, not its JSON


@dataclass(frozen=True)
class ToolSpec:
    name: str
    layer: int
    description: str
    args: type[ToolArgs]
    result: type[ToolData]
    route: Route

    def parameters_schema(self) -> dict[str, Any]:
        """The arguments' JSON schema, as the OpenAI and MCP tool definitions carry it (references
        inlined: not every OpenAI-compatible server resolves ``$ref``)."""
        return inline_refs(self.args.model_json_schema())


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


TOOLS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec(
        "search_papers", 0,
        "Layer 0. Search the whole corpus; returns the best papers with the sections that "
        "matched and their page ranges. Start here unless the paper is already known.",
        SearchPapersArgs, SearchPapersResult,
        Route("GET", "/search", {"q": "query", "k": "k"}),
    ),
    ToolSpec(
        "get_document_tree", 1,
        "Layer 1. A paper's verified section tree: titles, page ranges and short summaries. "
        "Read it before opening pages.",
        GetDocumentTreeArgs, GetDocumentTreeResult,
        Route("GET", "/papers/{doc_id}/tree", {"doc_id": "doc_id", "max_depth": "max_depth"}),
    ),
    ToolSpec(
        "get_section", 1,
        "Layer 1. One section of a paper: its full summary, its subsections and its pages.",
        GetSectionArgs, GetSectionResult,
        Route("GET", "/papers/{doc_id}/sections/{node_id}", {"doc_id": "doc_id", "node_id": "node_id"}),
    ),
    ToolSpec(
        "search_within_paper", 1,
        "Layer 1. The passages of one paper that best match a query, with their section, page "
        "and a short snippet (not full text).",
        SearchWithinPaperArgs, SearchWithinPaperResult,
        Route("GET", "/papers/{doc_id}/search", {"doc_id": "doc_id", "q": "query", "k": "k",
                                                 "passages_only": "passages_only"}),
    ),
    ToolSpec(
        "get_page_content", 2,
        f"Layer 2. Full text of up to {MAX_PAGES_PER_CALL} pages of a paper (1-based page numbers). "
        "Open only the pages the tree or the within-paper search pointed to.",
        GetPageContentArgs, GetPageContentResult,
        Route("GET", "/papers/{doc_id}/pages/{page}", {"doc_id": "doc_id", "page": "pages"},
              as_list=frozenset({"page"})),
    ),
    ToolSpec(
        "get_page_image", 2,
        "Layer 2. The page rendered as a PNG image, for figures and tables.",
        GetPageImageArgs, GetPageImageResult,
        Route("GET", "/papers/{doc_id}/pages/{page}/image.png", {"doc_id": "doc_id", "page": "page", "dpi": "dpi"},
              png=True),
    ),
    ToolSpec(
        "submit_answer", 2,
        "End the episode with the answer and its page-level evidence. Each citation quotes a passage "
        f"of at least {MIN_QUOTE_WORDS} words copied exactly from the cited page; a citation that "
        "fails a check is returned unverified with the reason.",
        SubmitAnswerArgs, SubmitAnswerResult,
        Route("POST", "/answers/check", {"answer": "answer", "citations": "citations"}),
    ),
)}
TOOL_NAMES = tuple(TOOLS)
LAYER_OF = {name: spec.layer for name, spec in TOOLS.items()}


def openai_tools(names: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    """The tools as OpenAI chat-completions tool definitions."""
    return [{"type": "function", "function": {"name": n, "description": TOOLS[n].description,
                                              "parameters": TOOLS[n].parameters_schema()}} for n in names]


# ---- validation --------------------------------------------------------------------------------
def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _messages(exc: ValidationError, what: str | None) -> list[str]:
    """pydantic's errors as short sentences for the model: what is wrong and what is expected,
    never more than an excerpt of the input.  ``what`` (the tool) opens each sentence."""
    head = f"{what} " if what else ""
    lead = f"{what}: " if what else ""
    out = []
    missing = [_where(e["loc"]) for e in exc.errors() if e["type"] == "missing"]
    if missing:
        out.append(f"{head}is missing required arguments: {', '.join(missing)}")
    unknown = [_where(e["loc"]) for e in exc.errors() if e["type"] == "extra_forbidden"]
    if unknown:
        out.append(f"{head}got unknown arguments: {', '.join(unknown)}")
    for e in exc.errors():
        kind, ctx, value = e["type"], e.get("ctx") or {}, e.get("input")
        key = _where(e["loc"])
        if not key:  # the value itself, not one of its fields
            out.append(f"{head}must be a JSON object, got {type(value).__name__}")
            continue
        last = next((p for p in reversed(e["loc"]) if isinstance(p, str)), key)
        if kind in ("missing", "extra_forbidden"):
            continue
        if kind in ("int_type", "int_parsing", "int_from_float"):
            msg = f"must be of type integer, got {type(value).__name__} {excerpt(value, 40)!r}"
        elif kind in ("string_type",):
            msg = f"must be of type string, got {type(value).__name__}"
        elif kind in ("list_type",):
            msg = f"must be of type array, got {type(value).__name__}"
        elif kind in ("model_type", "model_attributes_type", "dict_type"):
            msg = f"must be of type object, got {type(value).__name__}"
        elif kind == "greater_than_equal":
            msg = f"must be at least {ctx.get('ge')}"
        elif kind == "less_than_equal":
            msg = f"must be at most {ctx.get('le')}"
        elif kind == "string_too_short":
            msg = "must not be empty"
        elif kind == "string_too_long":
            msg = f"must be at most {ctx.get('max_length')} characters"
        elif kind == "too_short":
            msg = f"needs at least {ctx.get('min_length')} item(s)"
        elif kind == "too_long":
            msg = f"takes at most {ctx.get('max_length')} items"
        elif kind == "string_pattern_mismatch":
            out.append(f"invalid {last} {excerpt(value, 60)!r}: {_PATTERN_HINTS.get(last, 'malformed')}")
            continue
        elif kind == "literal_error":
            msg = f"must be one of {ctx.get('expected')}"
        else:
            msg = excerpt(e["msg"])
        out.append(f"{lead}argument {key!r} {msg}")
    return out


def validate_arguments(name: str, args: Any) -> ToolArgs:
    """``args`` (a dict or JSON text, as an LLM sends them) checked against the tool's model:
    unambiguous spellings are coerced (``"2"`` -> 2), defaults filled in; :class:`BadArgument`
    with a message for the model otherwise."""
    spec = TOOLS.get(name)
    if spec is None:
        raise BadArgument(f"unknown tool {excerpt(name, 60)!r}; available tools: {', '.join(TOOL_NAMES)}")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise BadArgument(f"arguments for {name} are not valid JSON: {exc}") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise BadArgument(f"arguments for {name} must be a JSON object")
    try:
        return spec.args.model_validate(args)
    except ValidationError as exc:
        raise BadArgument("; ".join(_messages(exc, name))) from None


def argument_names(spec: ToolSpec) -> list[str]:
    return list(spec.args.model_fields)
