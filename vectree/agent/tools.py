"""The seven progressive-disclosure tools, as plain functions over the artefact store.

Layers of growing size (tokens by :mod:`vectree.agent.tokens`, on the compact JSON returned):

* Layer 0 ``search_papers``: which papers, and which of their sections matched (~50 tokens each).
* Layer 1 ``get_document_tree`` (200-500 tokens a paper), ``get_section`` (one node),
  ``search_within_paper`` (best sections and pages of one paper with short snippets).
* Layer 2 ``get_page_content`` (full text of a page or a short range, capped),
  ``get_page_image`` (the rendered page as PNG, for figures and tables).
* ``submit_answer`` ends an episode; every citation is checked against its page.

Every tool is a method of :class:`Toolbox` returning a :class:`ToolResult`; :meth:`Toolbox.call`
validates arguments against the tool's JSON schema (the same schema the LLM sees, see
:func:`openai_tools`) and raises :class:`ToolError` with a message meant for the model.
Text from PDFs only ever travels inside tool results: it is data, never instructions.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from vectree.retrieval.passages import PassageCache, section_for_page
from vectree.retrieval.store import Store, StoreError, validate_doc_id

from .tokens import count_image_tokens, count_tokens

MAX_PAGES_PER_CALL = 3
MAX_PAGE_CHARS = 8000  # about 2,000 tokens a page
TREE_SUMMARY_WORDS = {1: 12}  # summary words per level in the tree view (get_section has them whole)
SNIPPET_WORDS = 45
MAX_K = 20


class ToolError(Exception):
    """A tool could not do what was asked; the message is returned to the model as the result."""


@dataclass
class ToolResult:
    name: str
    layer: int
    data: dict[str, Any]
    text: str = ""
    tokens: int = 0
    image_png: bytes | None = None

    def __post_init__(self) -> None:
        if not self.text:
            self.text = json.dumps(self.data, ensure_ascii=False, separators=(",", ":"))
        if not self.tokens:
            self.tokens = count_tokens(self.text)


# ---- schemas ---------------------------------------------------------------------------------
_DOC = {"type": "string", "description": "paper id from search_papers, e.g. 'attention-3f2a9c1b07'"}
TOOL_SPECS: dict[str, dict[str, Any]] = {
    "search_papers": {
        "layer": 0,
        "description": "Layer 0. Search the whole corpus; returns the best papers with the sections that "
        "matched and their page ranges. Start here unless the paper is already known.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "minLength": 1},
                           "k": {"type": "integer", "minimum": 1, "maximum": MAX_K, "default": 5}},
            "required": ["query"],
        },
    },
    "get_document_tree": {
        "layer": 1,
        "description": "Layer 1. A paper's verified section tree: titles, page ranges and short summaries. "
        "Read it before opening pages.",
        "parameters": {
            "type": "object",
            "properties": {"doc_id": _DOC, "max_depth": {"type": "integer", "minimum": 1, "maximum": 6, "default": 2}},
            "required": ["doc_id"],
        },
    },
    "get_section": {
        "layer": 1,
        "description": "Layer 1. One section of a paper: its full summary, its subsections and its pages.",
        "parameters": {
            "type": "object",
            "properties": {"doc_id": _DOC, "node_id": {"type": "string", "description": "node id from the tree, e.g. 'n4'"}},
            "required": ["doc_id", "node_id"],
        },
    },
    "search_within_paper": {
        "layer": 1,
        "description": "Layer 1. The passages of one paper that best match a query, with their section, page "
        "and a short snippet (not full text).",
        "parameters": {
            "type": "object",
            "properties": {"doc_id": _DOC, "query": {"type": "string", "minLength": 1},
                           "k": {"type": "integer", "minimum": 1, "maximum": MAX_K, "default": 5}},
            "required": ["doc_id", "query"],
        },
    },
    "get_page_content": {
        "layer": 2,
        "description": f"Layer 2. Full text of up to {MAX_PAGES_PER_CALL} pages of a paper (1-based page numbers). "
        "Open only the pages the tree or the within-paper search pointed to.",
        "parameters": {
            "type": "object",
            "properties": {"doc_id": _DOC, "pages": {"type": "array", "items": {"type": "integer", "minimum": 1},
                                                     "minItems": 1, "maxItems": MAX_PAGES_PER_CALL}},
            "required": ["doc_id", "pages"],
        },
    },
    "get_page_image": {
        "layer": 2,
        "description": "Layer 2. The page rendered as a PNG image, for figures and tables.",
        "parameters": {
            "type": "object",
            "properties": {"doc_id": _DOC, "page": {"type": "integer", "minimum": 1},
                           "dpi": {"type": "integer", "minimum": 30, "maximum": 200, "default": 100}},
            "required": ["doc_id", "page"],
        },
    },
    "submit_answer": {
        "layer": 2,
        "description": "End the episode with the answer and its page-level evidence. Each citation quotes a "
        "short exact passage from the cited page.",
        "parameters": {
            "type": "object",
            "properties": {
                "answer": {"type": "string"},
                "citations": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"doc_id": {"type": "string"}, "page": {"type": "integer", "minimum": 1},
                                   "quote": {"type": "string"}},
                    "required": ["doc_id", "page", "quote"],
                }},
            },
            "required": ["answer", "citations"],
        },
    },
}
TOOL_NAMES = tuple(TOOL_SPECS)
LAYER_OF = {name: spec["layer"] for name, spec in TOOL_SPECS.items()}


def openai_tools(names: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    """The tools as OpenAI chat-completions tool definitions."""
    return [{"type": "function", "function": {"name": n, "description": TOOL_SPECS[n]["description"],
                                              "parameters": TOOL_SPECS[n]["parameters"]}} for n in names]


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def validate_arguments(name: str, args: Any) -> dict[str, Any]:
    """Check ``args`` against the tool's schema (the subset the schemas use); fill defaults."""
    if name not in TOOL_SPECS:
        raise ToolError(f"unknown tool {name!r}; available tools: {', '.join(TOOL_NAMES)}")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolError(f"arguments for {name} are not valid JSON: {exc}") from None
    if not isinstance(args, dict):
        raise ToolError(f"arguments for {name} must be a JSON object")
    schema = TOOL_SPECS[name]["parameters"]
    props = schema["properties"]
    unknown = set(args) - set(props)
    if unknown:
        raise ToolError(f"{name} got unknown arguments: {', '.join(sorted(unknown))}")
    missing = [p for p in schema.get("required", []) if p not in args]
    if missing:
        raise ToolError(f"{name} is missing required arguments: {', '.join(missing)}")
    out = {}
    for key, spec in props.items():
        if key not in args:
            if "default" in spec:
                out[key] = spec["default"]
            continue
        value = args[key]
        _check_value(name, key, value, spec)
        out[key] = value
    return out


