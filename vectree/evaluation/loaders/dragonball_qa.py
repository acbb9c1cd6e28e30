"""DragonBall as paper QA: does the agent answer from the right pages (of the right reports), and
does it say so when the report holds no answer?

DragonBall (RAGEval) gives synthetic company reports as text and finance queries whose ground
truth names the reports that answer them.  Its ``Irrelevant Unsolvable Question`` queries ask a
report for something it does not contain ("What was the cash flow of Energex Corporation in
2021?" asked of Energex's report, ground truth "Unable to answer"): the test of an abstention.

Rules (stated once):

* **Questions.**  ``dragonball_qa``: the English finance queries with exactly one gold report
  (factual, multi-hop, summary and unsolvable queries), each asked of its report, as QASPER's are
  of their paper.  ``dragonball_multi``: the queries with several gold reports (comparison,
  integration, time sequence), each asked of the whole corpus (``paper_id`` empty): the agent must
  find the reports and cite each; gold pages are ``(report, page)`` pairs and the gold reports are
  in ``meta["gold_docs"]``.  Its unanswerable ones are those whose ground truth is "Cannot answer"
  / "Unable to answer".
* **Papers.**  ``dragonball_qa``: the reports asked about; ``dragonball_multi``: every report any
  English finance query names (the corpus the questions are asked of).  Each report is typeset to PDF with the project's renderer
  (:func:`vectree.evaluation.render_qasper.render_qasper_paper`): the company name as title, the
  report's lines as the paragraphs of one section.  Renders are cached in the work folder.
* **Evidence pages.**  The gold sentences of the ``dragonball`` benchmark (its reference rule,
  :func:`vectree.retrieval.datasets.load_dragonball`), each placed on the page whose text holds it
  (whitespace-insensitive); a sentence the page texts do not hold verbatim falls back to the
  pages of its paragraph.
* **References.**  An unsolvable query's reference is QASPER's ``Unanswerable`` (type ``none``),
  so an abstention scores answer F1 1 there; the others' reference is the ground-truth answer
  (type ``abstractive``).

DragonBall is CC-BY-NC-SA-4.0: evaluation only, nothing from it enters a model or the package.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..datasets import load_dragonball
from ..render_qasper import QasperPaperText, render_qasper_paper
from .base import PaperQABenchmark, PaperQuestion, PaperSource, Reference

UNSOLVABLE = "Irrelevant Unsolvable Question"
SECTION = "Report"


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def _page_texts(pdf: Path) -> list[str]:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        return [_squash(page.get_text()) for page in doc]


def _sentence_pages(sentence: str, pages: list[str], fallback: list[int]) -> list[int]:
    key = _squash(sentence)
    hits = [i + 1 for i, text in enumerate(pages) if key and key in text]
    if hits:
        return hits[:1]
    # a sentence broken across a page: its head and its tail
    head, tail = key[:40], key[-40:]
    hits = sorted({i + 1 for i, text in enumerate(pages) if len(key) >= 80 and (head in text or tail in text)})
    return hits or fallback


class _Reports:
    """Reports rendered on first use, with their page texts (for placing gold sentences)."""

    def __init__(self, bench, render_dir: Path):
        self.bench, self.render_dir = bench, Path(render_dir)
        self.rendered: dict[str, tuple] = {}
        self.papers: dict[str, PaperSource] = {}
        self.placed = self.fallback = 0

    def get(self, doc_id: str):
        if doc_id not in self.rendered:
            doc = self.bench.documents[doc_id]
            lines = [doc.text[p.start:p.end].strip() for p in doc.paragraphs]
            paper = QasperPaperText(doc_id, doc.title or doc_id, "", [(SECTION, [x for x in lines if x])], [])
            out = render_qasper_paper(paper, self.render_dir)
            self.rendered[doc_id] = (out, _page_texts(out.pdf))
            self.papers[doc_id] = PaperSource(doc_id, out.pdf, doc.title, out.n_pages)
        return self.rendered[doc_id]

    def pages_of(self, doc_id: str, sentence_index: int) -> list[int]:
        """The page(s) of one sentence of a report (see the module doc)."""
        doc = self.bench.documents[doc_id]
        out, page_texts = self.get(doc_id)
        a, b = doc.sentences[sentence_index]
        para = next((doc.text[p.start:p.end] for p in doc.paragraphs if p.start <= a < p.end), "")
        fallback = out.evidence_pages(para) or []
        got = _sentence_pages(doc.text[a:b], page_texts, fallback)
        self.placed += 1
        self.fallback += got is fallback
        return got


def _question(q, paper_id: str, unanswerable: bool, reports: _Reports, **meta) -> PaperQuestion:
    """One benchmark question: its reference (``Unanswerable`` when the reports hold no answer) and
    its gold pages, of its paper (``paper_id``) or, asked of the corpus (``""``), (report, page) pairs."""
    pages: set = set()
    if not unanswerable:
        for d, i in q.gold:
            pages.update(reports.pages_of(d, i) if paper_id else ((d, p) for p in reports.pages_of(d, i)))
    ref = Reference("Unanswerable", "none") if unanswerable else Reference(q.answer, "abstractive")
    return PaperQuestion(q.query_id, paper_id, q.text, (ref,), tuple(sorted(pages)),
                         meta={"answer_types": [ref.type], "query_type": q.kind, **meta})


def _files(bench) -> dict[str, Path]:
    return {Path(p).name: Path(p) for p in bench.files.values()}


def load_dragonball_qa(folder: str | Path, render_dir: str | Path, *, limit: int | None = None) -> PaperQABenchmark:
    """The benchmark with its reports rendered into ``render_dir``; with ``limit`` only the first
    ``limit`` questions (and their reports)."""
    bench = load_dragonball(folder)
    reports = _Reports(bench, Path(render_dir))
    questions: list[PaperQuestion] = []
    skipped = 0
    for q in bench.queries:
        if len(q.gold_doc_ids) != 1:
            skipped += 1
            continue
        if limit is not None and len(questions) >= limit:
            break
        doc_id = q.gold_doc_ids[0]
        reports.get(doc_id)
        questions.append(_question(q, doc_id, q.kind == UNSOLVABLE, reports))
    n_unsolvable = sum(q.unanswerable for q in questions)
    notes = [f"dragonball_qa: {len(questions)} single-report questions ({n_unsolvable} unsolvable) on "
             f"{len(reports.papers)} rendered reports; {skipped} multi-report questions left to dragonball_multi; "
             f"{reports.placed} gold sentences placed on pages ({reports.fallback} by their paragraph's pages)"]
    return PaperQABenchmark("dragonball_qa", reports.papers, questions, _files(bench), notes)


_NO_ANSWER = re.compile(r"^\s*(unable to answer|cannot answer)", re.I)


def load_dragonball_multi(folder: str | Path, render_dir: str | Path, *, limit: int | None = None
                          ) -> PaperQABenchmark:
    """The multi-report questions, each asked of the whole corpus of reports (module doc)."""
    bench = load_dragonball(folder)
    reports = _Reports(bench, Path(render_dir))
    for doc_id in sorted({d for q in bench.queries for d in q.gold_doc_ids}):
        reports.get(doc_id)  # the corpus: every report a finance query names
    questions: list[PaperQuestion] = []
    for q in bench.queries:
        if len(q.gold_doc_ids) < 2:
            continue
        if limit is not None and len(questions) >= limit:
            break
        unanswerable = q.kind == UNSOLVABLE or bool(_NO_ANSWER.match(q.answer))
        questions.append(_question(q, "", unanswerable, reports, gold_docs=list(q.gold_doc_ids)))
    n_none = sum(q.unanswerable for q in questions)
    notes = [f"dragonball_multi: {len(questions)} multi-report questions ({n_none} unanswerable) asked of a corpus "
             f"of {len(reports.papers)} rendered reports; {reports.placed} gold sentences placed on pages "
             f"({reports.fallback} by their paragraph's pages)"]
    return PaperQABenchmark("dragonball_multi", reports.papers, questions, _files(bench), notes)
