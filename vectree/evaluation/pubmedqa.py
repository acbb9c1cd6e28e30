"""PubMedQA (PQA-L) loader: the 1,000 structured abstracts and the questions asked of them.

``load_pubmedqa(folder)`` reads ``corpus.jsonl`` and ``questions.jsonl`` of the shared data
(``../shared/data/pubmedqa``) and returns plain dataclasses; it builds nothing and imports
nothing from the rest of vectree, so any benchmark or evaluation harness can reuse it.

Each abstract's labelled parts (``labels[i]`` names ``contexts[i]``: BACKGROUND, METHODS,
RESULTS, ...) are its sections; the conclusion is not in the corpus (it is the question's
``long_answer``) and neither is the question.  PubMedQA has no titles.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PubMedQADoc:
    pmid: str
    labels: tuple[str, ...]
    contexts: tuple[str, ...]
    meshes: tuple[str, ...] = ()

    @property
    def sections(self) -> list[tuple[str, str]]:
        """``(label, text)`` for each labelled part, in abstract order."""
        return list(zip(self.labels, self.contexts))


@dataclass(frozen=True)
class PubMedQAQuestion:
    pmid: str  # the one abstract the question was written from (the gold document)
    question: str
    long_answer: str
    final_decision: str  # yes | no | maybe


def _jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_pubmedqa(folder: str | Path) -> tuple[list[PubMedQADoc], list[PubMedQAQuestion]]:
    """Documents and questions, in file order.  Raises ``FileNotFoundError`` naming the missing
    file, ``ValueError`` for a document whose labels and contexts do not line up."""
    folder = Path(folder)
    for name in ("corpus.jsonl", "questions.jsonl"):
        if not (folder / name).exists():
            raise FileNotFoundError(f"PubMedQA file {folder / name} is missing")
    docs = []
    for row in _jsonl(folder / "corpus.jsonl"):
        labels, contexts = tuple(row.get("labels") or ()), tuple(row.get("contexts") or ())
        if len(labels) != len(contexts):
            raise ValueError(f"PubMedQA pmid {row.get('pmid')}: {len(labels)} labels for {len(contexts)} contexts")
        docs.append(PubMedQADoc(str(row["pmid"]), labels, contexts, tuple(row.get("meshes") or ())))
    questions = [PubMedQAQuestion(str(r["pmid"]), r["question"], r.get("long_answer") or "", r.get("final_decision") or "")
                 for r in _jsonl(folder / "questions.jsonl")]
    known = {d.pmid for d in docs}
    orphans = [q.pmid for q in questions if q.pmid not in known]
    if orphans:
        raise ValueError(f"{len(orphans)} PubMedQA questions name abstracts not in the corpus, e.g. {orphans[:3]}")
    return docs, questions
