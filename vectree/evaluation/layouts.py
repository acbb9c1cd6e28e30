"""The benchmark folder layouts the harness reads, and the check that a folder matches one.

A benchmark is named after a folder of ``../shared/data/`` and any folder laid out the same way
evaluates: the same file names, the same formats, the same fields (``../shared/data/README.md``).
The harness reads only the files listed here (:data:`LAYOUTS`); everything else in the folder
(``manifest.json``, licences, ``dev-questions/``, ``pagebench/``) is ignored.

:func:`validate_layout` checks every listed file before anything is loaded: it exists, parses
(JSON or JSON lines), has the expected top-level shape, and every record carries the fields the
loaders use.  A mismatch raises :class:`LayoutError` whose message names the file (and the line
or item and the field), so ``vectree eval`` can exit non-zero with it.  :func:`data_hashes`
gives the sha256 of every file read, written into ``results.json``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from .datasets import DatasetLayoutError


class LayoutError(DatasetLayoutError):
    """A benchmark folder does not match its layout; the message names the file."""


@dataclass(frozen=True)
class FileSpec:
    """One file of a layout: its path relative to the folder, its format (``jsonl``: one JSON
    object per line; ``json-list``: a JSON array of objects; ``json-dict``: a JSON object whose
    values are objects) and the fields every record must have (``a.b`` reaches into a nested
    object)."""

    path: str
    format: str
    fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class Layout:
    benchmark: str
    files: tuple[FileSpec, ...]
    description: str = ""
    extra: tuple[str, ...] = field(default=())  # what else is read (documented, checked by the loader)


# what the DragonBall paper-QA benchmarks read: the reports and the queries with their types
_DRAGONBALL_QA_FILES = (
    FileSpec("dragonball_docs.jsonl", "jsonl", ("doc_id", "language", "content")),
    FileSpec("queries_finance_en.jsonl", "jsonl", ("query.content", "query.query_id", "query.query_type",
                                                   "ground_truth.doc_ids", "ground_truth.references")),
)

LAYOUTS: dict[str, Layout] = {
    "qasper_pdf": Layout("qasper_pdf", (
        FileSpec("questions.jsonl", "jsonl", ("paper_id", "pdf", "question_id", "question", "answers",
                                              "evidence_pages")),
    ), "QASPER questions over real PDFs with evidence pages", extra=("pdfs/<paper>.pdf named by each `pdf` field",)),
    "qasper": Layout("qasper", (
        FileSpec("hf/qasper-train-first10.json", "json-list", ("id", "title", "abstract", "full_text.section_name",
                                                               "full_text.paragraphs", "qas.question",
                                                               "qas.question_id", "qas.answers")),
        FileSpec("led-fixture/qasper_sample_small.json", "json-dict", ("title", "abstract", "full_text", "qas")),
    ), "QASPER full-text papers, rendered to PDF by vectree.demo.render"),
    "pubmedqa": Layout("pubmedqa", (
        FileSpec("corpus.jsonl", "jsonl", ("pmid", "contexts", "labels")),
        FileSpec("questions.jsonl", "jsonl", ("pmid", "question", "final_decision")),
    ), "PubMedQA PQA-L: 1,000 abstracts, routing questions"),
    "dragonball": Layout("dragonball", (
        FileSpec("dragonball_docs.jsonl", "jsonl", ("doc_id", "language", "content")),
        FileSpec("queries_finance_en.jsonl", "jsonl", ("query.content", "query.query_id", "ground_truth.doc_ids",
                                                       "ground_truth.references")),
    ), "DragonBall finance queries over the English documents"),
    # the same folder asked as paper QA (loaders.dragonball_qa): `--data ../shared/data/dragonball`
    "dragonball_qa": Layout("dragonball_qa", _DRAGONBALL_QA_FILES,
                            "DragonBall single-report finance queries as paper QA, unsolvable ones included "
                            "(rendered to PDF)"),
    "dragonball_multi": Layout("dragonball_multi", _DRAGONBALL_QA_FILES,
                               "DragonBall multi-report finance queries asked of the whole corpus of reports "
                               "(rendered to PDF)"),
    "hotpotqa": Layout("hotpotqa", (
        FileSpec("ircot_format_dev_subsampled.jsonl", "jsonl", ("question_id", "question_text", "contexts")),
        FileSpec("hotpot_distractor_sample.json", "json-list", ("_id", "question", "supporting_facts", "context")),
    ), "HotpotQA dev, IRCoT and distractor formats"),
    "scholarqa_multi": Layout("scholarqa_multi", (
        FileSpec("human_answers.json", "json-list", ("id", "input", "output", "ctxs")),
    ), "ScholarQABench multi-domain: expert answers citing snippets"),
}

BENCHMARKS = tuple(LAYOUTS)
# a benchmark that reads another one's folder of ../shared/data/
DATA_FOLDER = {"dragonball_qa": "dragonball", "dragonball_multi": "dragonball"}


def data_folder(benchmark: str) -> str:
    """The ``../shared/data/`` folder a benchmark reads (its own name unless :data:`DATA_FOLDER` says)."""
    return DATA_FOLDER.get(benchmark, benchmark)


def layout_of(benchmark: str) -> Layout:
    try:
        return LAYOUTS[benchmark]
    except KeyError:
        raise LayoutError(f"unknown benchmark {benchmark!r}: expected one of {', '.join(BENCHMARKS)}") from None


def _records(path: Path, fmt: str) -> Iterator[tuple[str, Any]]:
    """``(where, record)`` for every record of the file; raises LayoutError on bad JSON/shape."""
    if fmt == "jsonl":
        with open(path, encoding="utf-8") as fh:
            n_rows = 0
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise LayoutError(f"{path}: line {n} is not JSON ({exc.msg})") from None
                n_rows += 1
                yield f"line {n}", row
            if n_rows == 0:
                raise LayoutError(f"{path} is empty (expected one JSON object per line)")
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LayoutError(f"{path} is not JSON ({exc.msg} at line {exc.lineno})") from None
    except UnicodeDecodeError as exc:
        raise LayoutError(f"{path} is not UTF-8 text ({exc.reason})") from None
    if fmt == "json-list":
        if not isinstance(data, list):
            raise LayoutError(f"{path}: expected a JSON array, found a JSON {type(data).__name__}")
        if not data:
            raise LayoutError(f"{path} is an empty array")
        for i, row in enumerate(data):
            yield f"item {i}", row
    elif fmt == "json-dict":
        if not isinstance(data, dict):
            raise LayoutError(f"{path}: expected a JSON object keyed by id, found a JSON {type(data).__name__}")
        if not data:
            raise LayoutError(f"{path} is an empty object")
        for key, row in data.items():
            yield f"entry {key!r}", row
    else:  # pragma: no cover - a programming error in LAYOUTS
        raise ValueError(f"unknown file format {fmt!r}")


def _has(record: Any, dotted: str) -> bool:
    cur = record
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False
        cur = cur[part]
    return True


def check_file(folder: Path, spec: FileSpec) -> Path:
    """Check one file of a layout; returns its path."""
    path = Path(folder) / spec.path
    if not path.is_file():
        raise LayoutError(f"{path} is missing (the {Path(folder).name or folder} layout needs {spec.path})")
    for where, row in _records(path, spec.format):
        if not isinstance(row, dict):
            raise LayoutError(f"{path}: {where} is a JSON {type(row).__name__}, expected an object")
        for f in spec.fields:
            if not _has(row, f):
                raise LayoutError(f"{path}: {where} has no field {f!r}")
    return path


def validate_layout(benchmark: str, folder: str | Path) -> dict[str, Path]:
    """Check ``folder`` against the layout of ``benchmark``; return ``{relative path: path}`` of
    the files it will read.  Raises :class:`LayoutError` naming the first missing or malformed
    file."""
    layout = layout_of(benchmark)
    folder = Path(folder)
    if not folder.is_dir():
        raise LayoutError(f"benchmark folder {folder} does not exist or is not a directory")
    files = {spec.path: check_file(folder, spec) for spec in layout.files}
    if benchmark == "qasper_pdf":
        files.update(_qasper_pdf_files(folder, files["questions.jsonl"]))
    return files


def _qasper_pdf_files(folder: Path, questions: Path) -> dict[str, Path]:
    out = {}
    for where, row in _records(questions, "jsonl"):
        rel = row["pdf"]
        if not isinstance(rel, str) or not rel or Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise LayoutError(f"{questions}: {where} has a bad pdf path {rel!r} (expected pdfs/<id>.pdf)")
        path = folder / rel
        if not path.is_file():
            raise LayoutError(f"{path} is missing (named by {questions.name} {where})")
        with open(path, "rb") as fh:
            if b"%PDF-" not in fh.read(1024):
                raise LayoutError(f"{path} is not a PDF (no %PDF header)")
        out[rel] = path
    return out


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def data_hashes(files: dict[str, Path] | Iterable[tuple[str, Path]]) -> dict[str, str]:
    """``{relative path: sha256}`` of the files a run read, sorted by path."""
    items = files.items() if isinstance(files, dict) else files
    return {rel: sha256_file(p) for rel, p in sorted(items)}
