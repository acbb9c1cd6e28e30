"""``qasper``: QASPER full-text papers rendered to PDF by the project's renderer.

Reads ``hf/qasper-train-first10.json`` (Hugging Face schema) and
``led-fixture/qasper_sample_small.json`` (original schema).  Papers are rendered with
:mod:`vectree.evaluation.render_qasper` into ``render_dir`` and every evidence paragraph is placed on
the pages the renderer put it on, so the gold evidence pages are exact.  Paper ids are
``hf-<arxiv id>`` and ``led-<arxiv id>`` (the fixture reuses an arXiv id of the first file with
different text).  Reference answers follow QASPER's official evaluator, one per annotation
(:func:`vectree.evaluation.metrics.qasper_reference_answer`); gold pages are the union over annotations
of the pages of their evidence paragraphs (``FLOAT SELECTED`` captions included).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Iterable

from ..datasets import _read_json
from ..layouts import LayoutError, validate_layout
from ..metrics import qasper_reference_answer
from ..render_qasper import QasperPaperText, render_qasper_paper
from .base import PaperQABenchmark, PaperQuestion, PaperSource, Reference

HF_FILE = "hf/qasper-train-first10.json"
LED_FILE = "led-fixture/qasper_sample_small.json"


def _hf_questions(row: dict[str, Any]) -> Iterable[tuple[str, str, list[dict]]]:
    qas = row["qas"]
    for q, qid, ans in zip(qas["question"], qas["question_id"], qas["answers"]):
        yield str(qid), str(q), list(ans.get("answer") or [])


def _original_questions(row: dict[str, Any]) -> Iterable[tuple[str, str, list[dict]]]:
    for qa in row["qas"]:
        yield str(qa["question_id"]), str(qa["question"]), [a["answer"] for a in qa.get("answers") or []]


def _read(folder: Path) -> tuple[dict[str, Path], list[tuple[QasperPaperText, list[tuple[str, str, list[dict]]]]]]:
    files = validate_layout("qasper", folder)
    out = []
    try:
        for i, row in enumerate(_read_json(files[HF_FILE])):
            out.append((QasperPaperText.from_hf(row, f"hf-{row['id']}"), list(_hf_questions(row))))
        for pid, row in _read_json(files[LED_FILE]).items():
            out.append((QasperPaperText.from_original(f"led-{pid}", row), list(_original_questions(row))))
    except (KeyError, TypeError, ValueError) as exc:
        where = HF_FILE if len(out) < 10 else LED_FILE
        raise LayoutError(f"{folder / where}: malformed QASPER record ({type(exc).__name__}: {exc})") from None
    return files, out


def read_qasper_texts(folder: str | Path) -> list[QasperPaperText]:
    """Every paper of a qasper folder as text (nothing rendered)."""
    return [p for p, _ in _read(Path(folder))[1]]


def load_qasper(folder: str | Path, render_dir: str | Path, *, limit: int | None = None) -> PaperQABenchmark:
    """The benchmark with its papers rendered into ``render_dir``; with ``limit`` only the papers
    of the first ``limit`` questions are rendered."""
    folder = Path(folder)
    files, papers = _read(folder)
    out_papers: dict[str, PaperSource] = {}
    questions: list[PaperQuestion] = []
    unmatched = total = 0
    for paper, qas in papers:
        if limit is not None and len(questions) >= limit:
            break
        rendered = render_qasper_paper(paper, render_dir)
        out_papers[paper.paper_id] = PaperSource(paper.paper_id, rendered.pdf, paper.title, rendered.n_pages)
        for qid, text, annotations in qas:
            if limit is not None and len(questions) >= limit:
                break
            refs, pages = [], set()
            for ann in annotations:
                try:
                    refs.append(Reference(*qasper_reference_answer(ann)))
                except ValueError:
                    continue  # an annotation with no answer: QASPER's evaluator raises; we skip it
                for ev in ann.get("evidence") or []:
                    total += 1
                    got = rendered.evidence_pages(ev)
                    if got is None:
                        unmatched += 1
                    else:
                        pages.update(got)
            questions.append(PaperQuestion(qid, paper.paper_id, text, tuple(dict.fromkeys(refs)), tuple(sorted(pages)),
                                           meta={"answer_types": sorted({r.type for r in refs})}))
    notes = [f"qasper: {total - unmatched} of {total} evidence strings placed on rendered pages"
             + (f"; {unmatched} matched no rendered paragraph, caption or heading" if unmatched else "")]
    return PaperQABenchmark("qasper", out_papers, questions, files, notes)


def main(argv: list[str] | None = None) -> None:
    """``python -m vectree.evaluation.loaders.qasper DATA_DIR OUT_DIR``: render every paper of a
    qasper folder (lives here, not in ``render_qasper``, so the renderer never imports the loader)."""
    ap = argparse.ArgumentParser(description="Render the QASPER papers of a qasper folder to PDF.")
    ap.add_argument("data_dir")
    ap.add_argument("out_dir")
    args = ap.parse_args(argv)
    for paper in read_qasper_texts(args.data_dir):
        r = render_qasper_paper(paper, args.out_dir)
        print(f"{r.paper_id}: {r.n_pages} pages -> {r.pdf}")


if __name__ == "__main__":  # pragma: no cover
    main()
