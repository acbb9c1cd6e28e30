"""Small text predicates shared by the offline extractor's line model, heading heuristics and
summaries (kept here so those three modules import one way only)."""

from __future__ import annotations

import re

# the reference list's heading
BACK_MATTER = re.compile(r"^(references|bibliography|literature cited|works cited)$", re.I)
# a line that reads as mathematics
MATHY = re.compile(r"[=<>∑∫±×≤≥→←∈∀∃√∂∇]|\b(?:argmax|argmin|log|exp|sin|cos)\s*\(")
# a full stop after an abbreviation, which ends no sentence and no run-in heading
ABBREV = re.compile(
    r"(?:\b(?:et al|e\.g|i\.e|cf|fig|figs|eq|eqs|sec|secs|tab|ref|refs|vs|no|approx|resp|incl|al|dr|mr|ms|prof|st|vol|pp|ch|ca|viz|etc)|\b[A-Z])\.$",
    re.I,
)


def count_letters(s: str) -> int:
    return sum(map(str.isalpha, s))


def clean_title(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().rstrip(":").strip()
