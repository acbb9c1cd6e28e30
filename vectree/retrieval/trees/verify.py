"""The deterministic verifier: does each section entry say what the pages say?

Pure functions, no LLM, no I/O.  An entry is a mapping with ``title``, ``level`` (1 = top
section), ``page_start`` and ``page_end`` (1-based, inclusive).  Entries come as a flat list in
document order; the tree is implied by the levels (an entry's parent is the nearest earlier
entry with a smaller level, the root covering all pages when there is none).

An entry **passes** when

1. its title, normalised (:mod:`vectree.retrieval.trees.normalize`), occurs on page ``page_start - 1``,
   ``page_start`` or ``page_start + 1`` (the +/-1 tolerance); when it is found on a neighbouring
   page, the page where it really is becomes ``page_start`` (and ``page_end`` grows to at least
   that page).  Among the candidate pages, an occurrence at the start of a line (where headings
   are printed) wins over one inside running text; ties go to the claimed page, then the next
   one, then the previous one;
2. its (corrected) range lies in ``[1, n_pages]`` with ``page_start <= page_end``;
3. the range lies inside its parent's range;
4. it does not start before its previous sibling (siblings are in page order).

Every entry also gets an *effective* range, the one the tree stores: the corrected range when it
passes, otherwise its claim clamped into what the invariants allow (inside the parent, not before
the previous sibling, inside the document); an entry whose title is not found starts at the
earliest allowed page, so a wrong claim does not push correct siblings out of order.  Children are checked against their parent's effective
range, so a tree assembled from effective ranges satisfies the invariants by construction while
every failure stays reported with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .normalize import MatchText


@dataclass
class EntryCheck:
    """The verdict on one entry."""

    index: int
    verified: bool
    page_start: int  # effective range (corrected when verified, clamped otherwise)
    page_end: int
    parent: int | None  # index of the parent entry, None for a top-level entry
    reasons: list[str] = field(default_factory=list)  # why it failed (empty when verified)
    note: str | None = None  # what was corrected on a pass, e.g. "title found on page 4, claimed 3"
    found_page: int | None = None  # page of the title within the tolerance window
    elsewhere: list[int] = field(default_factory=list)  # pages outside the window where the title is

    @property
    def verify_note(self) -> str | None:
        return "; ".join(self.reasons) if self.reasons else self.note


@dataclass
class VerifyResult:
    checks: list[EntryCheck]
    n_pages: int

    @property
    def failures(self) -> list[EntryCheck]:
        return [c for c in self.checks if not c.verified]

    @property
    def n_verified(self) -> int:
        return sum(c.verified for c in self.checks)

    @property
    def verified_fraction(self) -> float | None:
        return self.n_verified / len(self.checks) if self.checks else None


def parents_from_levels(levels: Sequence[int]) -> list[int | None]:
    """Index of each entry's parent: the nearest earlier entry with a smaller level."""
    parents: list[int | None] = []
    stack: list[int] = []
    for i, level in enumerate(levels):
        while stack and levels[stack[-1]] >= level:
            stack.pop()
        parents.append(stack[-1] if stack else None)
        stack.append(i)
    return parents


def _as_int(value: Any) -> int | None:
    try:
        if isinstance(value, bool):
            return None
        return int(value)
    except (TypeError, ValueError):
        return None


def find_title(title: str | MatchText, pages: Sequence[MatchText], candidates: Sequence[int]) -> int | None:
    """The first page of ``candidates`` (1-based) holding ``title`` at a line start, else the first
    holding it anywhere, else ``None``."""
    anywhere = None
    for p in candidates:
        if 1 <= p <= len(pages):
            hits = pages[p - 1].find(title)
            if any(at_line for _, at_line in hits):
                return p
            if hits and anywhere is None:
                anywhere = p
    return anywhere


def prepare_pages(page_texts: Sequence[str]) -> list[MatchText]:
    """Page texts in matching form (do this once per paper when verifying repeatedly)."""
    return [MatchText.of(t) for t in page_texts]


