"""Ask a store questions a new user would, one per line, and print answer, confidence and citations.

    .venv/bin/python benchmarks/probe_ask.py STORE [QUESTIONS_FILE]

``benchmarks/probe_questions.txt`` (the default) holds 15 questions written for the store of the 39
shared PDFs (``vectree ingest --store STORE ../shared/data/pdfs ../shared/data/qasper_pdf/pdfs``)
by reading their titles, not their benchmarks: a probe of what a user sees, with no gold answers,
so it scores nothing.  The offline navigator answers, warm, one question at a time.

7 December (session 10), before -> after the answer rules of that day: "What dataset does PaSa use
for evaluation?" 'evaluate PaSa in more realistic scenarios' -> 'RealScholarQuery'; "What does
LONGEVAL recommend ...?" the section heading '3 The LONGEVAL guidelines for faithfulness human
evaluation' -> a sentence of the section; "How many studies were included in the review ...?"
'10.1186' (a DOI) -> 'RCTs' (still wrong: the review's count is not among the candidates);
"How does PaperMage represent a document?" a line of code -> a sentence (wrong).  Most of the
fifteen answers are still wrong or beside the point, all with low confidence (.07-.19), because
the evidence read is not the sentence that answers: what limits them is ranking, not reading.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vectree.retrieval.config import set_offline_model_env

set_offline_model_env()


def main() -> None:
    from vectree.agent.navigator import OfflineNavigator
    from vectree.agent.tools import Toolbox
    from vectree.retrieval.store import Store

    store = sys.argv[1]
    questions = Path(sys.argv[2] if len(sys.argv) > 2 else Path(__file__).with_name("probe_questions.txt"))
    nav = OfflineNavigator(Toolbox(Store(store)))
    for q in questions.read_text(encoding="utf-8").splitlines():
        if not q.strip():
            continue
        a = nav.answer(q)
        cites = ", ".join(f"{c['doc_id'][:18]} p.{c['page']}" for c in a.citations)
        print(f"Q: {q}\n  A: {a.answer[:200]!r}  confidence {a.confidence}{'  (abstained)' if a.abstained else ''}\n"
              f"  cites: {cites or '-'}", flush=True)


if __name__ == "__main__":
    main()
