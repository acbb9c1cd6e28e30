"""A paper's own abbreviations, so a question that spells a term out finds the sentences that
abbreviate it (and the other way round).

Scientific papers define a term once ("Random kitchen sink (RKS)") and then use the short form;
readers ask with either.  "What is the Random Kitchen Sink approach?" shares no word with "RKS
approach proposed in [26, 27], explicitly maps data vectors to a space where linear separation is
possible", the sentence that answers it, so neither BM25 nor MiniLM (which has never seen "RKS")
finds it.  The definitions are read from the paper itself with the Schwartz-Hearst algorithm (the
``abbreviations`` package), so nothing is fitted and nothing comes from outside the paper.

* :func:`definitions` - ``{short form: long form}`` of a paper's text (first definition wins).
* :func:`expand` - the query with the other form of every term it names, in parentheses, the way
  the paper itself writes a definition.  Short forms match case-sensitively as whole words (a
  question's "not" is not the paper's label "NOT"); long forms match case-insensitively, as a
  sequence of whole words.
"""

from __future__ import annotations

import logging
import re
from typing import Iterable, Mapping

MIN_SHORT = 2  # "F" or "x" as a short form matches too much
MAX_LONG_WORDS = 8

_WORDS = re.compile(r"[a-z0-9]+")
# the package logs every omitted candidate at DEBUG
logging.getLogger("abbreviations").setLevel(logging.WARNING)


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def definitions(texts: Iterable[str]) -> dict[str, str]:
    """``{short form: long form}`` defined in ``texts`` (a paper's sentences, in reading order).

    Only pairs whose short form has at least :data:`MIN_SHORT` letters or digits and contains an
    upper-case letter (an acronym, not a parenthesised word) and whose long form has 2 to
    :data:`MAX_LONG_WORDS` words are kept."""
    from abbreviations import schwartz_hearst

    text = "\n".join(t.replace("\n", " ") for t in texts)
    try:
        pairs = schwartz_hearst.extract_abbreviation_definition_pairs(doc_text=text, first_definition=True)
    except Exception:  # noqa: BLE001 - a text the algorithm cannot parse: the query stays as asked
        return {}
    out: dict[str, str] = {}
    for short, long in pairs.items():
        short, long = short.strip(), " ".join(long.split())
        if (len(re.sub(r"[^A-Za-z0-9]", "", short)) >= MIN_SHORT and any(c.isupper() for c in short)
                and 2 <= len(_words(long)) <= MAX_LONG_WORDS):
            out[short] = long
    return out


def _has_short(query: str, short: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(short)}(?![\w-])", query) is not None


def _has_long(query_words: list[str], long: str) -> bool:
    lw = _words(long)
    n = len(lw)
    return any(query_words[i:i + n] == lw for i in range(len(query_words) - n + 1))


def expand(query: str, defined: Mapping[str, str]) -> str:
    """``query`` with the other form of each term the paper defines, appended in parentheses:
    ``expand("What is the Random Kitchen Sink approach?", {"RKS": "Random kitchen sink"})`` is
    ``"What is the Random Kitchen Sink approach? (RKS)"``.  Unchanged when nothing matches."""
    if not defined:
        return query
    qwords = _words(query)
    added: list[str] = []
    for short, long in defined.items():
        has_short, has_long = _has_short(query, short), _has_long(qwords, long)
        if has_long and not has_short:
            added.append(short)
        elif has_short and not has_long:
            added.append(long)
    if not added:
        return query
    return f"{query} ({'; '.join(dict.fromkeys(added))})"
