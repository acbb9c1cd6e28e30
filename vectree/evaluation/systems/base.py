"""One interface for every evaluated system, and the shared pieces retrieval baselines are made of.

A :class:`System` is prepared once per benchmark (:meth:`System.prepare`: index the corpus) and
then asked one question at a time through the method of the benchmark's task:

* ``paper_qa`` -> :meth:`System.answer_paper` -> :class:`PaperAnswer` (answer text, cited
  pages, tokens by layer);
* ``routing`` -> :meth:`System.rank_documents` -> :class:`Ranking` (document ids, best first);
* ``sentences`` -> :meth:`System.retrieve_units` -> ranked :class:`Hit` objects (character spans
  in one document each, which the sentence scorer counts);
* ``synthesis`` -> :meth:`System.synthesize` -> :class:`SynthAnswer` (answer text, cited papers).

Most baselines are *retrievers*: subclasses of :class:`RetrieverSystem` implement only
``index(docs)`` and ``search(query, k, scope)`` over :class:`Doc` objects, and the base class
turns those into every task with one rule per task (so the baselines differ only in retrieval):

* paper QA: the top ``k`` units within the question's paper; the pages of the retrieved units are
  the cited pages; the answer is the retrieved sentence most similar to the question (MiniLM
  cosine), an extractive answer any reader of those units could give;
* routing: the retrieved units rolled up to documents in rank order (first appearance);
* sentences: the top ``k`` units as they are;
* synthesis: units rolled up to the first ``k_papers`` distinct papers; the answer is the most
  question-similar sentences of those units, best first, up to ``answer_words`` words.

Token counting is one rule for every system (:func:`vectree.agent.tokens.count_tokens`); a unit's tokens
count in layer 2 (full text) unless the unit is a summary (layer 1, e.g. a RAPTOR node).
"""

from __future__ import annotations

import bisect
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Sequence

import numpy as np

from vectree.agent.tokens import count_tokens as rule

from ..embedcache import cached_embedder
from ..sentences import covered_sentences, split_sentences

Span = tuple[int, int]


def count_tokens(text: str) -> int:
    """The project's one token-counting rule (``vectree.agent.tokens.count_tokens``)."""
    return rule(text)


# ---- data handed to systems -----------------------------------------------------------------
@dataclass(frozen=True)
class Doc:
    """A document of a corpus: ``page_starts[i]`` is the offset where page ``i + 1`` begins
    (``None`` for documents without pages)."""

    doc_id: str
    text: str
    title: str = ""
    page_starts: tuple[int, ...] | None = None

    def pages_of(self, spans: Sequence[Span]) -> tuple[int, ...]:
        if self.page_starts is None:
            return ()
        pages: set[int] = set()
        for a, b in spans:
            if b <= a:
                continue
            first = bisect.bisect_right(self.page_starts, a)
            last = bisect.bisect_right(self.page_starts, b - 1)
            pages.update(range(max(first, 1), max(last, 1) + 1))
        return tuple(sorted(pages))


_LINE_WRAP = re.compile(r"(?<!\n)\n(?!\n)")


def join_pages(page_texts: Sequence[str]) -> tuple[str, tuple[int, ...]]:
    """Page texts joined by blank lines, with each page's start offset.  Single line breaks
    (PDF line wraps) become spaces -- same length, so offsets stay exact -- and blank lines
    (block breaks) stay, so sentence splitting sees whole paragraphs."""
    parts, starts, pos = [], [], 0
    for i, t in enumerate(page_texts):
        t = _LINE_WRAP.sub(" ", t or "")
        if i:
            parts.append("\n\n")
            pos += 2
        starts.append(pos)
        parts.append(t or "")
        pos += len(t or "")
    return "".join(parts), tuple(starts)


@dataclass(frozen=True)
class Hit:
    """One retrieved unit: character spans in one document, its text as returned, its score,
    the pages it lies on, and its layer (1: a summary, 2: full text)."""

    doc_id: str
    spans: tuple[Span, ...]
    text: str
    score: float
    pages: tuple[int, ...] = ()
    layer: int = 2
    unit_id: str = ""


@dataclass
class PaperAnswer:
    answer: str
    pages: tuple[int, ...]
    tokens: dict[int, int] = field(default_factory=dict)  # layer -> tokens returned
    trace: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Ranking:
    doc_ids: list[str]
    tokens: dict[int, int] = field(default_factory=dict)


