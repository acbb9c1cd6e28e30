"""The benchmark data every loader returns: one dataclass family per kind of task.

* :class:`PaperQABenchmark` (``qasper_pdf``, ``qasper``): single-paper QA over PDFs; each
  question names its paper, carries the reference answers (QASPER's forms) and the gold evidence
  pages (empty when the question has no evidence).
* :class:`RoutingBenchmark` (``pubmedqa``): corpus-level routing; each question has exactly one
  gold document among all of them.
* :class:`vectree.evaluation.datasets.SentenceBenchmark` (``dragonball``, ``hotpotqa``): sentence-level
  retrieval, gold sentences by the scorer's rule.
* :class:`SynthesisBenchmark` (``scholarqa_multi``): multi-paper synthesis; the corpus is every
  cited snippet grouped by paper; each question has gold papers and an expert answer.

Every benchmark has ``name``, ``questions`` (or ``queries``), ``files`` (what was read) and
``notes`` (facts about the data a report should state, e.g. evidence strings that matched no
rendered paragraph).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..datasets import SentenceBenchmark  # noqa: F401  (re-exported: the sentence-level kind)

PAPER_QA = "paper_qa"
ROUTING = "routing"
SENTENCES = "sentences"
SYNTHESIS = "synthesis"
TASKS = (PAPER_QA, ROUTING, SENTENCES, SYNTHESIS)


@dataclass(frozen=True)
class Reference:
    """One reference answer: its text in QASPER's form and its type (extractive, abstractive,
    boolean, none (unanswerable), unknown)."""

    answer: str
    type: str


@dataclass(frozen=True)
class PaperSource:
    paper_id: str
    pdf: Path
    title: str = ""
    n_pages: int | None = None


@dataclass(frozen=True)
class PaperQuestion:
    question_id: str
    paper_id: str
    question: str
    references: tuple[Reference, ...]
    evidence_pages: tuple[int, ...]
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def has_evidence(self) -> bool:
        return bool(self.evidence_pages)

    @property
    def unanswerable(self) -> bool:
        """Every reference answer says the paper holds no answer (a question some annotators
        answered is answerable)."""
        return bool(self.references) and all(r.type == "none" for r in self.references)


@dataclass
class PaperQABenchmark:
    name: str
    papers: dict[str, PaperSource]
    questions: list[PaperQuestion]
    files: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    task: str = PAPER_QA

    def limited(self, limit: int | None) -> "PaperQABenchmark":
        qs = self.questions if limit is None else self.questions[:limit]
        used = {q.paper_id for q in qs}
        return PaperQABenchmark(self.name, {k: v for k, v in self.papers.items() if k in used}, qs, self.files,
                                self.notes)


@dataclass(frozen=True)
class RoutingDoc:
    doc_id: str
    title: str
    sections: tuple[tuple[str, str], ...]  # (label, text)

    @property
    def text(self) -> str:
        return "\n".join(t for _, t in self.sections)


@dataclass(frozen=True)
class RoutingQuestion:
    question_id: str
    question: str
    gold_doc_id: str
    label: str = ""  # PubMedQA final_decision: yes | no | maybe
    long_answer: str = ""


@dataclass
class RoutingBenchmark:
    name: str
    documents: dict[str, RoutingDoc]
    questions: list[RoutingQuestion]
    files: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    task: str = ROUTING

    def limited(self, limit: int | None) -> "RoutingBenchmark":
        # the corpus stays whole: routing is among all documents whatever the number of questions
        return RoutingBenchmark(self.name, self.documents, self.questions if limit is None else self.questions[:limit],
                                self.files, self.notes)


@dataclass(frozen=True)
class SynthPaper:
    """One paper of the synthesis corpus: every snippet cited from it (any question), in order."""

    doc_id: str
    title: str
    snippets: tuple[str, ...]
    url: str = ""

    @property
    def text(self) -> str:
        return "\n\n".join(self.snippets)


@dataclass(frozen=True)
class SynthQuestion:
    question_id: str
    question: str
    expert_answer: str
    gold_doc_ids: tuple[str, ...]
    subject: str = ""


@dataclass
class SynthesisBenchmark:
    name: str
    papers: dict[str, SynthPaper]
    questions: list[SynthQuestion]
    files: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    task: str = SYNTHESIS

    def limited(self, limit: int | None) -> "SynthesisBenchmark":
        return SynthesisBenchmark(self.name, self.papers, self.questions if limit is None else self.questions[:limit],
                                  self.files, self.notes)
