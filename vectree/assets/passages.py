"""Within-paper passages with vectors: what ``search_within_paper`` ranks (see retrieval.passages)."""

import time

import dagster as dg

from vectree.retrieval.embed import get_embedder
from vectree.retrieval.passages import passages_path, stream_passages
from vectree.retrieval.store import StoreError
from vectree.retrieval.trees.schema import read_tree

from .partitions import PAPER, papers_partitions
from .resources import VectreeStore


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
    description="Paragraph passages of every page with their section and a MiniLM vector, "
    "so a within-paper search embeds only the query.",
)
def paper_passages(context: dg.AssetExecutionContext, vectree: VectreeStore) -> dg.MaterializeResult:
    doc_id = context.partition_key
    store = vectree.store
    started = time.perf_counter()
    record = store.read_record(doc_id)
    # pages are read and embedded a batch at a time: memory stays flat with the paper's length
    pages = None if record["status"] in ("ok", "no_text") else []
    embedder = get_embedder()
    stats = stream_passages(store, doc_id, _tree_or_empty(store, doc_id), embedder, pages=pages)
    return dg.MaterializeResult(
        metadata={
            "passages": stats["passages"],
            "pages_with_passages": stats["pages_with_passages"],
            "embedding_model": embedder.name,
            "paper_status": record["status"],
            "seconds": round(time.perf_counter() - started, 3),
            "path": dg.MetadataValue.path(str(passages_path(store, doc_id))),
        }
    )
