"""The section-tree artefact: ``trees/<doc_id>.parquet``, one row per node.

Columns (other stages code against these names; see :data:`TREE_SCHEMA`):

``node_id``       ``"n0"`` for the root, ``"n1"``, ``"n2"``, ... in document order
``doc_id``        the paper
``parent_id``     null for the root
``ordinal``       0-based position among its siblings
``level``         0 for the root, parent's level + 1 below it
``title``         as printed in the paper (the root: the paper's title)
``summary``       1-3 sentences (the root: the abstract)
``page_start``    1-based, inclusive
``page_end``      1-based, inclusive
``verified``      the verifier passed the entry (:mod:`vectree.retrieval.trees.verify`)
``verify_note``   why it failed, or what the verifier corrected on a pass; null otherwise
``repair_rounds`` LLM repair rounds this entry went through (0 offline)
``source``        ``llm`` | ``outline`` | ``layout`` (the root carries its children's source)

Invariants (:func:`check_invariants`): one root covering ``[1, n_pages]``; every child lies inside
its parent's pages; siblings are in page order; every range lies in ``[1, n_pages]``.  A paper
that could not be read (status not ``ok``) gets a root-only tree, or an empty file when it has no
pages at all.  Unverified nodes stay in the tree, marked, and never reach an index
(:func:`indexable_nodes`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

import pyarrow as pa

from vectree.retrieval.store import Store, StoreError, atomic_write_parquet, read_parquet

SOURCES = ("llm", "outline", "layout")

TREE_SCHEMA = pa.schema(
    [
        ("node_id", pa.string()),
        ("doc_id", pa.string()),
        ("parent_id", pa.string()),
        ("ordinal", pa.int32()),
        ("level", pa.int32()),
        ("title", pa.string()),
        ("summary", pa.string()),
        ("page_start", pa.int32()),
        ("page_end", pa.int32()),
        ("verified", pa.bool_()),
        ("verify_note", pa.string()),
        ("repair_rounds", pa.int32()),
        ("source", pa.string()),
    ]
)


@dataclass
class TreeNode:
    """One row of the tree file."""

    node_id: str
    doc_id: str
    parent_id: str | None
    ordinal: int
    level: int
    title: str
    summary: str
    page_start: int
    page_end: int
    verified: bool
    verify_note: str | None
    repair_rounds: int
    source: str

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


def _rows(nodes: Iterable[TreeNode | dict[str, Any]]) -> list[dict[str, Any]]:
    return [n.as_row() if isinstance(n, TreeNode) else dict(n) for n in nodes]


def write_tree(store: Store, doc_id: str, nodes: Sequence[TreeNode | dict[str, Any]]) -> None:
    """Write a paper's tree atomically (an empty ``nodes`` writes the empty marker file)."""
    rows = _rows(nodes)
    for r in rows:
        if r["doc_id"] != doc_id:
            raise ValueError(f"node {r['node_id']} belongs to {r['doc_id']!r}, not {doc_id!r}")
    atomic_write_parquet(store.tree_path(doc_id), pa.Table.from_pylist(rows, schema=TREE_SCHEMA))


def read_tree(store: Store, doc_id: str) -> list[dict[str, Any]]:
    """The nodes of a paper's tree in document order (root first); ``[]`` for the empty marker.

    Raises :class:`StoreError` when the paper has no tree file yet.
    """
    path = store.tree_path(doc_id)
    if not path.exists():
        raise StoreError(f"no section tree for paper {doc_id!r} at {path}")
    rows = read_parquet(path).to_pylist()
    rows.sort(key=lambda r: int(r["node_id"][1:]))
    return rows


