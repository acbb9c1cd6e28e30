"""Section page ranges and extractive summaries for the offline extractor: the most central
sentences of a section's own text by TF-IDF cosine centrality, capped in tokens."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterable, Sequence

from vectree.retrieval.sentences import split_sentences as sentence_spans

from .text import ABBREV, MATHY, count_letters

SUMMARY_TOKENS = 60  # cap per section summary (word-piece-ish tokens, see _count_tokens)

# ---------------------------------------------------------------------------------------------
# ranges and summaries


def section_ranges(starts: Sequence[tuple[int, int, bool]], n_pages: int) -> list[tuple[int, int]]:
    """``(page_start, page_end)`` for headings given as ``(page, level, opens_page)`` in order:
    a section ends where the next heading at its level or above starts (the page before when that
    heading is the first thing on its page), nested inside its parent."""
    out: list[tuple[int, int]] = []
    for i, (page, level, _) in enumerate(starts):
        end = n_pages
        for page2, level2, opens in starts[i + 1:]:
            if level2 <= level:
                end = page2 - 1 if opens and page2 - 1 >= page else page2
                break
        out.append((page, max(page, min(end, n_pages))))
    return out


_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_WORD_RE = re.compile(r"[a-z][a-z0-9-]{2,}")
_STOP = frozenset(
    "the and for with that this from are was were have has had been which their these those using used use "
    "can may also such than into our its not but all each more most other one two three based between both "
    "over under when where while how what who will would could should there they them then thus however "
    "about after before during within without being very via per any some only further".split()
)


def split_sentences(text: str) -> list[str]:
    """The sentences of a block of page text, by the project's one rule
    (:mod:`vectree.retrieval.sentences`, pysbd), after joining hyphenated line breaks and folding
    the layout's line breaks into spaces (a block is one paragraph).  A piece that ends in a
    reference abbreviation pysbd does not know ("Tab. 2") is joined to the next one: a summary
    must not stop at "see Tab."."""
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text)
    text = re.sub(r"\s+", " ", text).strip()
    spans: list[list[int]] = []
    for a, b in sentence_spans(text):
        if spans and ABBREV.search(text[spans[-1][0]:spans[-1][1]]):
            spans[-1][1] = b
        else:
            spans.append([a, b])
    return [text[a:b] for a, b in spans]


def _count_tokens(text: str) -> int:
    return len(_TOKEN_RE.findall(text))


_NOT_PROSE = re.compile(r"^(key\s?words?|index terms|ccs concepts|general terms|categories and subject|doi|received|accepted|correspondence|e-?mail)\b", re.I)


def _good_sentence(s: str) -> bool:
    if _NOT_PROSE.match(s):
        return False  # keyword lists and article furniture are not what a section says
    words = s.split()
    if not 6 <= len(words) <= 70:
        return False
    letters = count_letters(s)
    return letters >= 0.6 * len(s.replace(" ", "")) and not MATHY.search(s[:1]) and not s[0].islower()


def _truncate(text: str, max_tokens: int) -> str:
    if _count_tokens(text) <= max_tokens:
        return text
    words = text.split()
    out: list[str] = []
    for w in words:
        if _count_tokens(" ".join(out + [w])) > max_tokens - 1:
            break
        out.append(w)
    return " ".join(out).rstrip(",;:") + " …"


def extractive_summary(
    sentences: Sequence[str], idf: dict[str, float], *, max_tokens: int = SUMMARY_TOKENS, max_sentences: int = 2
) -> str:
    """The most central sentences (TF-IDF cosine degree centrality) in document order, capped."""
    cands = [s for s in sentences if _good_sentence(s)] or [s for s in sentences if len(s.split()) >= 4]
    if not cands:
        return ""
    if len(cands) == 1:
        return _truncate(cands[0], max_tokens)
    cands = cands[:80]  # long sections: the opening is where topic sentences are
    vecs = []
    for s in cands:
        tf = Counter(w for w in _WORD_RE.findall(s.lower()) if w not in _STOP)
        v = {w: (1 + math.log(c)) * idf.get(w, 1.0) for w, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vecs.append({w: x / norm for w, x in v.items()})
    # degree centrality: the summed cosine to every other sentence is the dot product with the
    # sum of all vectors minus the sentence's own (unit) length, so one pass over a centroid
    centroid: Counter = Counter()
    for v in vecs:
        centroid.update(v)
    centrality = []
    for i, v in enumerate(vecs):
        total = sum(x * centroid[w] for w, x in v.items()) - (1.0 if v else 0.0)
        # a mild preference for early sentences: topic sentences open sections
        centrality.append(total / (len(vecs) - 1) + 0.05 / (1 + i))
    order = sorted(range(len(cands)), key=lambda i: -centrality[i])
    picked: list[int] = []
    used = 0
    for i in order:
        t = _count_tokens(cands[i])
        if picked and used + t > max_tokens:
            continue
        picked.append(i)
        used += t
        if len(picked) >= max_sentences or used >= max_tokens:
            break
    return _truncate(" ".join(cands[i] for i in sorted(picked)), max_tokens)


def document_idf(texts: Iterable[str]) -> dict[str, float]:
    df: Counter = Counter()
    n = 0
    for t in texts:
        n += 1
        df.update(set(_WORD_RE.findall(t.lower())))
    return {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}