def verify_entries(
    entries: Sequence[Mapping[str, Any]],
    page_texts: Sequence[str] | Sequence[MatchText],
    *,
    parents: Sequence[int | None] | None = None,
) -> VerifyResult:
    """Check every entry against the page texts (index ``i`` holds page ``i + 1``).

    ``parents`` overrides the tree implied by the entries' levels.  Never raises for bad entry
    values (missing title, non-integer pages): they fail with a reason.
    """
    pages = [p if isinstance(p, MatchText) else MatchText.of(p) for p in page_texts]
    n_pages = len(pages)
    if parents is None:
        parents = parents_from_levels([_as_int(e.get("level")) or 1 for e in entries])
    checks: list[EntryCheck] = []
    last_child_start: dict[int | None, int] = {}  # parent index -> effective start of its last child
    for i, entry in enumerate(entries):
        parent = parents[i]
        lo, hi = (1, n_pages) if parent is None else (checks[parent].page_start, checks[parent].page_end)
        floor = max(lo, last_child_start.get(parent, lo))
        reasons: list[str] = []
        note = None
        title = str(entry.get("title") or "").strip()
        ps, pe = _as_int(entry.get("page_start")), _as_int(entry.get("page_end"))
        if pe is None:
            pe = ps
        found = None
        elsewhere: list[int] = []
        key = MatchText.of(title)
        if not key.joined:
            reasons.append("empty title")
        elif ps is None:
            reasons.append(f"page_start {entry.get('page_start')!r} is not a page number")
        else:
            window = [ps, ps + 1, ps - 1]
            found = find_title(key, pages, window)
            if found is None:
                elsewhere = [p for p in range(1, n_pages + 1) if p not in window and pages[p - 1].contains(key)]
                where = f"; it appears on page(s) {', '.join(map(str, elsewhere[:5]))}" if elsewhere else ""
                span = f"{max(1, ps - 1)}-{min(n_pages, ps + 1)}" if n_pages else "none"
                reasons.append(f"title not found on pages {span} (claimed page {ps}){where}")
            elif found != ps:
                note = f"title found on page {found}, claimed {ps}"
                ps, pe = found, max(pe, found)
        if ps is not None and not reasons:
            if not 1 <= ps <= pe <= n_pages:
                reasons.append(f"pages {ps}-{pe} outside the document (1-{n_pages})")
            elif not lo <= ps <= pe <= hi:
                owner = f"its parent {entries[parent].get('title')!r}" if parent is not None else "the paper"
                reasons.append(f"pages {ps}-{pe} outside {owner} (pages {lo}-{hi})")
            elif ps < floor:
                reasons.append(f"starts on page {ps}, before its previous sibling (page {floor})")
        verified = not reasons
        if verified:
            eff_start, eff_end = ps, pe
        else:
            # clamp the claim into what the invariants allow; the tree keeps the node, marked.  A
            # title found nowhere near its claim says nothing about its page, so it sits at the
            # earliest allowed page rather than pushing its later siblings out of order
            claim_s = ps if ps is not None and found is not None else floor
            claim_e = pe if pe is not None else claim_s
            eff_start = min(max(claim_s, floor), hi) if hi >= floor else floor
            eff_end = min(max(claim_e, eff_start), hi)
            if hi < floor:  # empty parent window (cannot happen with valid parents); stay in the document
                eff_start = eff_end = max(1, min(floor, n_pages))
        checks.append(
            EntryCheck(
                index=i, verified=verified, page_start=eff_start, page_end=eff_end, parent=parent,
                reasons=reasons, note=note, found_page=found, elsewhere=elsewhere,
            )
        )
        last_child_start[parent] = eff_start
    return VerifyResult(checks=checks, n_pages=n_pages)


def verify_root(title: str, page_texts: Sequence[str] | Sequence[MatchText]) -> tuple[bool, str | None]:
    """The root (the paper) is verified when its title is printed on page 1 or 2.

    The root title comes from PDF metadata or the first page's layout and may not be printed
    verbatim (a shortened metadata title, a subtitle); the root is never indexed, so an
    unverified root only carries a note saying so.
    """
    pages = [p if isinstance(p, MatchText) else MatchText.of(p) for p in page_texts[:2]]
    if not MatchText.of(title).joined:
        return False, "paper has no title"
    for i, page in enumerate(pages):
        if page.contains(title):
            return True, None if i == 0 else "paper title found on page 2"
    return False, "paper title (from PDF metadata or first-page layout) not printed verbatim on pages 1-2"
