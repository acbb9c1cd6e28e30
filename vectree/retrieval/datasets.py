"""Readers for the sentence-level benchmarks (HotpotQA, DragonBall) in the shared data layout.

They live in the library because SproutRAG training (:mod:`vectree.retrieval.sprout.data`) reads the
same files; :mod:`vectree.evaluation.datasets` re-exports them for the harness.

Pure functions of a data folder laid out like ``../shared/data/<benchmark>/`` (the same file names
and formats as ``../shared/data/README.md`` documents them).  Each returns a
:class:`SentenceBenchmark`: documents (text, paragraphs, sentences by the scorer's rule) and
queries (search scope, gold sentences).  A missing or malformed file raises
:class:`DatasetLayoutError` naming it.

Gold definitions (issue 6):

* **HotpotQA, IRCoT format** (``ircot_format_dev_subsampled.jsonl``): one document per question,
  its ``contexts`` paragraphs in the given order joined by blank lines (titles are kept as
  paragraph metadata, not text); gold = every sentence of the paragraphs with ``is_supporting``.
* **HotpotQA, distractor format** (``hotpot_distractor_sample.json``): one document per question,
  each ``context`` paragraph the concatenation of its sentences; gold = the sentences (by the
  scorer's rule) that lie at least half inside a supporting-fact sentence.
* **DragonBall** (``dragonball_docs.jsonl`` + ``queries_finance_en.jsonl``): the documents of one
  language (English by default); every query searches all of them; gold = the sentences of the
  query's ``doc_ids`` documents that match one of its ``references``: after normalisation
  (lowercase, non-alphanumerics to spaces, whitespace collapsed) one text contains the other and
  the contained one has at least 20 characters, or the token F1 of the two is at least 0.8.
  Queries without references have no gold (left out of IE; the harness reports them apart).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from .sentences import Span, split_sentences

HOTPOTQA_IRCOT = "ircot_format_dev_subsampled.jsonl"
HOTPOTQA_DISTRACTOR = "hotpot_distractor_sample.json"
DRAGONBALL_DOCS = "dragonball_docs.jsonl"
DRAGONBALL_QUERIES = "queries_finance_en.jsonl"

MIN_CONTAINED_CHARS = 20
MIN_TOKEN_F1 = 0.8


class DatasetLayoutError(ValueError):
    """A benchmark folder does not match the shared layout; the message names the file."""


@dataclass(frozen=True)
class Paragraph:
    start: int
    end: int
    title: str = ""


@dataclass
class Document:
    """One document: its text, paragraph spans (with titles where the source has them) and the
    sentence spans of the scorer's rule."""

    doc_id: str
    text: str
    title: str = ""
    paragraphs: list[Paragraph] = field(default_factory=list)
    sentences: list[Span] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.sentences:
            self.sentences = split_sentences(self.text)
        if not self.paragraphs:
            self.paragraphs = [Paragraph(m.start(), m.end()) for m in re.finditer(r"[^\n]+", self.text)
                               if m.group().strip()]


@dataclass(frozen=True)
class Query:
    """One query.  ``doc_ids`` is the search scope (the documents a system searches for it);
    ``gold`` the ``(doc_id, sentence_index)`` pairs it must find (empty: no gold)."""

    query_id: str
    text: str
    doc_ids: tuple[str, ...]
    gold: frozenset[tuple[str, int]]
    source: str = ""
    kind: str = ""
    answer: str = ""
    gold_doc_ids: tuple[str, ...] = ()


@dataclass
class SentenceBenchmark:
    name: str
    documents: dict[str, Document]
    queries: list[Query]
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def queries_with_gold(self) -> list[Query]:
        return [q for q in self.queries if q.gold]

    def sentences(self) -> dict[str, list[Span]]:
        """``doc_id -> sentence spans``: the ``sentences`` argument of ``score_units``."""
        return {d: doc.sentences for d, doc in self.documents.items()}

    def subset(self, keep) -> "SentenceBenchmark":
        """The benchmark restricted to the queries for which ``keep(query)`` is true (and the
        documents they search)."""
        queries = [q for q in self.queries if keep(q)]
        used = {d for q in queries for d in q.doc_ids}
        return SentenceBenchmark(self.name, {d: v for d, v in self.documents.items() if d in used}, queries,
                                 self.files)


# ---- reading -------------------------------------------------------------------------------
def _require(folder: Path, name: str) -> Path:
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetLayoutError(f"benchmark folder {folder} does not exist")
    path = folder / name
    if not path.is_file():
        raise DatasetLayoutError(f"{folder} has no {name} (expected the shared data layout)")
    return path


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DatasetLayoutError(f"{path}: line {n} is not JSON: {exc}") from exc
    return rows


def _read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetLayoutError(f"{path} is not JSON: {exc}") from exc


def _field(row: dict, key: str, path: Path, where: str):
    if key not in row:
        raise DatasetLayoutError(f"{path}: {where} has no field {key!r}")
    return row[key]


