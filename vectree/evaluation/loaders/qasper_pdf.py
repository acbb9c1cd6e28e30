"""``qasper_pdf``: QASPER questions over real arXiv PDFs, evidence already placed on PDF pages.

Reads ``questions.jsonl`` and the PDFs its ``pdf`` fields name (relative to the folder).  The
reference answers are the ``answers[].answer`` strings (``type`` ``none`` becomes QASPER's
``Unanswerable``; an ``unanswerable`` question gets that reference too); the gold evidence pages
are ``evidence_pages`` (``[]``: no evidence -- left out of the evidence-page averages).
"""

from __future__ import annotations

from pathlib import Path

from ..layouts import LayoutError, validate_layout
from .base import PaperQABenchmark, PaperQuestion, PaperSource, Reference
from ..datasets import _read_jsonl


def load_qasper_pdf(folder: str | Path) -> PaperQABenchmark:
    folder = Path(folder)
    files = validate_layout("qasper_pdf", folder)
    path = files["questions.jsonl"]
    papers: dict[str, PaperSource] = {}
    questions: list[PaperQuestion] = []
    for n, row in enumerate(_read_jsonl(path), 1):
        pid = str(row["paper_id"])
        pdf = folder / row["pdf"]
        known = papers.get(pid)
        if known is not None and known.pdf != pdf:
            raise LayoutError(f"{path}: line {n} gives paper {pid} the pdf {row['pdf']}, an earlier line {known.pdf.name}")
        papers.setdefault(pid, PaperSource(pid, pdf, n_pages=row.get("pdf_pages")))
        refs = []
        for a in row["answers"] or []:
            if not isinstance(a, dict) or "answer" not in a:
                raise LayoutError(f"{path}: line {n} has an answer without an 'answer' field")
            kind = str(a.get("type") or "unknown")
            text = "Unanswerable" if kind == "none" else str(a["answer"])
            refs.append(Reference(text, kind))
        if row.get("unanswerable"):
            refs.append(Reference("Unanswerable", "none"))
        pages = row["evidence_pages"]
        if not isinstance(pages, list) or not all(isinstance(p, int) and p >= 1 for p in pages):
            raise LayoutError(f"{path}: line {n} evidence_pages must be a list of 1-based page numbers, got {pages!r}")
        questions.append(PaperQuestion(
            str(row["question_id"]), pid, str(row["question"]), tuple(dict.fromkeys(refs)), tuple(sorted(set(pages))),
            meta={"subset": row.get("uda_subset", ""), "answer_types": sorted({r.type for r in refs})},
        ))
    return PaperQABenchmark("qasper_pdf", papers, questions, files)