@dataclass
class SynthAnswer:
    answer: str
    doc_ids: list[str]
    tokens: dict[int, int] = field(default_factory=dict)


@dataclass
class RunContext:
    """What a run hands every system: the seed, the cutoffs, the shared embedder (cached on
    disk), a work directory for indexes and stores, and the benchmark's data folder."""

    seed: int = 0
    work_dir: Path = Path(".")
    data_dir: Path | None = None
    k_paper: int = 5
    k_routing: int = 100
    k_sentences: int = 5
    k_papers: int = 5
    answer_words: int = 250
    _embedder: Any = None
    docs: Sequence[Doc] = ()
    _reader: Any = None

    @property
    def reader(self) -> "SentenceReader":
        """The shared extractive reader over the run's corpus (built on first use)."""
        if self._reader is None:
            self._reader = SentenceReader(self.docs, self.embedder)
        return self._reader

    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = cached_embedder()
        return self._embedder


class NotAvailable(RuntimeError):
    """A system cannot run here (missing model, module not built yet); the message says why."""


def tokens_of(hits: Sequence[Hit]) -> dict[int, int]:
    out: dict[int, int] = {}
    for h in hits:
        out[h.layer] = out.get(h.layer, 0) + count_tokens(h.text)
    return out


# ---- systems ------------------------------------------------------------------------------
class System:
    """Base of every system.  ``tasks`` lists the task kinds it answers; ``unavailable()``
    returns why it cannot run here (``None`` when it can)."""

    name = "system"
    description = ""
    tasks: tuple[str, ...] = ()

    def unavailable(self) -> str | None:
        return None

    def config(self) -> dict[str, Any]:
        return {"description": self.description}

    def notes(self) -> list[str]:
        """Lines for the report under the benchmark's table (what a reader needs to reproduce the
        row, e.g. which trained model produced it); identical lines of several systems show once."""
        return []

    def prepare(self, benchmark, ctx: RunContext, docs: Sequence[Doc]) -> None:
        """Index the corpus.  ``docs`` is the benchmark's corpus as :class:`Doc` objects."""

    def answer_paper(self, question, doc: Doc) -> PaperAnswer:
        raise NotImplementedError

    def answer_corpus(self, question) -> PaperAnswer:
        """A question asked of the whole corpus: ``pages`` are ``(paper id, page)`` pairs."""
        raise NotAvailable(f"{self.name} answers questions of one paper only, not of a whole corpus")

    def rank_documents(self, question) -> Ranking:
        raise NotImplementedError

    def retrieve_units(self, query, scope: Collection[str]) -> list[Hit]:
        raise NotImplementedError

    def synthesize(self, question) -> SynthAnswer:
        raise NotImplementedError

    def close(self) -> None:
        """Release what :meth:`prepare` opened."""


_QUESTION_WORD = re.compile(r"\w+")