def indexable_nodes(nodes: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nodes a search index may hold: verified and not the root."""
    return [n for n in nodes if n["verified"] and n["parent_id"] is not None]


def check_invariants(nodes: Sequence[dict[str, Any]], n_pages: int) -> list[str]:
    """Every way ``nodes`` breaks the tree invariants, as readable messages (``[]`` when sound).

    Checked: unique ids, one root ``n0`` at level 0 covering ``[1, n_pages]``, parents that exist
    and come earlier, levels one below the parent, ranges inside ``[1, n_pages]`` and inside the
    parent, siblings numbered 0.. in page order, known sources.
    """
    problems: list[str] = []
    if not nodes:
        return problems
    by_id: dict[str, dict[str, Any]] = {}
    for n in nodes:
        if n["node_id"] in by_id:
            problems.append(f"duplicate node_id {n['node_id']}")
        by_id[n["node_id"]] = n
    roots = [n for n in nodes if n["parent_id"] is None]
    if len(roots) != 1:
        problems.append(f"expected one root, found {len(roots)}")
    for r in roots:
        if r["node_id"] != "n0" or r["level"] != 0:
            problems.append(f"root {r['node_id']} must be n0 at level 0 (level {r['level']})")
        if (r["page_start"], r["page_end"]) != (1, n_pages):
            problems.append(f"root covers pages {r['page_start']}-{r['page_end']}, the paper has 1-{n_pages}")
    order = {n["node_id"]: i for i, n in enumerate(sorted(nodes, key=lambda n: int(n["node_id"][1:])))}
    children: dict[str, list[dict[str, Any]]] = {}
    for n in nodes:
        nid = n["node_id"]
        if n["source"] not in SOURCES:
            problems.append(f"{nid}: unknown source {n['source']!r}")
        ps, pe = n["page_start"], n["page_end"]
        if not (isinstance(ps, int) and isinstance(pe, int) and 1 <= ps <= pe <= n_pages):
            problems.append(f"{nid}: pages {ps}-{pe} outside 1-{n_pages}")
        pid = n["parent_id"]
        if pid is None:
            continue
        parent = by_id.get(pid)
        if parent is None:
            problems.append(f"{nid}: parent {pid} does not exist")
            continue
        if order[pid] >= order[nid]:
            problems.append(f"{nid}: parent {pid} comes after it")
        if n["level"] != parent["level"] + 1:
            problems.append(f"{nid}: level {n['level']} under a level-{parent['level']} parent")
        if not parent["page_start"] <= ps <= pe <= parent["page_end"]:
            problems.append(
                f"{nid}: pages {ps}-{pe} outside parent {pid} (pages {parent['page_start']}-{parent['page_end']})"
            )
        children.setdefault(pid, []).append(n)
    for pid, kids in children.items():
        kids.sort(key=lambda n: order[n["node_id"]])
        if [k["ordinal"] for k in kids] != list(range(len(kids))):
            problems.append(f"children of {pid} have ordinals {[k['ordinal'] for k in kids]}, expected 0..{len(kids) - 1}")
        for a, b in zip(kids, kids[1:]):
            if b["page_start"] < a["page_start"]:
                problems.append(f"{b['node_id']} starts on page {b['page_start']}, before its previous sibling {a['node_id']} (page {a['page_start']})")
    return problems


def tree_stats(nodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts a person reads: sections (non-root nodes), verified ones, their fraction, depth."""
    sections = [n for n in nodes if n["parent_id"] is not None]
    verified = sum(n["verified"] for n in sections)
    return {
        "nodes": len(nodes),
        "sections": len(sections),
        "verified": verified,
        "unverified": len(sections) - verified,
        "verified_fraction": (verified / len(sections)) if sections else None,
        "depth": max((n["level"] for n in nodes), default=0),
        "repair_rounds": max((n["repair_rounds"] for n in nodes), default=0),
        "source": nodes[0]["source"] if nodes else None,
    }


def assemble_tree(
    doc_id: str,
    root: dict[str, Any],
    entries: Sequence[dict[str, Any]],
    checks: Sequence[Any],
    *,
    source: str,
) -> list[dict[str, Any]]:
    """Tree rows from verified entries: ``root`` needs title, summary, n_pages, verified,
    verify_note; ``entries[i]`` (title, summary, repair_rounds) goes with ``checks[i]`` (an
    :class:`~vectree.retrieval.trees.verify.EntryCheck`: effective range, parent, verdict)."""
    nodes = [
        TreeNode(
            node_id="n0", doc_id=doc_id, parent_id=None, ordinal=0, level=0,
            title=root["title"], summary=root.get("summary") or "",
            page_start=1, page_end=root["n_pages"], verified=bool(root["verified"]),
            verify_note=root.get("verify_note"), repair_rounds=int(root.get("repair_rounds", 0)), source=source,
        ).as_row()
    ]
    kids_seen: dict[int | None, int] = {}
    levels: list[int] = []
    for i, (entry, check) in enumerate(zip(entries, checks)):
        parent = check.parent
        parent_row = nodes[0] if parent is None else nodes[parent + 1]
        ordinal = kids_seen.get(parent, 0)
        kids_seen[parent] = ordinal + 1
        level = parent_row["level"] + 1
        levels.append(level)
        nodes.append(
            TreeNode(
                node_id=f"n{i + 1}", doc_id=doc_id, parent_id=parent_row["node_id"], ordinal=ordinal, level=level,
                title=str(entry.get("title") or "").strip(), summary=str(entry.get("summary") or "").strip(),
                page_start=check.page_start, page_end=check.page_end, verified=check.verified,
                verify_note=check.verify_note, repair_rounds=int(entry.get("repair_rounds", 0)), source=source,
            ).as_row()
        )
    return nodes
