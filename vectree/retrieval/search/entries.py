"""Compact search entries: what Layer 0 indexes instead of passages.

One **paper entry** per paper (title, abstract, section titles) and one **section entry** per
*verified*, non-root node of the paper's section tree (section title and its summary).  Full
page text is never an entry: it stays in the page store and is read by the agent's tools after
search has picked the papers.  An unverified section (one whose summary or page range the tree
builder could not check against the source) never becomes an entry.

Entries are plain data, independent of any backend; :func:`paper_fingerprints` gives a per-paper
content hash so an index update can tell which papers changed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Iterator

import pyarrow as pa

from vectree.retrieval.trees.schema import indexable_nodes, read_tree

PAPER = "paper"
SECTION = "section"

# How many section titles go into a paper entry: enough to say what the paper covers, few enough
# that the entry stays compact (MiniLM reads 256 word pieces; the rest would be cut anyway).
MAX_SECTION_TITLES = 40

ENTRY_SCHEMA = pa.schema(
    [
        ("entry_id", pa.string()),  # "<doc_id>#paper" or "<doc_id>#<node_id>"
        ("doc_id", pa.string()),
        ("node_id", pa.string()),  # null for a paper entry
        ("kind", pa.string()),  # paper | section
        ("title", pa.string()),
        ("body", pa.string()),
        ("page_start", pa.int32()),  # 1-based inclusive; a paper entry spans the whole paper
        ("page_end", pa.int32()),
    ]
)


@dataclass(frozen=True)
class EntryHit:
    """One entry returned by a backend (BM25 or dense), best first; ``score`` is the backend's own."""

    entry_id: str
    doc_id: str
    node_id: str | None
    kind: str
    title: str
    page_start: int | None
    page_end: int | None
    score: float


@dataclass(frozen=True)
class Entry:
    """One indexed unit.  ``body`` is the abstract (+ section titles) or the section summary."""

    entry_id: str
    doc_id: str
    node_id: str | None
    kind: str
    title: str
    body: str
    page_start: int | None = None
    page_end: int | None = None

    @property
    def text(self) -> str:
        """The text that is embedded: title and body on separate lines."""
        return f"{self.title}\n{self.body}".strip() if self.title else self.body

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


def paper_entry(doc_id: str, title: str | None, abstract: str | None, section_titles: Iterable[str] = (),
                n_pages: int | None = None) -> Entry:
    """The paper entry: title, abstract, then the section titles on one line."""
    titles = [t.strip() for t in section_titles if t and t.strip()][:MAX_SECTION_TITLES]
    body = (abstract or "").strip()
    if titles:
        body = f"{body}\nSections: {'; '.join(titles)}".strip()
    return Entry(
        entry_id=f"{doc_id}#paper", doc_id=doc_id, node_id=None, kind=PAPER, title=(title or "").strip(),
        body=body, page_start=1 if n_pages else None, page_end=int(n_pages) if n_pages else None,
    )


def section_entry(doc_id: str, node_id: Any, title: str | None, summary: str | None,
                  page_start: int | None, page_end: int | None) -> Entry:
    return Entry(
        entry_id=f"{doc_id}#{node_id}", doc_id=doc_id, node_id=str(node_id), kind=SECTION,
        title=(title or "").strip(), body=(summary or "").strip(),
        page_start=None if page_start is None else int(page_start),
        page_end=None if page_end is None else int(page_end),
    )


def entries_for_paper(doc_id: str, title: str | None, abstract: str | None, tree_rows: list[dict[str, Any]] | None,
                      *, n_pages: int | None = None, outline: list | None = None) -> list[Entry]:
    """The paper entry and its section entries (``tree_rows`` in document order, as
    :func:`vectree.retrieval.trees.read_tree` returns them; only :func:`vectree.retrieval.trees.indexable_nodes`
    become entries: verified, not the root).

    Section titles in the paper entry come from the verified sections; with no tree at all they
    come from the PDF's own outline (the embedded table of contents, which is source text too).
    """
    nodes = indexable_nodes(tree_rows or [])
    if nodes:
        section_titles = [n.get("title") or "" for n in nodes]
    else:
        section_titles = [item[1] for item in (outline or []) if len(item) >= 2 and isinstance(item[1], str)]
    entries = [paper_entry(doc_id, title, abstract, section_titles, n_pages=n_pages)]
    for n in nodes:
        if not (n.get("title") or n.get("summary")):
            continue  # nothing to match on
        entries.append(section_entry(doc_id, n["node_id"], n.get("title"), n.get("summary"),
                                     n.get("page_start"), n.get("page_end")))
    return entries


def read_tree_rows(store, doc_id: str) -> list[dict[str, Any]] | None:
    """Nodes of ``trees/<doc_id>.parquet`` in document order, or ``None`` when the paper has no
    tree (yet)."""
    if not store.tree_path(doc_id).exists():
        return None
    return read_tree(store, doc_id)


def store_entries(store, doc_ids: Iterable[str] | None = None) -> Iterator[Entry]:
    """Entries of every ``ok`` paper in the store's catalog (or of the given ones among them)."""
    wanted = None if doc_ids is None else set(doc_ids)
    for row in store.papers(status="ok"):
        doc_id = row["doc_id"]
        if wanted is not None and doc_id not in wanted:
            continue
        outline = None
        try:
            outline = store.read_record(doc_id).get("outline")
        except Exception:  # a missing record only costs the outline fallback
            outline = None
        yield from entries_for_paper(doc_id, row.get("title"), row.get("abstract"), read_tree_rows(store, doc_id),
                                     n_pages=row.get("n_pages"), outline=outline)


def entries_table(entries: Iterable[Entry]) -> pa.Table:
    return pa.Table.from_pylist([e.as_row() for e in entries], schema=ENTRY_SCHEMA)


def entries_from_table(table: pa.Table) -> list[Entry]:
    return [Entry(**row) for row in table.to_pylist()]


def group_by_paper(entries: Iterable[Entry]) -> dict[str, list[Entry]]:
    out: dict[str, list[Entry]] = {}
    for e in entries:
        out.setdefault(e.doc_id, []).append(e)
    return out


def paper_fingerprints(entries: Iterable[Entry]) -> dict[str, str]:
    """doc_id -> sha256 of that paper's entries (order-sensitive): equal hash, nothing to redo."""
    out = {}
    for doc_id, group in group_by_paper(entries).items():
        payload = json.dumps([e.as_row() for e in group], sort_keys=True, ensure_ascii=False).encode()
        out[doc_id] = hashlib.sha256(payload).hexdigest()[:20]
    return out