class RetrieverSystem(System):
    """A system made of ``index`` + ``search``; every task follows from them (module doc)."""

    tasks = ("paper_qa", "routing", "sentences", "synthesis")

    def index(self, docs: Sequence[Doc]) -> None:
        raise NotImplementedError

    def search(self, query: str, k: int, scope: Collection[str] | None = None) -> list[Hit]:
        raise NotImplementedError

    # ---- the task rules ---------------------------------------------------------------
    def prepare(self, benchmark, ctx: RunContext, docs: Sequence[Doc]) -> None:
        self.ctx = ctx
        self.docs = {d.doc_id: d for d in docs}
        self.index(docs)
        if getattr(benchmark, "task", "") == "paper_qa":  # split the papers asked about at index time
            ctx.reader.warm([q.paper_id for q in benchmark.questions])

    def answer_paper(self, question, doc: Doc) -> PaperAnswer:
        return self._answer(question, [doc.doc_id])

    def answer_corpus(self, question) -> PaperAnswer:
        return self._answer(question, None)

    def _answer(self, question, scope: list[str] | None) -> PaperAnswer:
        """The top ``k_paper`` units of ``scope`` (one paper: its pages; the corpus, ``None``:
        (paper, page) pairs) and the shared reader's answer from them."""
        hits = self.search(question.question, self.ctx.k_paper, scope=scope)
        pages = sorted({p if scope else (h.doc_id, p) for h in hits for p in h.pages})
        answer = self.ctx.reader.answer(question.question, [(h.doc_id, h.spans) for h in hits])
        return PaperAnswer(answer, tuple(pages), tokens_of(hits), extra={"units": [h.unit_id for h in hits]})

    def rank_documents(self, question) -> Ranking:
        hits = self.search(question.question, self.ctx.k_routing)
        ranking = list(dict.fromkeys(h.doc_id for h in hits))
        # tokens: what a reader gets for the top 10 documents (their best unit each)
        first: dict[str, Hit] = {}
        for h in hits:
            first.setdefault(h.doc_id, h)
        return Ranking(ranking, tokens_of([first[d] for d in ranking[:10]]))

    def retrieve_units(self, query, scope: Collection[str]) -> list[Hit]:
        return self.search(query.text, self.ctx.k_sentences, scope=scope)

    def synthesize(self, question) -> SynthAnswer:
        hits = self.search(question.question, max(50, 10 * self.ctx.k_papers))
        papers = list(dict.fromkeys(h.doc_id for h in hits))[: self.ctx.k_papers]
        used = [h for h in hits if h.doc_id in set(papers)][: 2 * self.ctx.k_papers]
        answer = self.ctx.reader.answer(question.question, [(h.doc_id, h.spans) for h in used],
                                        max_words=self.ctx.answer_words)
        return SynthAnswer(answer, papers, tokens_of(used))


