"""DragonBall as single-paper QA: does the agent answer from the right pages, and does it say so
when the report holds no answer?

DragonBall (RAGEval) gives synthetic company reports as text and finance queries whose ground
truth names the reports that answer them.  Its ``Irrelevant Unsolvable Question`` queries ask a
report for something it does not contain ("What was the cash flow of Energex Corporation in
2021?" asked of Energex's report, ground truth "Unable to answer"): the test of an abstention.

Rules (stated once):

* **Questions.**  The English finance queries with exactly one gold report: factual, multi-hop,
  summary and unsolvable queries.  Multi-document queries (comparison, integration, time
  sequence) need several reports at once; the ``dragonball`` sentence benchmark and ScholarQA
  measure those.  Each question is asked of its report, as QASPER's are of their paper.
* **Papers.**  Each report is typeset to PDF with the project's renderer
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


def load_dragonball_qa(folder: str | Path, render_dir: str | Path, *, limit: int | None = None) -> PaperQABenchmark:
    """The benchmark with its reports rendered into ``render_dir``; with ``limit`` only the first
    ``limit`` questions (and their reports)."""
    bench = load_dragonball(folder)
    render_dir = Path(render_dir)
    papers: dict[str, PaperSource] = {}
    rendered: dict[str, tuple] = {}
    questions: list[PaperQuestion] = []
    skipped = placed = fallback_pages = 0
    for q in bench.queries:
        if len(q.gold_doc_ids) != 1:
            skipped += 1
            continue
        if limit is not None and len(questions) >= limit:
            break
        doc_id = q.gold_doc_ids[0]
        doc = bench.documents[doc_id]
        if doc_id not in rendered:
            lines = [doc.text[p.start:p.end].strip() for p in doc.paragraphs]
            paper = QasperPaperText(doc_id, doc.title or doc_id, "", [(SECTION, [x for x in lines if x])], [])
            out = render_qasper_paper(paper, render_dir)
            rendered[doc_id] = (out, _page_texts(out.pdf))
            papers[doc_id] = PaperSource(doc_id, out.pdf, doc.title, out.n_pages)
        out, page_texts = rendered[doc_id]
        unsolvable = q.kind == UNSOLVABLE
        pages: set[int] = set()
        if not unsolvable:
            for d, i in q.gold:
                a, b = doc.sentences[i]
                para = next((doc.text[p.start:p.end] for p in doc.paragraphs if p.start <= a < p.end), "")
                fallback = out.evidence_pages(para) or []
                got = _sentence_pages(doc.text[a:b], page_texts, fallback)
                placed += 1
                fallback_pages += got is fallback
                pages.update(got)
        ref = Reference("Unanswerable", "none") if unsolvable else Reference(q.answer, "abstractive")
        questions.append(PaperQuestion(q.query_id, doc_id, q.text, (ref,), tuple(sorted(pages)),
                                       meta={"answer_types": [ref.type], "query_type": q.kind}))
    n_unsolvable = sum(q.unanswerable for q in questions)
    notes = [f"dragonball_qa: {len(questions)} single-report questions ({n_unsolvable} unsolvable) on "
             f"{len(papers)} rendered reports; {skipped} multi-report questions left to the dragonball benchmark; "
             f"{placed} gold sentences placed on pages ({fallback_pages} by their paragraph's pages)"]
    files = {Path(p).name: Path(p) for p in bench.files.values()}
    return PaperQABenchmark("dragonball_qa", papers, questions, files, notes)
