"""Section-tree stage: per paper, a source-verified section tree (see ``vectree.retrieval.trees``)."""

import dagster as dg

from vectree.retrieval.trees.build import DEFAULT_REPAIR_ROUNDS, build_tree
from vectree.retrieval.trees.schema import check_invariants, read_tree, tree_stats

from .llm_resource import LLMResource
from .partitions import (FAILED_KEY, PAPER, PAPER_BACKFILL, batch_keys, finish_batch, failed_paper, paper_check,
                         paper_check_spec, papers_partitions)
from .resources import VectreeStore

GROUP = "trees"
VERIFIED_WARN_THRESHOLD = 0.9
_PREVIEW_LINES = 40


class SectionTreeConfig(dg.Config):
    """Run configuration of ``section_tree`` (every field has a default)."""

    repair_rounds: int = DEFAULT_REPAIR_ROUNDS  # LLM repair rounds for entries that fail verification
    min_verified_fraction: float = VERIFIED_WARN_THRESHOLD  # below this the tree_verified check warns
    use_llm: bool = True  # use the LLM when OPENAI_BASE_URL is set; False forces the offline extractor


def _preview(nodes: list) -> str:
    lines = []
    for n in nodes[:_PREVIEW_LINES]:
        mark = "✓" if n["verified"] else "✗"
        pages = f"p. {n['page_start']}" if n["page_start"] == n["page_end"] else f"pp. {n['page_start']}-{n['page_end']}"
        note = f" — {n['verify_note']}" if not n["verified"] and n["verify_note"] else ""
        lines.append(f"{'  ' * n['level']}- {mark} {n['title']} ({pages}){note}")
    if len(nodes) > _PREVIEW_LINES:
        lines.append(f"- … {len(nodes) - _PREVIEW_LINES} more nodes")
    return "\n".join(lines) or "(empty tree: the paper has no pages)"


@dg.asset(
    group_name=GROUP,
    tags=PAPER,
    kinds={"python", "parquet"},
    partitions_def=papers_partitions,
    deps=["paper_pages"],
    backfill_policy=PAPER_BACKFILL,
    check_specs=[
        paper_check_spec(
            "tree_invariants", "section_tree",
            "Children inside their parent's pages, siblings in page order, ranges inside the paper.",
        ),
        paper_check_spec(
            "tree_verified", "section_tree",
            "Share of sections whose title the verifier found on their page (warns below the threshold).",
        ),
    ],
    description="The paper's section hierarchy (title, summary, page range per node), every entry checked "
    "against the page text. LLM extraction with repair rounds when OPENAI_BASE_URL is set, else the PDF "
    "outline or layout headings. Unverified entries stay in the tree, marked, and never reach an index.",
)
def section_tree(context: dg.AssetExecutionContext, vectree: VectreeStore, llm: LLMResource, config: SectionTreeConfig):
    store = vectree.store
    client = llm.client() if config.use_llm else None
    per_paper, failed = {}, {}
    for doc_id in batch_keys(context):
        try:
            metadata, checks = _one_section_tree(context, store, doc_id, llm, client, config)
        except dg.Failure:
            raise  # the LLM endpoint is down or refuses the key: every paper would fail alike
        except Exception as exc:  # one broken paper never stops the batch
            event = failed_paper(context, "section_tree", doc_id, exc)
            failed[doc_id] = event.metadata[FAILED_KEY].value
            yield event
            continue
        per_paper[doc_id] = metadata
        yield from checks
    yield from finish_batch(context, per_paper, failed)


def _one_section_tree(context, store, doc_id: str, llm: LLMResource, client, config: SectionTreeConfig):
    try:
        result = build_tree(store, doc_id, llm=client, repair_rounds=config.repair_rounds,
                            context_tokens=llm.context_tokens)
    except Exception as exc:
        from vectree.retrieval.llm import LLMAuthError, LLMUnavailable

        if isinstance(exc, (LLMUnavailable, LLMAuthError)):
            raise dg.Failure(
                description=f"{doc_id}: {exc}. Fix the endpoint, or unset OPENAI_BASE_URL to build trees offline.",
                metadata={"endpoint": llm.base_url, "model": llm.model},
            ) from exc
        raise
    for note in result.notes:
        context.log.info(f"{doc_id}: {note}")
    # the checks read what was written, not what was meant to be
    record = store.read_record(doc_id)
    nodes = read_tree(store, doc_id)
    stats = tree_stats(nodes)
    problems = check_invariants(nodes, int(record.get("n_pages") or 0)) if nodes else []
    frac = stats["verified_fraction"]
    paper_ok = record.get("status") == "ok"
    unverified = [n for n in nodes if n["parent_id"] is not None and not n["verified"]]
    if not paper_ok:
        verified_passed, why = True, f"paper status {record.get('status')}: no sections expected"
    elif not stats["sections"]:
        verified_passed, why = False, "no sections found: the tree is the root only"
    else:
        verified_passed = frac >= config.min_verified_fraction
        why = f"{stats['verified']}/{stats['sections']} sections verified (threshold {config.min_verified_fraction:.0%})"
    # each check names its paper: the UI lists check results per partition, and a reader of one
    # result should not need the partition key to know which PDF it is about
    paper = {"paper": doc_id, "title": record.get("title") or ""}
    named = f"{doc_id} ({record.get('title') or 'untitled'})"
    metadata = {
            "nodes": stats["nodes"],
            "sections": stats["sections"],
            "verified": stats["verified"],
            "unverified": stats["unverified"],
            "verified_fraction": round(frac, 4) if frac is not None else dg.MetadataValue.null(),
            "repair_rounds": result.repair_rounds,
            "source": result.source,
            "depth": stats["depth"],
            "paper_status": record.get("status"),
            "notes": dg.MetadataValue.json(result.notes),
            "tree": dg.MetadataValue.md(_preview(nodes)),
            "seconds": round(result.seconds, 3),
            "path": dg.MetadataValue.path(str(store.tree_path(doc_id))),
    }
    checks = [
            paper_check(
                "section_tree", "tree_invariants", doc_id,
                passed=not problems,
                severity=dg.AssetCheckSeverity.ERROR,
                description=f"{named}: " + (f"{len(problems)} problems, first: {problems[0]}" if problems
                                             else "tree invariants hold"),
                metadata={**paper, "problems": dg.MetadataValue.json(problems[:50]), "nodes": stats["nodes"]},
            ),
            paper_check(
                "section_tree", "tree_verified", doc_id,
                passed=verified_passed,
                severity=dg.AssetCheckSeverity.WARN,
                description=f"{named}: {why}",
                metadata={
                    **paper,
                    "reason": why,
                    "verified_fraction": round(frac, 4) if frac is not None else dg.MetadataValue.null(),
                    "unverified": dg.MetadataValue.json(
                        [{"node": n["node_id"], "title": n["title"], "note": n["verify_note"]} for n in unverified[:30]]
                    ),
                },
            ),
    ]
    return metadata, checks
