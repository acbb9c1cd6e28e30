"""Search stage: the Layer 0 corpus index (Tantivy BM25 + LanceDB vectors over compact entries)."""


import time
from collections import Counter

import dagster as dg

from vectree.retrieval.search import read_entries, update_index

from .partitions import CORPUS
from .resources import VectreeStore

GROUP = "search"


def _mib(n: int) -> float:
    return round(n / 2**20, 3)


@dg.asset(
    group_name=GROUP,
    tags=CORPUS,
    kinds={"tantivy", "lancedb"},
    deps=["section_tree", "paper_catalog"],
    check_specs=[dg.AssetCheckSpec("one_paper_entry_per_paper", asset="search_index")],
    description="Hybrid search index over one entry per paper (title, abstract, section titles) and one per "
    "verified section (title, summary); full page text is never indexed. Only papers that changed are "
    "re-embedded; each build is published as a new snapshot, atomically.",
)
def search_index(context: dg.AssetExecutionContext, vectree: VectreeStore) -> dg.MaterializeResult:
    store = vectree.store
    started = time.perf_counter()
    report = update_index(store)
    seconds = time.perf_counter() - started
    if report.mode != "unchanged":
        context.log.info(f"search index {report.mode}: snapshot {report.snapshot_id}, {report.entries} entries, "
                         f"{report.embedded} embedded ({report.reason})")

    entries = read_entries(store)
    per_paper = Counter(e.doc_id for e in entries if e.kind == "paper")
    ok = [r["doc_id"] for r in store.papers(status="ok")]
    missing = sorted(d for d in ok if per_paper.get(d, 0) == 0)
    duplicated = sorted(d for d, n in per_paper.items() if n > 1)
    stray = sorted(set(per_paper) - set(ok))  # indexed but no longer an ok paper
    sections = Counter(e.doc_id for e in entries if e.kind == "section")
    return dg.MaterializeResult(
        metadata={
            "snapshot": report.snapshot_id,
            "mode": report.mode,
            "reason": report.reason,
            "entries": report.entries,
            "papers": report.papers,
            "section_entries": sum(sections.values()),
            "papers_without_sections": sum(1 for d in ok if not sections.get(d)),
            "embedded_now": report.embedded,
            "added": dg.MetadataValue.json(report.added),
            "changed": dg.MetadataValue.json(report.changed),
            "removed": dg.MetadataValue.json(report.removed),
            "bm25_mib": _mib(report.bytes.get("bm25", 0)),
            "vectors_mib": _mib(report.bytes.get("vectors", 0)),
            "total_mib": _mib(report.bytes.get("total", 0)),
            "vector_index": report.vector_index,
            "embedder": dg.MetadataValue.json(report.embedder),
            "build_seconds": round(seconds, 3),
            "path": dg.MetadataValue.path(str(store.index_snapshot_dir(report.snapshot_id))),
        },
        check_results=[
            dg.AssetCheckResult(
                check_name="one_paper_entry_per_paper",
                passed=not (missing or duplicated or stray),
                metadata={
                    "ok_papers": len(ok),
                    "missing": dg.MetadataValue.json(missing[:50]),
                    "duplicated": dg.MetadataValue.json(duplicated[:50]),
                    "not_ok_but_indexed": dg.MetadataValue.json(stray[:50]),
                },
            )
        ],
    )