def _one_line(text: str) -> str:
    # a paragraph is a newline-free run (the scorer's paragraph rule), so inner newlines become spaces
    return re.sub(r"\s*\n\s*", " ", text.strip())


def _join_paragraphs(paragraphs: Sequence[tuple[str, str]]) -> tuple[str, list[Paragraph]]:
    parts, spans, pos = [], [], 0
    for title, text in paragraphs:
        if parts:
            parts.append("\n\n")
            pos += 2
        spans.append(Paragraph(pos, pos + len(text), title))
        parts.append(text)
        pos += len(text)
    return "".join(parts), spans


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def covered_sentences(sentences: Sequence[Span], spans: Iterable[Span]) -> list[int]:
    """Indices of ``sentences`` that have at least half of their characters inside ``spans``."""
    merged = merge_spans(spans)
    if not merged or not sentences:
        return []
    starts = np.array([a for a, _ in merged])
    ends = np.array([b for _, b in merged])
    out = []
    for i, (s, e) in enumerate(sentences):
        if e <= s:
            continue
        # only the merged spans that can overlap [s, e)
        lo = int(np.searchsorted(ends, s, side="right"))
        inside = 0
        for j in range(lo, len(merged)):
            if starts[j] >= e:
                break
            inside += min(e, ends[j]) - max(s, starts[j])
        if 2 * inside >= e - s:
            out.append(i)
    return out


def _sentences_inside(sentences: Sequence[Span], regions: Sequence[Span]) -> list[int]:
    return covered_sentences(sentences, regions)


# ---- HotpotQA ------------------------------------------------------------------------------
@dataclass(frozen=True)
class IrcotQuestion:
    """One row of the IRCoT HotpotQA file as written there: its context paragraphs are
    ``(title, paragraph text, is supporting)``, the text untouched (each reader normalises it
    its own way), ``answers`` every answer span."""

    question_id: str
    question: str
    answers: tuple[str, ...]
    paragraphs: tuple[tuple[str, str, bool], ...]


def read_hotpotqa_ircot(data_dir: str | Path) -> list[IrcotQuestion]:
    """Every question of ``data_dir/ircot_format_dev_subsampled.jsonl`` (every split), in file
    order; a missing file or field raises :class:`DatasetLayoutError` naming it.  The one reader
    of that file: the benchmark (:func:`load_hotpotqa`), SproutRAG's and the reader's training data
    and the reader's calibrations all go through it."""
    path = _require(Path(data_dir), HOTPOTQA_IRCOT)
    out = []
    for n, row in enumerate(_read_jsonl(path), 1):
        where = f"line {n}"
        contexts = _field(row, "contexts", path, where)
        out.append(IrcotQuestion(
            str(_field(row, "question_id", path, where)), str(_field(row, "question_text", path, where)),
            tuple(str(s) for a in row.get("answers_objects", []) for s in a.get("spans", [])),
            tuple((str(c.get("title", "")), str(_field(c, "paragraph_text", path, where)), bool(c.get("is_supporting")))
                  for c in contexts)))
    return out


def load_hotpotqa(data_dir: str | Path, *, sources: Sequence[str] = ("ircot", "distractor")) -> SentenceBenchmark:
    """HotpotQA questions of the IRCoT and/or the distractor file, one document per question."""
    data_dir = Path(data_dir)
    documents: dict[str, Document] = {}
    queries: list[Query] = []
    files: dict[str, Path] = {}
    unknown = set(sources) - {"ircot", "distractor"}
    if unknown:
        raise ValueError(f"unknown HotpotQA sources {sorted(unknown)}; use 'ircot' and/or 'distractor'")
    if "ircot" in sources:
        files["ircot"] = _require(data_dir, HOTPOTQA_IRCOT)
        for row in read_hotpotqa_ircot(data_dir):
            text, spans = _join_paragraphs([(title, _one_line(para)) for title, para, _ in row.paragraphs])
            doc = Document(f"hotpotqa-{row.question_id}", text, title=row.question, paragraphs=spans)
            regions = [(p.start, p.end) for p, (_, _, supporting) in zip(spans, row.paragraphs) if supporting]
            gold = frozenset((doc.doc_id, i) for i in _sentences_inside(doc.sentences, regions))
            documents[doc.doc_id] = doc
            queries.append(Query(row.question_id, row.question, (doc.doc_id,), gold,
                                 source="ircot", answer="; ".join(row.answers), gold_doc_ids=(doc.doc_id,)))
    if "distractor" in sources:
        path = files["distractor"] = _require(data_dir, HOTPOTQA_DISTRACTOR)
        data = _read_json(path)
        if not isinstance(data, list):
            raise DatasetLayoutError(f"{path}: expected a JSON array of questions")
        for n, row in enumerate(data):
            where = f"item {n}"
            qid = str(_field(row, "_id", path, where))
            context = _field(row, "context", path, where)
            supporting = {(t, int(i)) for t, i in _field(row, "supporting_facts", path, where)}
            paras, sf_regions_rel = [], []
            for title, sents in context:
                # sentence spans inside the paragraph, before newline cleaning (lengths kept)
                sents = [s.replace("\n", " ") for s in sents]
                para = "".join(sents)
                lead = len(para) - len(para.lstrip())
                pos = -lead
                for i, s in enumerate(sents):
                    if (title, i) in supporting:
                        sf_regions_rel.append((len(paras), pos, pos + len(s)))
                    pos += len(s)
                paras.append((title, para.strip()))
            text, spans = _join_paragraphs(paras)
            doc = Document(f"hotpotqa-distractor-{qid}", text, title=row.get("question", ""), paragraphs=spans)
            regions = [(spans[p].start + max(a, 0), spans[p].start + min(b, spans[p].end - spans[p].start))
                       for p, a, b in sf_regions_rel]
            gold = frozenset((doc.doc_id, i) for i in _sentences_inside(doc.sentences, regions))
            documents[doc.doc_id] = doc
            queries.append(Query(qid, str(_field(row, "question", path, where)), (doc.doc_id,), gold,
                                 source="distractor", kind=str(row.get("type", "")),
                                 answer=str(row.get("answer", "")), gold_doc_ids=(doc.doc_id,)))
    return SentenceBenchmark("hotpotqa", documents, queries, files)


