"""Loaders: one per benchmark folder of ``../shared/data/``, each checking the layout first.

``load_benchmark(name, folder, work_dir=..., limit=...)`` dispatches by name and returns the
benchmark restricted to its first ``limit`` questions (file order; corpora stay whole).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..datasets import SentenceBenchmark, load_dragonball, load_hotpotqa
from ..layouts import BENCHMARKS, validate_layout
from .base import (  # noqa: F401
    PAPER_QA, ROUTING, SENTENCES, SYNTHESIS, TASKS, PaperQABenchmark, PaperQuestion, PaperSource, Reference,
    RoutingBenchmark, RoutingDoc, RoutingQuestion, SynthesisBenchmark, SynthPaper, SynthQuestion,
)
from .dragonball_qa import load_dragonball_multi, load_dragonball_qa
from .pubmedqa import load_pubmedqa_routing
from .qasper import load_qasper
from .qasper_pdf import load_qasper_pdf
from .scholarqa import load_scholarqa_multi

TASK_OF = {"qasper_pdf": PAPER_QA, "qasper": PAPER_QA, "dragonball_qa": PAPER_QA,
           "dragonball_multi": PAPER_QA, "pubmedqa": ROUTING,
           "dragonball": SENTENCES,
           "hotpotqa": SENTENCES, "scholarqa_multi": SYNTHESIS}


def task_of(benchmark) -> str:
    """The task kind of a benchmark name or object."""
    if isinstance(benchmark, SentenceBenchmark):
        return SENTENCES
    if isinstance(benchmark, str):
        return TASK_OF[benchmark]
    return benchmark.task


def questions_of(benchmark) -> list:
    return benchmark.queries if isinstance(benchmark, SentenceBenchmark) else benchmark.questions


def load_benchmark(name: str, folder: str | Path, *, work_dir: str | Path | None = None, limit: int | None = None):
    """Load benchmark ``name`` from ``folder`` (layout checked first; :class:`LayoutError` names
    the bad file).  ``work_dir`` is where derived files go (the rendered QASPER PDFs)."""
    folder = Path(folder)
    if name == "qasper_pdf":
        return load_qasper_pdf(folder).limited(limit)
    if name == "qasper":
        if work_dir is None:
            raise ValueError("the qasper benchmark renders PDFs: give a work_dir")
        return load_qasper(folder, Path(work_dir) / "qasper-pdfs", limit=limit)
    if name in ("dragonball_qa", "dragonball_multi"):
        if work_dir is None:
            raise ValueError(f"the {name} benchmark renders PDFs: give a work_dir")
        validate_layout(name, folder)
        load = load_dragonball_qa if name == "dragonball_qa" else load_dragonball_multi
        return load(folder, Path(work_dir) / "dragonball-pdfs", limit=limit)
    if name == "pubmedqa":
        return load_pubmedqa_routing(folder).limited(limit)
    if name == "scholarqa_multi":
        return load_scholarqa_multi(folder).limited(limit)
    if name in ("dragonball", "hotpotqa"):
        validate_layout(name, folder)
        bench = load_dragonball(folder) if name == "dragonball" else load_hotpotqa(folder)
        files = {Path(p).name: Path(p) for p in bench.files.values()}
        if limit is not None:
            keep = {id(q) for q in bench.queries[:limit]}  # ids repeat across HotpotQA's two files
            bench = bench.subset(lambda q: id(q) in keep)
        return replace(bench, files=files) if hasattr(bench, "__dataclass_fields__") else bench
    raise ValueError(f"unknown benchmark {name!r}: expected one of {', '.join(BENCHMARKS)}")
