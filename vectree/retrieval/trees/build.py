"""Building one paper's section tree: extract, verify, repair, assemble, write.

:func:`build_tree` is the one entry point (the Dagster asset and the CLI call it):

* papers whose status is not ``ok`` get a root-only tree marked unverified (or an empty tree
  file when they have no pages at all), never an error;
* with an ``llm`` (:class:`vectree.retrieval.llm.LLMClient`), sections come from the model
  (:mod:`vectree.retrieval.trees.llm_extract`), every entry is checked by the verifier, and failing
  entries go back to the model with the reasons and the candidate pages for up to
  ``repair_rounds`` rounds; what still fails stays in the tree, unverified and counted;
* without one, the offline extractor (:mod:`vectree.retrieval.trees.offline`) supplies them and the same
  verifier checks them;
* a model whose replies cannot be used for this paper (not JSON after a retry, no sections),
  or that keeps failing (HTTP 5xx, timeouts) after the client's retries, falls back to the
  offline extractor with a note, recorded in the tree's info; an endpoint that is unreachable
  or refuses the key raises (:class:`vectree.retrieval.llm.LLMUnavailable`, :class:`vectree.retrieval.llm.LLMAuthError`), since that
  is a configuration problem every paper would share.

The root node is the paper: its title, its abstract as the summary, all pages.  It is verified
when the title is printed on page 1 or 2 (:func:`~vectree.retrieval.trees.verify.verify_root`) and is
never indexed either way (:func:`~vectree.retrieval.trees.schema.indexable_nodes`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vectree.retrieval.store import Store

from .llm_extract import DEFAULT_CONTEXT_TOKENS, ExtractConfig, StructuredCaller, extract_sections, repair_sections
from .offline import extract_offline
from .schema import assemble_tree, check_invariants, tree_stats, write_tree
from .verify import prepare_pages, verify_entries, verify_root

DEFAULT_REPAIR_ROUNDS = 2


@dataclass
class TreeResult:
    """What :func:`build_tree` made for one paper."""

    doc_id: str
    nodes: list[dict[str, Any]]
    source: str  # llm | outline | layout, or "none" for a paper without text
    repair_rounds: int = 0  # repair rounds used (LLM path)
    problems: list[str] = field(default_factory=list)  # invariant violations (expected empty)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    path: Path | None = None

    @property
    def stats(self) -> dict[str, Any]:
        return tree_stats(self.nodes)

    @property
    def n_sections(self) -> int:
        return self.stats["sections"]

    @property
    def n_verified(self) -> int:
        return self.stats["verified"]

    @property
    def verified_fraction(self) -> float | None:
        """Verified share of the sections (root excluded); ``None`` when there are none."""
        return self.stats["verified_fraction"]

    @property
    def unverified(self) -> list[dict[str, Any]]:
        return [n for n in self.nodes if n["parent_id"] is not None and not n["verified"]]


def _context_tokens(value: int | None) -> int:
    if value is not None:
        return value
    from vectree.retrieval.config import load_settings

    return load_settings().llm_context_tokens  # VECTREE_LLM_CONTEXT_TOKENS, validated there


def _llm_sections(llm, page_texts, prepared, title: str, repair_rounds: int, config: ExtractConfig, notes: list[str]):
    caller = StructuredCaller(llm, max_tokens=config.max_output)
    try:
        entries = extract_sections(llm, page_texts, title=title, config=config, caller=caller)
        for e in entries:
            e["repair_rounds"] = 0
        verdict = verify_entries(entries, prepared)
        rounds = 0
        while verdict.failures and rounds < repair_rounds:
            rounds += 1
            failures = verdict.failures
            fixes = repair_sections(llm, entries, failures, page_texts, title=title, config=config, caller=caller)
            for check in failures:
                entry = entries[check.index]
                entry["repair_rounds"] = rounds
                for k, v in (fixes.get(check.index) or {}).items():
                    if v not in (None, "") and not (k == "summary" and not v):
                        entry[k] = v
            verdict = verify_entries(entries, prepared)
    finally:
        notes.extend(caller.notes)
    return entries, verdict, rounds


def _unreachable(exc: Exception) -> bool:
    """True when the endpoint could not be reached at all (refused connection, bad host)."""
    import openai

    seen = 0
    while exc is not None and seen < 10:  # the extractor may re-raise the client's error: walk the chain
        if isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def build_tree(
    store: Store,
    doc_id: str,
    *,
    llm: Any = None,
    repair_rounds: int = DEFAULT_REPAIR_ROUNDS,
    context_tokens: int | None = None,
    write: bool = True,
) -> TreeResult:
    """Build (and by default write) the section tree of one stored paper.

    ``llm``: an :class:`vectree.retrieval.llm.LLMClient` (or anything with its ``chat``), or ``None`` for the
    offline extractor.  ``context_tokens`` sizes the LLM's page windows (default
    ``$VECTREE_LLM_CONTEXT_TOKENS`` or 16000).  Raises :class:`~vectree.retrieval.store.StoreError` for a
    paper the store does not know.
    """
    if repair_rounds < 0:
        raise ValueError(f"repair_rounds must be >= 0, got {repair_rounds}")
    started = time.perf_counter()
    record = store.read_record(doc_id)
    status = record.get("status")
    n_pages = int(record.get("n_pages") or 0)
    title = record.get("title") or doc_id
    notes: list[str] = []
    fallback = None
    rounds = 0
    if status != "ok":
        reason = f"paper status {status}: {record.get('error') or 'no reason given'}; no sections extracted"
        nodes = []
        if n_pages > 0 and store.pages_path(doc_id).exists():
            root = {"title": title, "summary": record.get("abstract") or "", "n_pages": n_pages,
                    "verified": False, "verify_note": reason}
            nodes = assemble_tree(doc_id, root, [], [], source="layout")
        notes.append(reason)
        source = "none"
    else:
        pages = store.read_pages(doc_id)
        n_pages = len(pages)
        page_texts = [p["text"] or "" for p in pages]
        prepared = prepare_pages(page_texts)
        root_ok, root_note = verify_root(title, prepared)
        entries = None
        verdict = None
        source = "llm"
        if llm is not None:
            from vectree.retrieval.llm import LLMResponseError, LLMUnavailable

            config = ExtractConfig(context_tokens=_context_tokens(context_tokens))
            try:
                entries, verdict, rounds = _llm_sections(llm, page_texts, prepared, title, repair_rounds, config, notes)
                if not entries:
                    fallback = "the model found no sections; used the offline extractor"
                    notes.append(fallback)
                    entries = None
            except LLMResponseError as exc:
                fallback = f"LLM replies unusable for this paper ({str(exc)[:200]}); used the offline extractor"
                notes.append(fallback)
                entries = None
            except LLMUnavailable as exc:
                if _unreachable(exc):  # a wrong endpoint is configuration every paper shares: say so
                    raise
                # the server answered 5xx (or timed out) after the client's retries: this paper
                # gets the offline tree, and the fallback is recorded (tree info, status detail)
                fallback = f"LLM failed ({str(exc)[:200]}); used the offline extractor"
                notes.append(fallback)
                entries = None
        if entries is None:
            offline = extract_offline(record, pages)
            entries, source = offline.entries, offline.source
            notes.extend(offline.notes)
            verdict = verify_entries(entries, prepared)
        for e, check in zip(entries, verdict.checks):
            if not check.verified and e.get("repair_rounds"):
                check.reasons.append(f"still failing after {e['repair_rounds']} repair round(s)")
        root = {"title": title, "summary": record.get("abstract") or "", "n_pages": n_pages,
                "verified": root_ok, "verify_note": root_note}
        nodes = assemble_tree(doc_id, root, entries, verdict.checks, source=source)
    problems = check_invariants(nodes, n_pages) if nodes else []
    result = TreeResult(
        doc_id=doc_id, nodes=nodes, source=source, repair_rounds=rounds, problems=problems, notes=notes,
        seconds=time.perf_counter() - started,
    )
    if write:
        write_tree(store, doc_id, nodes)
        # how the tree was made, for the paper's status (an LLM fallback is recorded, not hidden)
        store.write_tree_info(doc_id, {"source": source, "llm": llm is not None, "fallback": fallback,
                                       "notes": notes[:20], "built_at": time.time()})
        result.path = store.tree_path(doc_id)
    return result
