"""Scoring extracted headings against a gold list (a PDF outline, or the demo corpus' truth).

Used by ``benchmarks/bench_trees.py`` and the tests, so both measure the same thing:

* a heading **matches** a gold entry when their titles are equal after normalisation
  (:func:`~vectree.retrieval.trees.normalize.title_key`), with or without the leading section number
  (outlines often drop the number the page prints, or the reverse) and with glyphs an outline
  could not encode ignored (``"3.3 -multiplier"`` for ``"3.3 β-multiplier"``); matching is
  one-to-one, same title on the same page first, then the same title in document order;
* **precision** = matched / extracted, **recall** = matched / gold, **page accuracy** = matched
  headings on the gold page / matched;
* ``lenient`` leaves front/back matter (Abstract, Keywords, References, Acknowledgments) out on
  both sides, since outlines list those inconsistently;
* :func:`printed_as_heading` tells gold entries that are not printed as a heading anywhere in the
  text layer (no text-based extractor can find those) from the rest.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from .normalize import title_key

_NUM = re.compile(r"^\s*(?:(?:appendix|section)\s+)?(?:\d{1,2}(?:\.\d{1,2})*|[A-H](?:\.\d{1,2})*|[IVX]{1,4})(?:[.):]|\s)\s*", re.I)
_FRONT_BACK = re.compile(r"^(abstract|keywords?|references|bibliography|acknowledge?ments?)$", re.I)


def _ascii(key: str) -> str:
    return re.sub(r"[^a-z0-9\u00b7]", "", key)


def keys(title: str) -> set[str]:
    full = title_key(title)
    bare = title_key(_NUM.sub("", title, count=1)) if _NUM.match(title) else full
    # "1.Introduction": the number glued to the title
    glued = title_key(re.sub(r"^\s*\d{1,2}(?:\.\d{1,2})*\.?(?=[A-Za-z])", "", title))
    # outlines drop glyphs they cannot encode ("3.3 -multiplier" for "3.3 β-multiplier")
    ascii_only = {_ascii(k) for k in (full, bare, glued)}
    return {k for k in (full, bare, glued, *ascii_only) if k}


def is_front_back(title: str) -> bool:
    return bool(_FRONT_BACK.match(_NUM.sub("", title, count=1).strip().rstrip(".:")))


def score(gold: Sequence[dict], got: Sequence[dict], *, lenient: bool = False) -> dict[str, Any]:
    """Match ``got`` (entries with ``title``, ``page_start``) to ``gold`` (``title``, ``page``)."""
    if lenient:
        gold = [g for g in gold if not is_front_back(g["title"])]
        got = [e for e in got if not is_front_back(e["title"])]
    gold_keys = [keys(g["title"]) for g in gold]
    got_keys = [keys(e["title"]) for e in got]
    used: set[int] = set()
    match: dict[int, int] = {}
    # first the same title on the same page (a title printed twice, e.g. "Methods" as a label in a
    # structured abstract and as a section, pairs with the right one), then the same title in order
    for same_page in (True, False):
        start = 0
        for i, g in enumerate(gold):
            if i in match:
                start = match[i] + 1
                continue
            order = list(range(start, len(got))) + list(range(0, start))
            for j in order:
                if j in used or not gold_keys[i] & got_keys[j]:
                    continue
                if same_page and got[j]["page_start"] != g["page"]:
                    continue
                match[i] = j
                used.add(j)
                start = j + 1
                break
    matched = len(match)
    pages_ok = sum(got[j]["page_start"] == gold[i]["page"] for i, j in match.items())
    misses = [g for i, g in enumerate(gold) if i not in match]
    pairs = [(gold[i], got[j]) for i, j in sorted(match.items())]
    extras = [e for j, e in enumerate(got) if j not in used]
    return {
        "gold": len(gold), "got": len(got), "matched": matched, "pages_ok": pages_ok,
        "precision": matched / len(got) if got else (1.0 if not gold else 0.0),
        "recall": matched / len(gold) if gold else 1.0,
        "page_acc": pages_ok / matched if matched else 0.0,
        "misses": misses, "extras": extras, "pairs": pairs,
    }


def printed_as_heading(title: str, page_texts: Sequence[str]) -> bool:
    """Is ``title`` printed as a line of its own (or wrapped over two), or as a run-in lead
    ("Title. Text ...") on some page?"""
    want = {_ascii(k) for k in keys(title)}
    for text in page_texts:
        raw = [ln.strip() for ln in text.split("\n") if ln.strip()]
        for k, line in enumerate(raw):
            longest = max(len(w) for w in want)
            cand = ""
            for nxt in raw[k:k + 8]:  # a heading may be wrapped, or split word by word
                cand = f"{cand} {nxt}"
                got = _ascii(title_key(cand))
                if got in want:
                    return True
                if len(got) > longest:
                    break
            lead = re.match(r"^(.{2,200}?)[.:]\s", line)
            if lead and _ascii(title_key(lead.group(1))) in want:
                return True
    return False


def outline_gold(outline: Sequence[Sequence[Any]], paper_title: str, page_texts: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """The outline's sections, split into those printed in the text layer and those that are not
    (an outline entry whose title is on no page cannot be found by any text-based extractor)."""
    tk = title_key(paper_title or "")
    out, unprinted = [], []
    for level, title, page in outline:
        k = title_key(title)
        if tk and k and (k == tk or (len(k) > 20 and (k in tk or tk in k))) and not out:
            continue  # the outline's wrapper entry is the paper itself, not a section
        entry = {"level": level, "title": title, "page": page}
        printed = printed_as_heading(title, page_texts)
        (out if printed else unprinted).append(entry)
    return out, unprinted
