"""The eight demo papers and their questions, gathered from the ``paper_*`` modules.

All eight papers are original, fictional research papers written for this project on
one field, lithium-ion battery degradation and state-of-health estimation.  Authors,
institutions, datasets, methods, numbers and references are invented.  Each paper
uses its own vocabulary (calendar storage, SEI calorimetry, lithium plating, impedance
and DRT, a dataset descriptor, transfer learning, fast-charging protocols, second-life
modules) so that a search can tell them apart, and every question's answer appears
verbatim in exactly one paragraph of its paper.
"""

from __future__ import annotations

from . import (
    paper_calendar,
    paper_dataset,
    paper_fastcharge,
    paper_impedance,
    paper_plating,
    paper_secondlife,
    paper_sei,
    paper_transfer,
)
from vectree.demo.model import Paper

_MODULES = [
    paper_calendar,  # 1
    paper_sei,  # 2
    paper_plating,  # 3
    paper_impedance,  # 4
    paper_dataset,  # 5
    paper_transfer,  # 6
    paper_fastcharge,  # 7
    paper_secondlife,  # 8
]

#: The demo papers in their fixed order; ``paper.slug`` names each one.
DEMO_PAPERS: list[Paper] = [m.PAPER for m in _MODULES]

#: slug -> paper
PAPERS_BY_SLUG: dict[str, Paper] = {p.slug: p for p in DEMO_PAPERS}

#: Papers 1, 3, 5 and 7 are rendered with an embedded PDF outline, the others without,
#: so that both heading paths (outline and font-based detection) get exercised.
OUTLINE_SLUGS: frozenset[str] = frozenset(p.slug for i, p in enumerate(DEMO_PAPERS, 1) if i % 2 == 1)

#: Questions with short extractive answers: ``id``, ``question``, ``slug``, ``answer``
#: (verbatim in the paper text) and ``heading`` (printed heading of the section that holds
#: the answer).  Pages are not stored; see :func:`vectree.demo.expected_pages`.
DEMO_QUESTIONS: list[dict] = [
    {"id": f"q{n:02d}", **q, "slug": m.SLUG}
    for n, (m, q) in enumerate(((m, q) for m in _MODULES for q in m.QUESTIONS), 1)
]

assert len(PAPERS_BY_SLUG) == len(DEMO_PAPERS), "demo slugs must be unique"
assert all(m.PAPER.slug == m.SLUG for m in _MODULES)
