"""Text normalisation for matching section titles against page text.

Two levels, both pure and cheap:

* :func:`normalize_text` is the readable form the verifier's contract is stated in: Unicode NFKC,
  ligatures expanded (NFKC covers U+FB00..FB06; Æ/Œ are expanded here too), quotes and dashes
  unified, soft hyphens and zero-width characters dropped, hyphenation at line ends undone
  (``"exam-\\nple"`` -> ``"example"``), case folded, whitespace collapsed.
* :class:`MatchText` is what matching actually runs on: the normalised text cut into
  alphanumeric tokens and concatenated, remembering where tokens start and end and which
  tokens open a line.  A title matches when its own concatenated tokens occur starting at a
  token start and ending at a token end of the page (:meth:`MatchText.find`).  Ignoring the
  punctuation and spaces *inside* a match is what makes ``"3.2 Results"`` match a page printing
  ``"3.2. Results"`` or ``"3.2\\nResults"``, ``"Multi-LexSum"`` match ``"Multi-\\nLexSum"`` and
  ``"Authors' contributions"`` match ``"Authors’ contributions"``; requiring token boundaries at
  both ends is what keeps ``"art"`` from matching ``"start"``.  Digit groups keep a separator
  (``"1.2"`` -> ``"1·2"``) so that section ``1.2`` never matches ``12``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

_EXTRA = str.maketrans(
    {
        "Æ": "AE", "æ": "ae", "Œ": "OE", "œ": "oe", "ß": "ss",
        "\u00ad": "", "\u200b": "", "\u200c": "", "\u200d": "", "\ufeff": "", "\u2060": "",
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'", "\u00b4": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    }
)
_HYPHEN_BREAK = re.compile(r"(\w)-[ \t]*\n[ \t]*(\w)")
_SPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"[^\W_]+")
DIGIT_SEP = "\u00b7"


def _unicode(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "").translate(_EXTRA)


def normalize_text(text: str) -> str:
    """The verifier's normal form: NFKC, ligatures, quotes/dashes, line-end hyphenation undone,
    case folded, whitespace collapsed to single spaces."""
    text = _HYPHEN_BREAK.sub(r"\1\2", _unicode(text))
    return _SPACE.sub(" ", text.casefold()).strip()


def title_key(text: str) -> str:
    """The concatenated token form of a title (what :meth:`MatchText.find` looks for)."""
    return MatchText.of(text).joined


def ascii_key(text: str) -> str:
    """:func:`title_key` without anything outside ASCII letters and digits (for outlines that
    dropped a glyph; never used by the verifier)."""
    return re.sub(r"[^a-z0-9\u00b7]", "", title_key(text))


@dataclass
class MatchText:
    """A text prepared for boundary-aware title matching (see the module docstring)."""

    joined: str
    starts: dict[int, int] = field(default_factory=dict)  # offset in joined -> token index
    ends: set[int] = field(default_factory=set)
    line_start_tokens: set[int] = field(default_factory=set)  # token indices that open a line

    @classmethod
    def of(cls, text: str) -> "MatchText":
        return _match_text(text or "")

    def find(self, title: "str | MatchText") -> list[tuple[int, bool]]:
        """Every occurrence of ``title`` as ``(offset, at_line_start)``, in text order."""
        key = title.joined if isinstance(title, MatchText) else title_key(title)
        hits: list[tuple[int, bool]] = []
        if not key:
            return hits
        pos = self.joined.find(key)
        while pos != -1:
            tok = self.starts.get(pos)
            if tok is not None and pos + len(key) in self.ends:
                hits.append((pos, tok in self.line_start_tokens))
            pos = self.joined.find(key, pos + 1)
        return hits

    def contains(self, title: "str | MatchText") -> bool:
        return bool(self.find(title))


@lru_cache(maxsize=4096)
def _match_text(text: str) -> MatchText:
    norm = _HYPHEN_BREAK.sub(r"\1\2", _unicode(text)).casefold()
    parts: list[str] = []
    starts: dict[int, int] = {}
    ends: set[int] = set()
    line_starts: set[int] = set()
    offset = 0
    prev_end = 0
    prev_tok = ""
    for i, m in enumerate(_TOKEN.finditer(norm)):
        tok = m.group()
        gap = norm[prev_end:m.start()]
        if i == 0 or "\n" in gap:
            line_starts.add(i)
        if prev_tok and prev_tok[-1].isdigit() and tok[0].isdigit() and gap.strip():
            # keep "1.2" apart from "12"; a plain space between digits ("3 2") stays joined as well
            parts.append(DIGIT_SEP)
            offset += 1
        starts[offset] = i
        parts.append(tok)
        offset += len(tok)
        ends.add(offset)
        prev_end, prev_tok = m.end(), tok
    return MatchText("".join(parts), starts, ends, line_starts)