# ---- shared pieces ------------------------------------------------------------------------
def fixed_token_chunks(text: str, tokenizer, size: int) -> list[Span]:
    """``text`` cut into windows of ``size`` word pieces of ``tokenizer`` (no overlap); each
    window's span runs from its first piece's start to its last piece's end."""
    if size < 1:
        raise ValueError(f"chunk size must be at least 1 token, got {size}")
    if not text.strip():
        return []
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets = [o for o in enc["offset_mapping"] if o[1] > o[0]]
    spans = []
    for i in range(0, len(offsets), size):
        window = offsets[i:i + size]
        spans.append((int(window[0][0]), int(window[-1][1])))
    return spans


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best scores, best first; ties keep index order (deterministic)."""
    if k <= 0 or scores.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(-scores, kind="stable")
    return order[:k]


class SentenceReader:
    """The extractive reader every retrieval baseline shares (an offline stand-in for an LLM
    reading the retrieved units).

    Documents are split into sentences (the scorer's rule) when first read, and a sentence's
    vector is computed (MiniLM, cached on disk) the first time a unit covering it is read.  For a question,
    the candidate sentences are those the retrieved units cover (at least half of a sentence
    inside a unit, the scorer's coverage rule), ranked by cosine to the question:
    :meth:`answer` returns the best one, or with ``max_words`` the best ones, best first, until
    that many words.  ``seconds`` accumulates the time spent reading, which the harness keeps
    out of the systems' latency (a deployment would hand the units to an LLM instead).
    """

    def __init__(self, docs: Sequence[Doc], embedder):
        self.embedder = embedder
        self.docs = {d.doc_id: d for d in docs}
        self.spans: dict[str, list[Span]] = {}
        self.texts: dict[str, list[str]] = {}
        self.vectors: dict[tuple[str, int], np.ndarray] = {}
        self.seconds = 0.0

    def warm(self, doc_ids: Collection[str]) -> None:
        """Split these documents into sentences now (vectors come when a sentence is first read)."""
        for doc_id in dict.fromkeys(doc_ids):
            if doc_id in self.spans or doc_id not in self.docs:
                continue
            text = self.docs[doc_id].text
            spans = split_sentences(text)
            self.spans[doc_id] = spans
            self.texts[doc_id] = [" ".join(text[a:b].split()) for a, b in spans]

    def candidates(self, units: Sequence[tuple[str, Sequence[Span]]]) -> list[tuple[str, int]]:
        self.warm([doc_id for doc_id, _ in units])
        out: dict[tuple[str, int], None] = {}
        for doc_id, spans in units:
            for i in covered_sentences(self.spans.get(doc_id, []), spans):
                out[(doc_id, i)] = None
        return list(out)

    def _vectors(self, keys: Sequence[tuple[str, int]]) -> np.ndarray:
        todo = [k for k in keys if k not in self.vectors]
        if todo:
            vecs = self.embedder.encode_documents([self.texts[d][i] for d, i in todo])
            for k, v in zip(todo, vecs):
                self.vectors[k] = v
        return np.vstack([self.vectors[k] for k in keys])

    def answer(self, question: str, units: Sequence[tuple[str, Sequence[Span]]], *, max_words: int = 0,
               query_vector: np.ndarray | None = None) -> str:
        started = time.perf_counter()
        try:
            return self._answer(question, units, max_words, query_vector)
        finally:
            self.seconds += time.perf_counter() - started

    def _answer(self, question, units, max_words, query_vector) -> str:
        cands = [c for c in self.candidates(units) if len(self.texts[c[0]][c[1]]) >= 3]
        if not cands:
            return ""
        q = self.embedder.encode_query(question) if query_vector is None else query_vector
        sims = self._vectors(cands) @ q
        order = top_k(sims, len(cands))
        if max_words <= 0:
            d, i = cands[int(order[0])]
            return self.texts[d][i]
        out, words = [], 0
        for j in order:
            d, i = cands[int(j)]
            out.append(self.texts[d][i])
            words += len(out[-1].split())
            if words >= max_words:
                break
        return " ".join(out)


def load_cross_encoder(path: str | Path | None):
    """A sentence-transformers CrossEncoder from a local path, or :class:`NotAvailable`."""
    if not path:
        raise NotAvailable("no cross-encoder configured: set VECTREE_CROSS_ENCODER to a local model path")
    if not Path(path).exists():
        raise NotAvailable(f"VECTREE_CROSS_ENCODER={path} does not exist on this machine")
    try:
        # why local: sentence-transformers loads torch (~5 s); only the reranked baseline needs it
        from sentence_transformers import CrossEncoder

        return CrossEncoder(str(path), device="cpu", local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - any load failure means the system cannot run
        raise NotAvailable(f"cannot load the cross-encoder at {path}: {exc}") from exc


@dataclass
class ChunkTable:
    """The units of a corpus (one span each): parallel lists plus the rows of every document."""

    doc_ids: list[str] = field(default_factory=list)
    spans: list[tuple[Span, ...]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    pages: list[tuple[int, ...]] = field(default_factory=list)
    rows_of: dict[str, list[int]] = field(default_factory=dict)

    def add(self, doc: Doc, spans: Sequence[Span], text: str | None = None) -> int:
        i = len(self.texts)
        spans = tuple((int(a), int(b)) for a, b in spans)
        self.doc_ids.append(doc.doc_id)
        self.spans.append(spans)
        self.texts.append(text if text is not None else " ".join(doc.text[a:b] for a, b in spans))
        self.pages.append(doc.pages_of(spans))
        self.rows_of.setdefault(doc.doc_id, []).append(i)
        return i

    def __len__(self) -> int:
        return len(self.texts)

    def hit(self, i: int, score: float, layer: int = 2) -> Hit:
        return Hit(self.doc_ids[i], self.spans[i], self.texts[i], float(score), self.pages[i], layer, f"u{i}")

    def rows(self, scope: Collection[str] | None) -> np.ndarray | None:
        """Row indices of the documents in ``scope`` (``None``: every row)."""
        if scope is None:
            return None
        rows = [r for d in scope for r in self.rows_of.get(d, [])]
        return np.asarray(sorted(rows), dtype=np.int64)


def fixed_chunk_table(docs: Sequence[Doc], tokenizer, size: int) -> ChunkTable:
    table = ChunkTable()
    for d in docs:
        for span in fixed_token_chunks(d.text, tokenizer, size):
            table.add(d, [span])
    return table


def sentence_chunk_table(docs: Sequence[Doc]) -> ChunkTable:
    """Units of 1-2 sentences: SproutRAG's leaves (``vectree.retrieval.sprout.chunks.chunk_text``) when
    that module is importable, else single sentences by the scorer's rule."""
    try:
        from vectree.retrieval.sprout.chunks import chunk_text
    except ImportError:  # pragma: no cover - the sprout package not present
        chunk_text = None

    table = ChunkTable()
    for d in docs:
        if chunk_text is not None:
            for c in chunk_text(d.text):
                table.add(d, [(c.start, c.end)])
        else:
            for span in split_sentences(d.text):
                table.add(d, [span])
    return table
