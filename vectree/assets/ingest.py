"""Ingest stage: corpus manifest -> per-paper pages -> catalog (``docs.parquet``)."""


import time
from collections import Counter

import dagster as dg

from vectree.retrieval.corpus import SourceFile
from vectree.retrieval.ingest import build_catalog, ingest_paper

from .partitions import (CORPUS, FAILED_KEY, PAPER, PAPER_BACKFILL, batch_keys, finish_batch, failed_paper, paper_check,
                         paper_check_spec, papers_partitions)
from .resources import VectreeStore

GROUP = "ingest"


@dg.asset(
    group_name=GROUP,
    tags=CORPUS,
    kinds={"python", "parquet"},
    description="Scan of the corpus folders: every PDF, its sha256, its paper id, duplicates.",
)
def corpus_manifest(context: dg.AssetExecutionContext, vectree: VectreeStore) -> dg.MaterializeResult:
    files = vectree.scan()
    vectree.store.write_manifest([f.as_row() for f in files])
    duplicates = [f for f in files if f.duplicate_of]
    return dg.MaterializeResult(
        metadata={
            "files": len(files),
            "papers": len({f.doc_id for f in files}),
            "duplicates": len(duplicates),
            "sources": dg.MetadataValue.json(vectree.sources()),
            "path": dg.MetadataValue.path(str(vectree.store.manifest_path)),
        }
    )


@dg.asset(
    group_name=GROUP,
    tags=PAPER,
    kinds={"pymupdf", "parquet"},
    partitions_def=papers_partitions,
    deps=[corpus_manifest],
    backfill_policy=PAPER_BACKFILL,
    check_specs=[paper_check_spec("has_text_layer", "paper_pages",
                                  "The paper has a text layer (per paper: the failing paper is named).")],
    description="Text of every page in reading order, with line layout (bbox, font size, bold), "
    "paper metadata, and a copy of the PDF. Bad files get a status and a reason, not a failure.",
)
def paper_pages(context: dg.AssetExecutionContext, vectree: VectreeStore):
    store = vectree.store
    manifest = store.read_manifest()
    per_paper, failed = {}, {}
    for doc_id in batch_keys(context):
        try:
            metadata, check = _one_paper_pages(context, store, manifest, doc_id, vectree.max_pages)
        except Exception as exc:  # one broken paper never stops the batch
            event = failed_paper(context, "paper_pages", doc_id, exc)
            failed[doc_id] = event.metadata[FAILED_KEY].value
            yield event
            continue
        per_paper[doc_id] = metadata
        yield check
    # the papers whose pages carry instruction-like text, by page (also in a batch's summary)
    flagged = {doc: m["instruction_pages"].value for doc, m in per_paper.items() if m["instruction_pages"].value}
    yield from finish_batch(context, per_paper, failed, instruction_like=dg.MetadataValue.json(flagged))


def _one_paper_pages(context, store, manifest, doc_id: str, max_pages: int):
    files = [SourceFile(**r) for r in manifest if r["doc_id"] == doc_id]
    if not files:
        raise dg.Failure(f"paper {doc_id} is not in the corpus manifest; rematerialize corpus_manifest")
    started = time.perf_counter()
    record = ingest_paper(store, files, max_pages=max_pages)
    ok = record["status"] == "ok"
    if not ok:
        context.log.warning(f"{doc_id}: {record['status']}: {record['error']}")
    flagged = record["instruction_pages"]
    if flagged:
        context.log.warning(f"{doc_id}: instruction-like text (possible prompt injection) on "
                            f"p. {', '.join(map(str, flagged))}")
    metadata = {
        "status": record["status"],
        "error": record["error"] or "",
        "title": record["title"],
        "pages": record["n_pages"],
        "characters": record["n_chars"],
        "source": dg.MetadataValue.path(record["source_path"]),
        "seconds": round(time.perf_counter() - started, 3),
        # 1-based pages with instruction-like text ("ignore previous instructions ..."); [] when none
        "instruction_pages": dg.MetadataValue.json(flagged),
    }
    check = paper_check(
        "paper_pages", "has_text_layer", doc_id, passed=ok,
        description=f"{doc_id} ({record['title'] or 'untitled'}): "
        + ("text layer present" if ok else f"{record['status']}: {record['error']}"),
        severity=dg.AssetCheckSeverity.WARN if record["status"] == "no_text" else dg.AssetCheckSeverity.ERROR,
        metadata={"paper": doc_id, "title": record["title"] or "", "status": record["status"],
                  "reason": record["error"] or "text layer present"},
    )
    return metadata, check


@dg.asset(
    group_name=GROUP,
    tags=CORPUS,
    kinds={"parquet"},
    deps=[paper_pages],
    check_specs=[dg.AssetCheckSpec("every_paper_parsed", asset="paper_catalog")],
    description="docs.parquet: one row per paper with title, abstract, status and error; papers that "
    "left the corpus are removed from the store here.",
)
def paper_catalog(context: dg.AssetExecutionContext, vectree: VectreeStore) -> dg.MaterializeResult:
    store = vectree.store
    summary = build_catalog(store, store.read_manifest())
    rows = store.read_catalog()
    failed = [r for r in rows if r["status"] not in ("ok",)]
    pending = [r["doc_id"] for r in rows if r["status"] == "pending"]
    table = dg.MetadataValue.md(
        "| doc_id | status | reason |\n|---|---|---|\n"
        + "\n".join(f"| {r['doc_id']} | {r['status']} | {(r['error'] or '').replace('|', '/')} |" for r in failed)
    ) if failed else dg.MetadataValue.md("every paper parsed")
    return dg.MaterializeResult(
        metadata={
            "papers": summary["papers"],
            "by_status": dg.MetadataValue.json(dict(Counter(r["status"] for r in rows))),
            "pages": sum(r["n_pages"] or 0 for r in rows if r["status"] == "ok"),
            "removed": dg.MetadataValue.json(summary["removed"]),
            "problems": table,
            # papers with instruction-like text, by page (flagged at ingest, see paper_pages)
            "instruction_like": dg.MetadataValue.json({r["doc_id"]: r["instruction_pages"] for r in rows
                                                       if r["instruction_pages"]}),
            "path": dg.MetadataValue.path(str(store.catalog_path)),
        },
        check_results=[
            dg.AssetCheckResult(
                check_name="every_paper_parsed",
                passed=not pending,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={"pending": dg.MetadataValue.json(pending)},
            )
        ],
    )
