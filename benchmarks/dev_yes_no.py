"""Yes or no: from the best sentence alone, or from several?  PubMedQA questions of a training-side split.

The navigator answers a yes/no question from the answer-type head of its best readable candidate
(one sentence).  The reader was trained on PubMedQA decisions over whole abstracts.  For every
PubMedQA question of ``--split`` (the reader's own split by pmid; ``dev`` by default, ``test`` is
what the evaluation reports) whose decision is yes or no, its abstract is cut into sentences as
a paper's passages are, searched and reranked as inside a paper
(:func:`vectree.retrieval.rerank.apply.rerank_passages`), and the decision is taken:

* ``best sentence`` (the navigator's rule): P(yes) >= P(no) of the first candidate;
* ``top N, weighted``: P(yes) and P(no) averaged over the first N candidates, weighted by their
  calibrated relevance;
* ``whole abstract``: the reader reads the abstract (as in training): a ceiling, not a product option.

Prints decision accuracy per rule and how well the head's P(yes) / (P(yes) + P(no)) separates the
two (AUROC).  Usage: ``python benchmarks/dev_yes_no.py [--split dev|train]``

Measured 2026-12-07 (session 9), shipped reader:

| decide from | dev (80) | train (242; the reader trained on these) |
|---|---:|---:|
| best sentence (the navigator) | .537 | .674 |
| top 3, weighted | .537 | .686 |
| top 5, weighted | .537 | .682 |
| whole abstract | .537 | .665 |
| negation in the best sentence | .575 | .640 |
| negation in the top 3 | .662 | .661 |
| share of "yes" | .537 | .649 |

The answer-type head does not tell yes from no on questions it did not train on (dev AUROC .502:
it says "yes" to all 80; train .784).  "No" when one of the three best passages holds a negation
was tried in the navigator: on the evaluation it changed 3 qasper yes/no answers (one fixed, one
broken, F1 .195 unchanged) and broke qasper_pdf's "Do they perform error analysis?" (No -> Yes:
QASPER's "no" is mostly absence, which a negation cue cannot see), so it was not adopted; the
revert is informed by the evaluation, so nothing is claimed from it.  What would help is a type
head trained to generalise (more yes/no data, or features of absence), not a cue.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument("--split", default="dev", choices=["train", "dev"])
    args = ap.parse_args()
    from vectree.retrieval.config import set_offline_model_env

    set_offline_model_env()
    import numpy as np

    from vectree.evaluation.embedcache import cached_embedder
    from vectree.retrieval.passages import PaperPassages, passages_table
    from vectree.retrieval.rerank.apply import rerank_passages
    from vectree.retrieval.rerank.data import pubmedqa_split, read_pubmedqa
    from vectree.retrieval.rerank.model import get_reader
    from vectree.retrieval.sentences import split_sentences

    parts, rows = read_pubmedqa(Path(args.data))
    reader, emb = get_reader(), cached_embedder()
    from vectree.agent.navigator import NEGATION

    rules = ["best sentence", "top 3, weighted", "top 5, weighted", "whole abstract",
             "negation in the best sentence", "negation in the top 3"]
    ratios, golds = [], []
    right = dict.fromkeys(rules, 0)
    n = 0
    for q in rows:
        pmid, decision = str(q["pmid"]), q.get("final_decision")
        if pubmedqa_split(pmid) != args.split or decision not in ("yes", "no") or pmid not in parts:
            continue
        abstract = " ".join(" ".join(parts[pmid]).split())
        texts = [abstract[a:b] for a, b in split_sentences(abstract)]
        table = passages_table([{"passage_id": i, "page_no": 1, "block": 0, "node_id": None, "text": t}
                                for i, t in enumerate(texts)], emb.encode_documents(texts))
        qv = reader.adapt_query(emb.encode_query(q["question"]))
        hits = rerank_passages(reader, PaperPassages(table), q["question"], qv, 8)
        n += 1

        def vote(hs):
            w = np.asarray([h["relevance"] for h in hs]) + 1e-9
            yes = float(np.dot(w, [h["reading"].type_probs["yes"] for h in hs]))
            no = float(np.dot(w, [h["reading"].type_probs["no"] for h in hs]))
            return "yes" if yes >= no else "no"

        right["best sentence"] += vote(hits[:1]) == decision
        right["top 3, weighted"] += vote(hits[:3]) == decision
        right["top 5, weighted"] += vote(hits[:5]) == decision
        r = reader.read(q["question"], [abstract[:900]])[0]
        right["whole abstract"] += ("yes" if r.type_probs["yes"] >= r.type_probs["no"] else "no") == decision
        asked_negated = bool(NEGATION.search(q["question"]))
        neg1 = bool(NEGATION.search(hits[0]["text"])) and not asked_negated
        neg3 = any(NEGATION.search(h["text"]) for h in hits[:3]) and not asked_negated
        right["negation in the best sentence"] += ("no" if neg1 else "yes") == decision
        right["negation in the top 3"] += ("no" if neg3 else "yes") == decision
        p = hits[0]["reading"].type_probs
        ratios.append(p["yes"] / (p["yes"] + p["no"]))
        golds.append(decision == "yes")
    print(f"{n} PubMedQA {args.split} questions decided yes or no")
    print("| decide from | accuracy |")
    print("|---|---:|")
    for rule in rules:
        print(f"| {rule} | {right[rule] / max(1, n):.3f} |")
    from sklearn.metrics import roc_auc_score

    print(f"AUROC of the best sentence's P(yes) / (P(yes) + P(no)) for 'yes': {roc_auc_score(golds, ratios):.3f}; "
          f"share of 'yes': {np.mean(golds):.3f}")


if __name__ == "__main__":
    main()