# ---- DragonBall ----------------------------------------------------------------------------
def normalise(text: str) -> str:
    """Lowercase, every non-alphanumeric character to a space, whitespace collapsed."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def token_f1(a: str, b: str) -> float:
    """SQuAD-style token F1 of two normalised strings."""
    ta, tb = a.split(), b.split()
    common = sum((Counter(ta) & Counter(tb)).values())
    if not common:
        return 0.0
    p, r = common / len(ta), common / len(tb)
    return 2 * p * r / (p + r)


def matches_reference(sentence: str, reference: str) -> bool:
    """The DragonBall gold rule for one sentence and one reference (both raw text)."""
    s, r = normalise(sentence), normalise(reference)
    if not s or not r:
        return False
    shorter, longer = (s, r) if len(s) <= len(r) else (r, s)
    if len(shorter) >= MIN_CONTAINED_CHARS and shorter in longer:
        return True
    return token_f1(s, r) >= MIN_TOKEN_F1


def load_dragonball(data_dir: str | Path, *, language: str = "en", domains: Sequence[str] | None = None) -> SentenceBenchmark:
    """DragonBall: the ``language`` documents (optionally only some ``domains``) and the finance
    queries; every query searches every loaded document."""
    data_dir = Path(data_dir)
    docs_path = _require(data_dir, DRAGONBALL_DOCS)
    q_path = _require(data_dir, DRAGONBALL_QUERIES)
    documents: dict[str, Document] = {}
    for n, row in enumerate(_read_jsonl(docs_path), 1):
        where = f"line {n}"
        if _field(row, "language", docs_path, where) != language:
            continue
        if domains is not None and row.get("domain") not in domains:
            continue
        raw_id = _field(row, "doc_id", docs_path, where)
        doc_id = f"dragonball-{raw_id}"
        title = row.get("company_name") or row.get("court_name") or row.get("hospital_patient_name") or ""
        documents[doc_id] = Document(doc_id, str(_field(row, "content", docs_path, where)), title=title,
                                     meta={"domain": row.get("domain"), "raw_doc_id": raw_id})
    if not documents:
        raise DatasetLayoutError(f"{docs_path}: no documents in language {language!r}")
    scope = tuple(sorted(documents))
    queries: list[Query] = []
    for n, row in enumerate(_read_jsonl(q_path), 1):
        where = f"line {n}"
        if row.get("language", language) != language:
            continue
        q = _field(row, "query", q_path, where)
        gt = _field(row, "ground_truth", q_path, where)
        gold_docs = tuple(f"dragonball-{d}" for d in gt.get("doc_ids", []))
        missing = [d for d in gold_docs if d not in documents]
        if missing and domains is None:
            raise DatasetLayoutError(f"{q_path}: {where} cites documents {missing} not in {docs_path.name}")
        refs = [r for r in gt.get("references", []) if isinstance(r, str) and r.strip()]
        gold = set()
        for d in gold_docs:
            doc = documents.get(d)
            if doc is None:
                continue
            for i, (a, b) in enumerate(doc.sentences):
                sent = doc.text[a:b]
                if any(matches_reference(sent, r) for r in refs):
                    gold.add((d, i))
        queries.append(Query(str(_field(q, "query_id", q_path, where)), str(_field(q, "content", q_path, where)),
                             scope, frozenset(gold), source="finance_en", kind=str(q.get("query_type", "")),
                             answer=str(gt.get("content", "")), gold_doc_ids=gold_docs))
    return SentenceBenchmark("dragonball", documents, queries, {"docs": docs_path, "queries": q_path})