def _check_value(tool: str, key: str, value: Any, spec: dict[str, Any]) -> None:
    kind = spec.get("type")
    if kind and not _JSON_TYPES[kind](value):
        raise ToolError(f"{tool}: argument {key!r} must be of type {kind}, got {type(value).__name__}")
    if kind == "integer":
        if "minimum" in spec and value < spec["minimum"]:
            raise ToolError(f"{tool}: argument {key!r} must be at least {spec['minimum']}")
        if "maximum" in spec and value > spec["maximum"]:
            raise ToolError(f"{tool}: argument {key!r} must be at most {spec['maximum']}")
    if kind == "string" and len(value) < spec.get("minLength", 0):
        raise ToolError(f"{tool}: argument {key!r} must not be empty")
    if kind == "array":
        if len(value) < spec.get("minItems", 0):
            raise ToolError(f"{tool}: argument {key!r} needs at least {spec['minItems']} item(s)")
        if len(value) > spec.get("maxItems", 10**9):
            raise ToolError(f"{tool}: argument {key!r} takes at most {spec['maxItems']} items")
        for i, item in enumerate(value):
            _check_value(tool, f"{key}[{i}]", item, spec.get("items", {}))
    if kind == "object" and "properties" in spec:
        for req in spec.get("required", []):
            if req not in value:
                raise ToolError(f"{tool}: {key} is missing {req!r}")
        for k2, v2 in value.items():
            if k2 in spec["properties"]:
                _check_value(tool, f"{key}.{k2}", v2, spec["properties"][k2])


def _words(text: str, n: int) -> str:
    parts = (text or "").split()
    return " ".join(parts[:n]) + (" …" if len(parts) > n else "")


