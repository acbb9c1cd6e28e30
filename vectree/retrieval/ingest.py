"""Turning source files into store artefacts.  Library code: the Dagster assets are thin calls here.

* :func:`ingest_paper` writes one paper's artefacts (its record, pages, PDF copy) and nothing else;
* :func:`build_catalog` derives ``docs.parquet`` from the per-paper records and the manifest, and
  deletes the artefacts of papers that left the corpus.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from .corpus import SourceFile
from .injection import page_instruction_like
from .pdf import PARSER_VERSION, parse_pdf
from .store import Store, atomic_copy


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def ingest_paper(store: Store, files: list[SourceFile], *, max_pages: int = 1500) -> dict[str, Any]:
    """Parse the primary copy of one paper and write its artefacts; return the paper record.

    ``files`` are every file with this paper's bytes (the first is parsed).  Bad input does not
    raise: the record's ``status`` and ``error`` say what went wrong, and any artefacts of a
    previous successful parse are left in place until this one has been written.
    """
    primary = files[0]
    instruction_pages: list[int] = []
    # pages stream into the Parquet file as they are extracted: memory stays flat with length
    with store.pages_writer(primary.doc_id) as write_page:
        def on_page(row: dict[str, Any]) -> None:
            # one regex pass over text already extracted: pages that address an AI model
            # ("ignore previous instructions ...") are flagged here, for status, the API and Dagster
            if page_instruction_like(row["text"]):
                instruction_pages.append(row["page_no"])
            write_page(row)

        parsed = parse_pdf(primary.path, max_pages=max_pages, on_page=on_page)
    record: dict[str, Any] = {
        "doc_id": primary.doc_id,
        "slug": primary.doc_id.rsplit("-", 1)[0],
        "sha256": primary.sha256,
        "source_path": primary.path,
        "source_paths": [f.path for f in files],
        "status": parsed.status,
        "error": parsed.error,
        "title": parsed.title or Path(primary.path).stem,
        "authors": parsed.authors,
        "abstract": parsed.abstract,
        "n_pages": parsed.n_pages,
        "n_chars": parsed.n_chars,
        "metadata": parsed.metadata,
        "outline": parsed.outline,
        "warnings": parsed.warnings,
        "instruction_pages": instruction_pages,  # 1-based pages with instruction-like text
        "parser_version": PARSER_VERSION,
        "parse_seconds": round(parsed.seconds, 4),
        "parsed_at": _now(),
    }
    if parsed.n_pages and parsed.pages:
        atomic_copy(Path(primary.path), store.pdf_path(primary.doc_id))
    # the record goes last: a reader that sees it can rely on the pages it describes
    store.write_record(primary.doc_id, record)
    return record


CATALOG_FIELDS = (
    "doc_id", "slug", "title", "authors", "abstract", "n_pages", "n_chars", "sha256",
    "source_path", "source_paths", "status", "error", "parsed_at", "instruction_pages",
)


def build_catalog(store: Store, manifest: list[dict[str, Any]]) -> dict[str, Any]:
    """Rewrite ``docs.parquet`` from the records of the papers in ``manifest``; prune the rest.

    Papers in the manifest without a record yet are listed with status ``pending``.  Returns a
    summary: counts per status and the ids that were removed.
    """
    wanted: dict[str, list[dict]] = {}
    for row in manifest:
        wanted.setdefault(row["doc_id"], []).append(row)
    rows = []
    for doc_id, files in sorted(wanted.items()):
        try:
            rec = store.read_record(doc_id)
        except Exception:
            rec = {
                "doc_id": doc_id, "slug": doc_id.rsplit("-", 1)[0], "title": Path(files[0]["path"]).stem,
                "authors": [], "abstract": "", "n_pages": 0, "n_chars": 0, "sha256": files[0]["sha256"],
                "source_path": files[0]["path"], "status": "pending", "error": "not parsed yet", "parsed_at": None,
            }
        rec["source_paths"] = [f["path"] for f in files]
        rows.append({k: rec.get(k) for k in CATALOG_FIELDS})
    store.write_catalog(rows)
    removed = []
    for doc_id in store.record_ids():
        if doc_id not in wanted:
            store.remove_paper(doc_id)
            removed.append(doc_id)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return {"papers": len(rows), "by_status": counts, "removed": removed}
