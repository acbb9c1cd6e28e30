"""Paper-id resolution: what a user types (a full id, a unique prefix, a title) to a ``doc_id``.

A pure function over catalog rows (``Store.read_catalog()``), so the CLI and the HTTP service give
the same answers: an exact id wins, a unique prefix resolves, an ambiguous prefix lists its
candidates, and an unknown id suggests the papers whose ids or titles come closest (difflib).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Iterable, Mapping

MAX_CANDIDATES = 10
MAX_SUGGESTIONS = 5


@dataclass(eq=False)
class DocIdError(LookupError):
    """``query`` names no single paper; ``candidates`` are ids that fit (ambiguous prefix) or
    come closest (unknown id), each with its title."""

    query: str
    candidates: list[tuple[str, str]] = field(default_factory=list)
    n_papers: int = 0

    def __str__(self) -> str:  # the message the CLI prints and the service returns
        return self.message()

    def message(self) -> str:
        raise NotImplementedError


@dataclass(eq=False)
class AmbiguousDocId(DocIdError):
    n_matches: int = 0

    def message(self) -> str:
        shown = "; ".join(f"{d} ({t})" if t else d for d, t in self.candidates)
        more = f" and {self.n_matches - len(self.candidates)} more" if self.n_matches > len(self.candidates) else ""
        return f"paper id {self.query!r} is ambiguous: {self.n_matches} papers start with it: {shown}{more}"


@dataclass(eq=False)
class UnknownDocId(DocIdError):
    def message(self) -> str:
        if not self.n_papers:
            return f"unknown paper id {self.query!r}: the store holds no papers yet (run vectree ingest PATH)"
        if not self.candidates:
            return f"unknown paper id {self.query!r} (see vectree papers for the {self.n_papers} ids)"
        shown = "; ".join(f"{d} ({t})" if t else d for d, t in self.candidates)
        return f"unknown paper id {self.query!r}; did you mean: {shown}"


def _title(row: Mapping) -> str:
    return str(row.get("title") or "")


def resolve_doc_id(query: str, rows: Iterable[Mapping]) -> str:
    """The ``doc_id`` among ``rows`` (dicts with ``doc_id`` and ``title``) that ``query`` names.

    Raises :class:`AmbiguousDocId` when ``query`` is a prefix of several ids and
    :class:`UnknownDocId` (with close ids or titles as suggestions) when it fits none.
    """
    papers = {str(r["doc_id"]): _title(r) for r in rows}
    q = query.strip()
    if q in papers:
        return q
    low = q.lower()
    matches = sorted(d for d in papers if d.startswith(low))
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise AmbiguousDocId(q, [(d, papers[d]) for d in matches[:MAX_CANDIDATES]], len(papers), len(matches))
    raise UnknownDocId(q, suggest(q, papers), len(papers))


def suggest(query: str, papers: Mapping[str, str], n: int = MAX_SUGGESTIONS) -> list[tuple[str, str]]:
    """Papers whose id or title is closest to ``query`` (difflib ratio), best first."""
    low = query.lower()
    scored: dict[str, float] = {}
    for doc_id, title in papers.items():
        slug = doc_id.rsplit("-", 1)[0]
        candidates = [doc_id, slug, title.lower()]
        # a query that is one word of a long title scores low as a whole; score it against the words too
        candidates += title.lower().split()
        best = max(difflib.SequenceMatcher(None, low, c).ratio() for c in candidates if c)
        if low and low in title.lower():
            best = max(best, 0.9)
        scored[doc_id] = best
    ranked = sorted((d for d, s in scored.items() if s >= 0.6), key=lambda d: (-scored[d], d))
    return [(d, papers[d]) for d in ranked[:n]]
