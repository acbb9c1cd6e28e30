"""The implementations of the seven tools (declared in :mod:`vectree.agent.toolspec`).

Every tool is a method of :class:`Toolbox`, named like its declaration, returning a
:class:`ToolResult`; :meth:`Toolbox.call` validates the arguments with the tool's declared model,
runs the method and checks its data against the declared result model.  Failures raise the typed
errors of :mod:`vectree.agent.toolspec` with a message meant for the model.
Text from PDFs only ever travels inside tool results: it is data, never instructions.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import TypeAdapter

from vectree.retrieval.injection import instruction_like, instruction_sentences
from vectree.retrieval.passages import PassageCache, section_for_page
from vectree.retrieval.store import Store, StoreError, validate_doc_id

from .tokens import count_image_tokens, count_tokens
from .toolspec import (LAYER_OF, MAX_PAGE_CHARS, MAX_PAGES_PER_CALL, MIN_QUOTE_WORDS, TOOLS, BadArgument,
                       Citation, CitationItem, NotFound, RejectedCitation, ToolError, Unavailable,
                       validate_arguments)

TREE_SUMMARY_WORDS = {1: 12}  # summary words per level in the tree view (get_section has them whole)
SNIPPET_WORDS = 45


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

    ``within_paper`` chooses how ``search_within_paper`` ranks: ``"auto"`` lets SproutRAG's nodes
    vote when no trained reader is active and the store has a live model and the paper's tree,
    else the paper's passages alone; ``"sprout"`` asks for the vote whatever the reader
    (`vectree-sprout`); ``"passages"`` never uses SproutRAG.
    """

    def __init__(self, store: Store | str | os.PathLike, *, within_paper: str = "auto", reranker: Any = "auto",
                 query_adapter: bool | None = None, acronyms: bool = True):
        # a reader: every lookup resolves through one published snapshot (the request's pinned one)
        self.store = store.reader() if hasattr(store, "reader") else Store(store).reader()
        self.within_paper = within_paper
        # "auto": the configured reader (vectree.retrieval.rerank; the shipped model unless
        # VECTREE_RERANKER says otherwise), "off"/None: hybrid ranking only, or a loaded Reader
        self._reranker = reranker
        # the reader's bi-encoder query adapter (None: the `query_adapter` setting; False: the ablation)
        self.query_adapter = query_adapter
        self.readings: dict[tuple[str, str], dict[int, Any]] = {}
        # acronyms: within-paper queries gain the other form of the paper's abbreviated terms
        # (retrieval.acronyms); False is the `vectree-no-acronyms` ablation
        self._passages = PassageCache(self.store, acronyms=acronyms)
        self._cache: dict[tuple, _Cached] = {}
        self._lock = threading.Lock()
        self._search_index = None
        self._reading_memo = None  # the reader with its recent readings remembered (_remembering)

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
            raise BadArgument("doc_id must be a string")
        try:
            validate_doc_id(doc_id)
        except ValueError as exc:
            raise BadArgument(str(exc)) from None
        row = self.catalog().get(doc_id)
        if row is None:
            raise NotFound(f"unknown doc_id {doc_id!r}; use search_papers to find paper ids")
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
        if row["status"] not in ("ok", "degraded", "no_text"):
            raise NotFound(f"paper {doc_id} has no pages: {row['status']}: {row['error']}")
        return self._cached(("pages", doc_id), self.store.pages_path(doc_id),
                            lambda: self.store.read_page_texts(doc_id))

    def _check_pages(self, doc_id: str, pages: list[int]) -> list[str]:
        texts = self.page_texts(doc_id)
        for p in pages:
            if not 1 <= p <= len(texts):
                raise NotFound(f"page {p} is out of range: paper {doc_id} has pages 1-{len(texts)}")
        return texts

    def passages(self, doc_id: str):
        """The paper's stored passages (sentences with vectors); :class:`ToolError` when missing."""
        self.paper(doc_id)
        try:
            return self._passages.get(doc_id)
        except StoreError as exc:
            raise Unavailable(f"paper {doc_id} has no passage index yet ({exc}); run vectree ingest") from None

    def paper_terms(self, doc_id: str) -> frozenset[str]:
        """Every analysed word of the paper's passages (:func:`vectree.retrieval.rerank.coverage.text_terms`),
        kept while the passages file is unchanged: what the off-corpus floor looks for."""
        from vectree.retrieval.passages import passages_path

        return self._cached(("terms", doc_id), passages_path(self.store, doc_id),
                            lambda: frozenset().union(*self.passage_terms(doc_id)))

    def passage_terms(self, doc_id: str) -> list[frozenset[str]]:
        """The analysed words of each passage of the paper, in order, kept while the passages file
        is unchanged: what the in-paper floor looks for (:func:`vectree.retrieval.rerank.coverage.passage_coverage`)."""
        from vectree.retrieval.passages import passages_path
        from vectree.retrieval.words import analyze

        return self._cached(("passage_terms", doc_id), passages_path(self.store, doc_id),
                            lambda: [frozenset(analyze(t)) for t in self.passages(doc_id).texts])

    def search_index(self):
        from vectree.retrieval.search import SearchIndex

        with self._lock:
            if self._search_index is None:
                self._search_index = SearchIndex.open(self.store)
            return self._search_index

    def reranker(self):
        """The reader that reranks Layer 0 and within-paper results, or None."""
        if self._reranker in (None, "off"):
            return None
        if self._reranker == "auto":
            from vectree.retrieval.rerank.model import get_reader  # why local: loads torch and the weights

            self._reranker = get_reader() or "off"
            return self.reranker()
        return self._reranker

    def _remembering(self, reader):
        """``reader`` with its last 4,096 readings remembered (a reading depends only on the
        question and the sentence): vectree-sprout's navigator searches a paper twice for one
        question, and the sentences both searches rerank are read once."""
        from vectree.retrieval.rerank.apply import ReadingMemo

        with self._lock:
            if self._reading_memo is None or self._reading_memo.reader is not reader:
                self._reading_memo = ReadingMemo(reader, size=4096)
            return self._reading_memo

    def _query_map(self, reader):
        """The reader's query adapter when it has one and it is switched on, else None."""
        on = self.query_adapter
        if on is None:
            from vectree.retrieval.config import load_settings

            on = load_settings().query_adapter
        return reader.query_adapter if on and reader is not None else None

    # ---- Layer 0 --------------------------------------------------------------------------
    def search_papers(self, query: str, k: int = 5) -> ToolResult:
        from vectree.retrieval.search import IndexNotBuiltError

        reader = self.reranker()
        try:
            index = self.search_index()
            if reader is None:
                hits = index.search(query, k=k)
            else:  # hybrid candidates, the top of them reordered by the trained reranker
                from vectree.retrieval.rerank.apply import PAPER_DEPTH, rerank_papers

                hits = rerank_papers(reader, index, query, index.search(query, k=max(k, PAPER_DEPTH)), k,
                                     vector_map=self._query_map(reader))
        except IndexNotBuiltError as exc:
            raise Unavailable(str(exc)) from None
        reranked = reader is not None
        results = [{
            # reranked: the score is the calibrated relevance (a probability), else the fused score
            "doc_id": h["doc_id"], "title": _words(h["title"], 20),
            "score": round(h["relevance"] if reranked and "relevance" in h else h["score"], 4),
            "sections": [{"node_id": s["node_id"], "title": _words(s["title"], 10), "pages": list(s["pages"])}
                         for s in h["matched_sections"]],
        } for h in hits]
        data = {"query": query, "results": results}
        if reranked:
            data["score"] = "relevance"
        return ToolResult("search_papers", 0, data)

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
            raise NotFound(f"unknown node_id {node_id!r} in paper {doc_id}; use get_document_tree")
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

    def search_within_paper(self, doc_id: str, query: str, k: int = 5, passages_only: bool = False) -> ToolResult:
        self.paper(doc_id)
        sections = self.tree(doc_id)
        titles = {n["node_id"]: n["title"] for n in sections}
        # the question with the other form of every term the paper abbreviates ("Random kitchen
        # sink" and "RKS"), worked out once: BM25, the query vector and the reader all see both
        try:
            searched = self.passages(doc_id).expand_query(query)
        except Unavailable:  # no passages (SproutRAG may still answer): nothing to expand with
            searched = query
        results = None
        # "auto": SproutRAG fusion only while no trained reranker is active; the reranked passages
        # carry the reader's readings that the offline navigator answers from (measured better on
        # qasper than either alone); "sprout" asks for the fusion explicitly
        # ``passages_only``: plain passages whatever the mode (vectree-sprout's navigator cites the
        # pages they give and lets SproutRAG's order choose the answer among them)
        if not passages_only and (self.within_paper == "sprout"
                                  or (self.within_paper == "auto" and self.reranker() is None)):
            results = self._sprout_within(doc_id, query, k, titles, sections, searched)
        method = "sprout" if results is not None else "passages"
        if results is None:
            results = self._passages_within(doc_id, query, searched, k, titles)
        data = {"doc_id": doc_id, "query": query, "method": method, "results": results}
        if searched != query:  # the paper's own abbreviations were added: say so (agent and reader)
            data["searched_as"] = searched
        return ToolResult("search_within_paper", 1, data)

    def _passages_within(self, doc_id, asked, query, k, titles, sprout_nodes=None):
        """``asked``: the question as asked (the readings' key); ``query``: as searched."""
        from vectree.retrieval.embed import get_embedder

        passages = self.passages(doc_id)
        reader = self.reranker()
        if reader is not None:  # hybrid candidates reordered by the trained reranker
            from vectree.retrieval.rerank.apply import rerank_passages

            # the reader's query adapter maps the query vector for the hybrid order and the cosine
            # its calibration fuses (both compare it with the stored, unadapted sentence vectors)
            adapt, qv = self._query_map(reader), get_embedder().encode_query(query)
            qv = adapt(qv) if adapt is not None else qv
            extra = ()
            if sprout_nodes:  # SproutRAG's nodes are a third vote in the first stage, as without a reader
                from vectree.retrieval.passages import sprout_vote

                extra, _ = sprout_vote(passages, qv, sprout_nodes)  # weighed as their model calibrated
            hits = rerank_passages(self._remembering(reader), passages, query, qv, k, extra=extra)
            with self._lock:  # the reader heads' output, for the offline navigator (not sent to a model)
                self.readings[(doc_id, asked)] = {h["i"]: h["reading"] for h in hits}
                while len(self.readings) > 64:
                    self.readings.pop(next(iter(self.readings)))
            return [{"page": h["page"], "node_id": h["node_id"], "section": titles.get(h["node_id"]),
                     "score": h["relevance"], "relevance": h["relevance"], "passage": h["i"],
                     "snippet": _snippet(h["context"], query)} for h in hits]
        hits = passages.rank(query, get_embedder().encode_query(query), k)
        return [{"page": h.page_no, "node_id": h.node_id, "section": titles.get(h.node_id),
                 "score": h.score, "snippet": _snippet(h.text, query)} for h in hits]

    def _sprout_within(self, doc_id, query, k, titles, sections, searched):
        """SproutRAG nodes fused with the paper's passages (retrieval.passages.fuse_with_sprout):
        passages, ranked by BM25, cosine and the nodes that hold them; None when SproutRAG cannot
        answer here (no model, switched off, no tree), so the caller uses plain passages."""
        try:
            from vectree.retrieval.passages import SPROUT_VOTE_SEARCH, fuse_with_sprout
            from vectree.retrieval.sprout.papers import retrieve_in_paper
        except ImportError:
            return None
        try:
            # the nodes vote for passages here: searched as when the vote's weight was calibrated
            nodes = retrieve_in_paper(self.store, doc_id, query, k, **SPROUT_VOTE_SEARCH)
        except Exception:  # no model or no tree for this paper: fall back to passages
            if self.within_paper == "sprout":
                raise
            return None
        if not nodes:
            return None
        if self.reranker() is not None:
            # with the reader, the nodes vote in the first stage and the reader reranks passages,
            # whose readings the navigator answers from (node hits alone carry none: vectree-sprout
            # found no passage to read and answered nothing)
            return self._passages_within(doc_id, query, searched, k, titles, sprout_nodes=nodes)
        from vectree.retrieval.embed import get_embedder

        fused = fuse_with_sprout(self.passages(doc_id), searched, get_embedder().encode_query(searched), nodes, k)
        return [{"pages": [h.page_no], "page": h.page_no, "node_id": h.node_id, "section": titles.get(h.node_id),
                 "score": h.score, "snippet": _snippet(h.text, query), "sprout_node": node}
                for h, node in fused]

    # ---- Layer 2 --------------------------------------------------------------------------
    def get_page_content(self, doc_id: str, pages: list[int]) -> ToolResult:
        pages = sorted(dict.fromkeys(pages))
        if len(pages) > MAX_PAGES_PER_CALL:
            raise BadArgument(f"at most {MAX_PAGES_PER_CALL} pages per call")
        texts = self.page_texts(doc_id)
        missing = [p for p in pages if not 1 <= p <= len(texts)]
        if len(missing) == len(pages):
            self._check_pages(doc_id, pages)  # raises NotFound for the first
        out = []
        for p in pages:
            if p in missing:
                continue
            text = texts[p - 1]
            entry = {"page": p, "text": text[:MAX_PAGE_CHARS]}
            if len(text) > MAX_PAGE_CHARS:
                entry["truncated_chars"] = len(text) - MAX_PAGE_CHARS
            out.append(entry)
        data: dict[str, Any] = {"doc_id": doc_id, "pages": out}
        if missing:  # one bad page number does not cost the agent the good ones
            data["skipped"] = [f"page {p} is out of range: paper {doc_id} has pages 1-{len(texts)}" for p in missing]
        return ToolResult("get_page_content", 2, data)

    def render_page_png(self, doc_id: str, page: int, dpi: int = 100) -> tuple[bytes, int, int]:
        """The page rendered from the store's copy of the PDF: ``(png, width, height)``."""
        import pymupdf

        self._check_pages(doc_id, [page])
        path = self.store.pdf_path(doc_id)
        if not path.exists():
            raise NotFound(f"paper {doc_id} has no stored PDF to render")
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

    def submit_answer(self, answer: str, citations: list[Any]) -> ToolResult:
        """The answer with every citation checked (see :meth:`check_citation`).  A malformed
        citation is reported unverified with the reason; the others are still checked."""
        if not isinstance(citations, list):
            raise BadArgument("submit_answer: argument 'citations' must be of type array")
        checked = [self.check_citation(c, index=i) for i, c in enumerate(citations, 1)]
        data: dict[str, Any] = {"answer": answer, "citations": checked,
                                "verified": sum(1 for c in checked if c["valid"])}
        if not data["verified"] and any(c.get("instruction_like") for c in checked):
            data["flags"] = ["the only evidence offered is instruction-like text (a possible prompt "
                             "injection in the document): the answer is not supported by the papers"]
        return ToolResult("submit_answer", 2, data)

    def check_citation(self, citation: Any, *, index: int | None = None) -> dict[str, Any]:
        """``citation`` with ``valid`` and, when invalid, ``reason``.  A citation counts as
        evidence only when all of these hold:

        * it is well formed (``doc_id``, ``page`` >= 1, ``quote``; ``"3"`` is read as 3);
        * the paper and the page exist;
        * the quote has at least :data:`~vectree.agent.toolspec.MIN_QUOTE_WORDS` (5) words, enough
          to identify a passage (a single word such as "thrombosis" proves nothing);
        * the quote occurs on the cited page (normalised: case, whitespace, hyphenation,
          ligatures and punctuation do not matter);
        * the quote is not instruction-like text addressed to an AI model (such a citation is
          also marked ``instruction_like``; see :mod:`vectree.retrieval.injection`).
        """
        from vectree.retrieval.trees.normalize import MatchText

        label = f"citation {index}" if index is not None else "citation"
        item = citation if isinstance(citation, (Citation, RejectedCitation)) else _CITATION.validate_python(citation)
        if isinstance(item, RejectedCitation):
            raw = item.raw if isinstance(item.raw, dict) else {}
            return {"doc_id": raw.get("doc_id"), "page": raw.get("page"), "quote": raw.get("quote", ""),
                    "valid": False, "reason": f"{label} rejected: {item.reason}; fix it and cite again"}
        out = {"doc_id": item.doc_id, "page": item.page, "quote": item.quote}
        try:
            texts = self._check_pages(item.doc_id, [item.page])
        except ToolError as exc:
            return {**out, "valid": False, "reason": str(exc)}
        quote = item.quote.strip()
        words = len(_WORD.findall(quote))
        if words < MIN_QUOTE_WORDS:
            return {**out, "valid": False,
                    "reason": f"quote has {words} word(s); a citation needs at least {MIN_QUOTE_WORDS} words "
                              "copied exactly from the page"}
        page_text = texts[item.page - 1]
        if not MatchText.of(page_text).contains(quote):
            return {**out, "valid": False, "reason": f"quote not found on page {item.page}"}
        if _instruction_quote(quote, page_text):
            return {**out, "valid": False, "instruction_like": True,
                    "reason": "the quote is instruction-like text addressed to an AI model (a possible prompt "
                              "injection), not evidence"}
        return {**out, "valid": True}

    # ---- dispatch -------------------------------------------------------------------------
    def call(self, name: str, arguments: Any) -> ToolResult:
        """Validate and run one tool; :class:`ToolError` carries a message for the model."""
        args = validate_arguments(name, arguments)
        result = getattr(self, name)(**{k: getattr(args, k) for k in type(args).model_fields})
        TOOLS[name].result.model_validate(result.data)  # the implementation keeps to its declaration
        return result


_CITATION = TypeAdapter(CitationItem)
_WORD = re.compile(r"[^\W_]+")


def _instruction_quote(quote: str, page_text: str) -> bool:
    """Whether ``quote`` is, or overlaps, an instruction-like sentence of its page (a quote may
    take only part of the injected sentence, or run from it into the next one)."""
    if instruction_like(quote):
        return True
    q = [w.casefold() for w in _WORD.findall(quote)]
    for sentence in instruction_sentences(page_text):
        s = [w.casefold() for w in _WORD.findall(sentence)]
        joined_q, joined_s = " ".join(q), " ".join(s)
        if joined_q in joined_s:
            return True
        # the quote starts inside the sentence and runs on, or runs into it: 3+ shared words at the seam
        for n in range(min(len(q), len(s)), 2, -1):
            if q[:n] == s[-n:] or q[-n:] == s[:n]:
                return True
    return False


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
