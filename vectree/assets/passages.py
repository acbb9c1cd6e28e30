"""Within-paper passages with vectors: what ``search_within_paper`` ranks (see retrieval.passages)."""

import time

import dagster as dg

from vectree.retrieval.embed import get_embedder
from vectree.retrieval.passages import (build_passages, build_passages_batch, passages_path, stream_passages,
                                       write_passages)
from vectree.retrieval.store import StoreError
from vectree.retrieval.trees.schema import read_tree

from .resources import VectreeStore
from .partitions import FAILED_KEY, PAPER, PAPER_BACKFILL, batch_keys, finish_batch, failed_paper, papers_partitions

# papers are embedded together until their pages hold this much text (~3,000 sentences): full
# model batches across papers, with memory bounded whatever the batch size
EMBED_BATCH_CHARS = 400_000
# a paper whose pages file is larger than this (a book, a thesis) is never held whole: its
# passages are embedded and written a batch at a time by ``stream_passages``
STREAM_ABOVE_BYTES = 256 * 1024


def _tree_or_empty(store, doc_id):
    try:
        return read_tree(store, doc_id)
    except StoreError:
        return []


@dg.asset(
    group_name="trees",
    tags=PAPER,
    kinds={"parquet", "pytorch"},
    partitions_def=papers_partitions,
    deps=["paper_pages", "section_tree"],
    backfill_policy=PAPER_BACKFILL,
    description="Paragraph passages of every page with their section and a MiniLM vector, "
    "so a within-paper search embeds only the query.",
)
def paper_passages(context: dg.AssetExecutionContext, vectree: VectreeStore):
    store = vectree.store
    embedder = get_embedder()
    per_paper, failed = {}, {}
    inputs: list[tuple[str, dict, list, list]] = []  # (doc_id, record, pages, tree) waiting for vectors
    waiting = 0

    def flush():
        # one embedding pass over the sentences of every waiting paper, then one file per paper
        nonlocal waiting
        started = time.perf_counter()
        try:
            tables = build_passages_batch([(pages, tree) for _, _, pages, tree in inputs], embedder)
        except Exception:
            tables = None  # embed paper by paper below, so that only the broken one fails
        seconds = (time.perf_counter() - started) / max(1, len(inputs))
        for k, (doc_id, record, pages, tree) in enumerate(inputs):
            try:
                table = tables[k] if tables is not None else build_passages(pages, tree, embedder)
                write_passages(store, doc_id, table)
            except Exception as exc:
                event = failed_paper(context, "paper_passages", doc_id, exc)
                failed[doc_id] = event.metadata[FAILED_KEY].value
                yield event
                continue
            per_paper[doc_id] = {
                "passages": table.num_rows,
                "pages_with_passages": len(set(table.column("page_no").to_pylist())),
                "embedding_model": embedder.name,
                "paper_status": record["status"],
                "seconds": round(seconds, 3),
                "path": dg.MetadataValue.path(str(passages_path(store, doc_id))),
            }
        inputs.clear()
        waiting = 0

    for doc_id in batch_keys(context):
        try:
            record = store.read_record(doc_id)
            if record["status"] in ("ok", "no_text") and store.pages_path(doc_id).stat().st_size > STREAM_ABOVE_BYTES:
                started = time.perf_counter()
                stats = stream_passages(store, doc_id, _tree_or_empty(store, doc_id), embedder)
                per_paper[doc_id] = {
                    "passages": stats["passages"],
                    "pages_with_passages": stats["pages_with_passages"],
                    "embedding_model": embedder.name,
                    "paper_status": record["status"],
                    "streamed": True,
                    "seconds": round(time.perf_counter() - started, 3),
                    "path": dg.MetadataValue.path(str(passages_path(store, doc_id))),
                }
                continue
            pages = store.read_pages(doc_id) if record["status"] in ("ok", "no_text") else []
            tree = _tree_or_empty(store, doc_id)
        except Exception as exc:  # one broken paper never stops the batch
            event = failed_paper(context, "paper_passages", doc_id, exc)
            failed[doc_id] = event.metadata[FAILED_KEY].value
            yield event
            continue
        inputs.append((doc_id, record, pages, tree))
        waiting += sum(len(p["text"]) for p in pages)
        if waiting >= EMBED_BATCH_CHARS:
            yield from flush()
    if inputs:
        yield from flush()
    yield from finish_batch(context, per_paper, failed)