def _snippet(text: str, query: str, n: int = SNIPPET_WORDS) -> str:
    """About ``n`` words of ``text`` around the densest run of query words."""
    words = text.split()
    if len(words) <= n:
        return text
    q = {w.strip(".,;:()").lower() for w in query.split() if len(w) > 3}
    best, best_at = -1, 0
    for i in range(0, len(words) - n + 1, max(1, n // 4)):
        hits = sum(1 for w in words[i:i + n] if w.strip(".,;:()").lower() in q)
        if hits > best:
            best, best_at = hits, i
    prefix = "… " if best_at else ""
    suffix = " …" if best_at + n < len(words) else ""
    return prefix + " ".join(words[best_at:best_at + n]) + suffix


@dataclass
class _Cached:
    mtime: float
    value: Any


class Toolbox:
    """The tools over one store.  Thread-safe; keep one per process (it caches open indexes).

    ``within_paper`` chooses how ``search_within_paper`` ranks: ``"auto"`` uses SproutRAG nodes
    when a trained model and the paper's SproutRAG tree exist, else the paper's passages.
    """

    def __init__(self, store: Store | str | os.PathLike, *, within_paper: str = "auto"):
        self.store = store if isinstance(store, Store) else Store(store)
        self.within_paper = within_paper
        self._passages = PassageCache(self.store)
        self._cache: dict[tuple, _Cached] = {}
        self._lock = threading.Lock()
        self._search_index = None

    # ---- shared lookups -------------------------------------------------------------------
    def _cached(self, key: tuple, path, load: Callable[[], Any]) -> Any:
        try:
            mtime = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            mtime = -1
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit.mtime == mtime:
                return hit.value
        value = load()
        with self._lock:
            self._cache[key] = _Cached(mtime, value)
        return value

    def catalog(self) -> dict[str, dict[str, Any]]:
        return self._cached(("catalog",), self.store.catalog_path,
                            lambda: {r["doc_id"]: r for r in self.store.read_catalog()})

    def paper(self, doc_id: Any) -> dict[str, Any]:
        """The catalog row of ``doc_id``; :class:`ToolError` for a malformed or unknown id."""
        if not isinstance(doc_id, str):
            raise ToolError("doc_id must be a string")
        try:
            validate_doc_id(doc_id)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        row = self.catalog().get(doc_id)
        if row is None:
            raise ToolError(f"unknown doc_id {doc_id!r}; use search_papers to find paper ids")
        return row

    def tree(self, doc_id: str) -> list[dict[str, Any]]:
        from vectree.retrieval.trees.schema import read_tree

        self.paper(doc_id)
        try:
            return self._cached(("tree", doc_id), self.store.tree_path(doc_id), lambda: read_tree(self.store, doc_id))
        except StoreError:
            return []

    def page_texts(self, doc_id: str) -> list[str]:
        row = self.paper(doc_id)
        if row["status"] not in ("ok", "no_text"):
            raise ToolError(f"paper {doc_id} has no pages: {row['status']}: {row['error']}")
        return self._cached(("pages", doc_id), self.store.pages_path(doc_id),
                            lambda: self.store.read_page_texts(doc_id))

    def _check_pages(self, doc_id: str, pages: list[int]) -> list[str]:
        texts = self.page_texts(doc_id)
        for p in pages:
            if not 1 <= p <= len(texts):
                raise ToolError(f"page {p} is out of range: paper {doc_id} has pages 1-{len(texts)}")
        return texts

    def passages(self, doc_id: str):
        """The paper's stored passages (sentences with vectors); :class:`ToolError` when missing."""
        self.paper(doc_id)
        try:
            return self._passages.get(doc_id)
        except StoreError as exc:
            raise ToolError(f"paper {doc_id} has no passage index yet ({exc}); run vectree ingest") from None

    def search_index(self):
        from vectree.retrieval.search import SearchIndex

        with self._lock:
            if self._search_index is None:
                self._search_index = SearchIndex.open(self.store)
            return self._search_index

    # ---- Layer 0 --------------------------------------------------------------------------
    def search_papers(self, query: str, k: int = 5) -> ToolResult:
        from vectree.retrieval.search import IndexNotBuiltError

        try:
            hits = self.search_index().search(query, k=k)
        except IndexNotBuiltError as exc:
            raise ToolError(str(exc)) from None
        results = [{
            "doc_id": h["doc_id"], "title": _words(h["title"], 20), "score": round(h["score"], 4),
            "sections": [{"node_id": s["node_id"], "title": _words(s["title"], 10), "pages": list(s["pages"])}
                         for s in h["matched_sections"]],
        } for h in hits]
        return ToolResult("search_papers", 0, {"query": query, "results": results})

    # ---- Layer 1 --------------------------------------------------------------------------
    def get_document_tree(self, doc_id: str, max_depth: int = 2) -> ToolResult:
        row = self.paper(doc_id)
        nodes = self.tree(doc_id)
        shown = [n for n in nodes if n["verified"] and 0 < n["level"] <= max_depth]
        hidden = sum(1 for n in nodes if not n["verified"] and n["level"] > 0)
        data = {
            "doc_id": doc_id, "title": row["title"], "pages": row["n_pages"],
            "summary": _words(nodes[0]["summary"] if nodes else row["abstract"], 30),
            "sections": [self._tree_entry(n) for n in shown],
        }
        if hidden:
            data["unverified_sections_hidden"] = hidden
        if max_depth < max((n["level"] for n in nodes), default=0):
            data["deeper_levels"] = "use get_section or a larger max_depth"
        return ToolResult("get_document_tree", 1, data)

    @staticmethod
    def _tree_entry(n: dict[str, Any]) -> dict[str, Any]:
        entry = {"node_id": n["node_id"], "level": n["level"], "title": n["title"],
                 "pages": [n["page_start"], n["page_end"]]}
        words = TREE_SUMMARY_WORDS.get(n["level"], 0)
        if words and n["summary"]:
            entry["summary"] = _words(n["summary"], words)
        return entry

    def get_section(self, doc_id: str, node_id: str) -> ToolResult:
        nodes = self.tree(doc_id)
        node = next((n for n in nodes if n["node_id"] == node_id), None)
        if node is None or (not node["verified"] and node["level"] > 0):
            raise ToolError(f"unknown node_id {node_id!r} in paper {doc_id}; use get_document_tree")
        children = [n for n in nodes if n["parent_id"] == node_id and n["verified"]]
        parent = next((n for n in nodes if n["node_id"] == node["parent_id"]), None)
        data = {
            "doc_id": doc_id, "node_id": node_id, "title": node["title"], "level": node["level"],
            "pages": [node["page_start"], node["page_end"]], "summary": node["summary"],
            "parent": {"node_id": parent["node_id"], "title": parent["title"]} if parent else None,
            "children": [{"node_id": c["node_id"], "title": c["title"], "pages": [c["page_start"], c["page_end"]]}
                         for c in children],
        }
        return ToolResult("get_section", 1, data)

    def search_within_paper(self, doc_id: str, query: str, k: int = 5) -> ToolResult:
        self.paper(doc_id)
        sections = self.tree(doc_id)
        titles = {n["node_id"]: n["title"] for n in sections}
        results = None
        if self.within_paper in ("auto", "sprout"):
            results = self._sprout_within(doc_id, query, k, titles, sections)
        method = "sprout" if results is not None else "passages"
        if results is None:
            results = self._passages_within(doc_id, query, k, titles)
        return ToolResult("search_within_paper", 1, {"doc_id": doc_id, "query": query, "method": method,
                                                     "results": results})

    def _passages_within(self, doc_id, query, k, titles):
        from vectree.retrieval.embed import get_embedder

        passages = self.passages(doc_id)
        hits = passages.rank(query, get_embedder().encode_query(query), k)
        return [{"page": h.page_no, "node_id": h.node_id, "section": titles.get(h.node_id),
                 "score": h.score, "snippet": _snippet(h.text, query)} for h in hits]

    def _sprout_within(self, doc_id, query, k, titles, sections):
        """SproutRAG nodes fused with the paper's passages (retrieval.passages.fuse_with_sprout):
        passages, ranked by BM25, cosine and the nodes that hold them; None when SproutRAG cannot
        answer here (no model, switched off, no tree), so the caller uses plain passages."""
        try:
            from vectree.retrieval.passages import fuse_with_sprout
            from vectree.retrieval.sprout.papers import retrieve_in_paper
        except ImportError:
            return None
        try:
            nodes = retrieve_in_paper(self.store, doc_id, query, k)
        except Exception:  # no model or no tree for this paper: fall back to passages
            if self.within_paper == "sprout":
                raise
            return None
        if not nodes:
            return None
        from vectree.retrieval.embed import get_embedder

        fused = fuse_with_sprout(self.passages(doc_id), query, get_embedder().encode_query(query), nodes, k)
        return [{"pages": [h.page_no], "page": h.page_no, "node_id": h.node_id, "section": titles.get(h.node_id),
                 "score": h.score, "snippet": _snippet(h.text, query), "sprout_node": node}
                for h, node in fused]

    # ---- Layer 2 --------------------------------------------------------------------------
    def get_page_content(self, doc_id: str, pages: list[int]) -> ToolResult:
        pages = sorted(dict.fromkeys(pages))
        if len(pages) > MAX_PAGES_PER_CALL:
            raise ToolError(f"at most {MAX_PAGES_PER_CALL} pages per call")
        texts = self._check_pages(doc_id, pages)
        out = []
        for p in pages:
            text = texts[p - 1]
            entry = {"page": p, "text": text[:MAX_PAGE_CHARS]}
            if len(text) > MAX_PAGE_CHARS:
                entry["truncated_chars"] = len(text) - MAX_PAGE_CHARS
            out.append(entry)
        return ToolResult("get_page_content", 2, {"doc_id": doc_id, "pages": out})

    def render_page_png(self, doc_id: str, page: int, dpi: int = 100) -> tuple[bytes, int, int]:
        """The page rendered from the store's copy of the PDF: ``(png, width, height)``."""
        import pymupdf

        self._check_pages(doc_id, [page])
        path = self.store.pdf_path(doc_id)
        if not path.exists():
            raise ToolError(f"paper {doc_id} has no stored PDF to render")
        with pymupdf.open(path) as pdf:
            pix = pdf[page - 1].get_pixmap(dpi=dpi)
            return pix.tobytes("png"), pix.width, pix.height

    def get_page_image(self, doc_id: str, page: int, dpi: int = 100) -> ToolResult:
        png, w, h = self.render_page_png(doc_id, page, dpi)
        data = {"doc_id": doc_id, "page": page, "width": w, "height": h, "format": "png",
                "note": "the image is attached for vision-capable models"}
        result = ToolResult("get_page_image", 2, data, image_png=png)
        result.tokens = count_tokens(result.text) + count_image_tokens(w, h)
        return result

    def submit_answer(self, answer: str, citations: list[dict[str, Any]]) -> ToolResult:
        checked = [self.check_citation(c) for c in citations]
        return ToolResult("submit_answer", 2, {"answer": answer, "citations": checked})

    def check_citation(self, citation: dict[str, Any]) -> dict[str, Any]:
        """``citation`` with ``valid`` and, when invalid, ``reason``: the quote must occur on the
        cited page (normalised text: case, whitespace, hyphenation, ligatures, punctuation)."""
        from vectree.retrieval.trees.normalize import MatchText

        out = {"doc_id": citation.get("doc_id"), "page": citation.get("page"), "quote": citation.get("quote", "")}
        try:
            texts = self._check_pages(out["doc_id"], [out["page"]])
        except ToolError as exc:
            return {**out, "valid": False, "reason": str(exc)}
        quote = (out["quote"] or "").strip()
        if len(MatchText.of(quote).joined) < 3:
            return {**out, "valid": False, "reason": "empty quote"}
        if MatchText.of(texts[out["page"] - 1]).contains(quote):
            return {**out, "valid": True}
        return {**out, "valid": False, "reason": f"quote not found on page {out['page']}"}

    # ---- dispatch -------------------------------------------------------------------------
    def call(self, name: str, arguments: Any) -> ToolResult:
        """Validate and run one tool; :class:`ToolError` carries a message for the model."""
        args = validate_arguments(name, arguments)
        return getattr(self, name)(**args)


@dataclass
class TraceStep:
    tool: str
    arguments: dict[str, Any]
    layer: int
    tokens: int
    ms: float
    error: str | None = None


@dataclass
class Trace:
    """Every tool call of an episode with its layer, returned tokens and time."""

    steps: list[TraceStep] = field(default_factory=list)

    def record(self, toolbox: Toolbox, name: str, arguments: Any) -> ToolResult | None:
        """Run a tool through ``toolbox`` and record it; errors are recorded and returned as None."""
        started = time.perf_counter()
        try:
            result = toolbox.call(name, arguments)
        except ToolError as exc:
            self.steps.append(TraceStep(name, _as_dict(arguments), LAYER_OF.get(name, -1), 0,
                                        (time.perf_counter() - started) * 1000, str(exc)))
            return None
        self.steps.append(TraceStep(name, _as_dict(arguments), result.layer, result.tokens,
                                    (time.perf_counter() - started) * 1000))
        return result

    def tokens_by_layer(self) -> dict[str, int]:
        out = {"layer0": 0, "layer1": 0, "layer2": 0}
        for s in self.steps:
            if s.layer in (0, 1, 2) and s.tool != "submit_answer":
                out[f"layer{s.layer}"] += s.tokens
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"steps": [s.__dict__ for s in self.steps], "tokens": self.tokens_by_layer(),
                "ms": round(sum(s.ms for s in self.steps), 1)}


def _as_dict(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments)
        return value if isinstance(value, dict) else {"raw": arguments}
    except (TypeError, ValueError):
        return {"raw": arguments}


def png_data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()
