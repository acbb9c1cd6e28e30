"""The reader's training set: labelled (question, text) pairs from the shared training data.

Sources (all from ``$VECTREE_TRAINING_DATA``, default ``../shared/data``; training splits only):

* ``qasper``: QASPER's 638 dev questions (``qasper/dev-questions``).  Unit = one sentence of an
  evidence paragraph.  Positive: a sentence holding highlighted evidence (its extractive span,
  when the sentence holds it, is the span target).  Negatives, mined per question: the sentences
  of the same article with the most IDF-weighted word overlap with the question among those of
  *other* questions' evidence (hard, lexical), one unhighlighted sentence of the question's own
  evidence paragraph, and one sentence of another article (easy; teaches "unrelated → low").
* ``pagebench``: QASPER page-tagged rows (question, evidence text) on papers that are not
  evaluation papers; negatives are other rows' evidence on the same paper.
* ``hotpotqa``: IRCoT-format questions on the project's fixed hash split (train only);
  supporting paragraphs are positives (answer span, or yes/no), the two distractors with the
  most word overlap are negatives.
* ``pubmedqa``: question vs its abstract (yes / no; "maybe" trains only relevance), two
  hard-negative abstracts by word overlap among the training split's abstracts.  The split is
  this module's own, by pmid (:func:`pubmedqa_split`), written in the model card.
* ``ict`` (self-supervised, inverse cloze): a sentence of a training paragraph as the query, the
  rest of its paragraph as the positive, another paragraph of the same article as the negative.

Never used: the QASPER evaluation papers (``hf/qasper-train-first10.json``, ``led-fixture``,
``qasper_pdf``), DragonBall (non-commercial licence), and any question outside a training split.

Splits are fixed by document and question (salted sha256): QASPER by article with SproutRAG's
split (train 80 / dev 20), HotpotQA by question id with SproutRAG's split (train 45 / dev 15 /
test 40), PubMedQA by pmid here (train 45 / dev 15 / test 40).  Models are selected and calibrated
on dev only.
"""

from __future__ import annotations

import csv
import json
import math
import random
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from vectree.retrieval.sentences import split_sentences
from vectree.retrieval.splits import hash_split

PUBMEDQA_SALT = "vectree-reader-v1:pubmedqa"
PUBMEDQA_SPLITS = (("train", 0.45), ("dev", 0.15), ("test", 0.40))
# papers whose questions are evaluation questions (qasper hf sample, led fixture, qasper_pdf)
EVAL_ARTICLE_FILES = ("qasper/hf/qasper-train-first10.json", "qasper/led-fixture/qasper_sample_small.json")
EVAL_PDF_QUESTIONS = "qasper_pdf/questions.jsonl"
TYPE_INDEX = {"yes": 0, "no": 1, "extractive": 2, "unanswerable": 3}
_WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset("""a an the of in on at to for from by with and or but is are was were be been this that these those it
its as we our they their what which who how when where why do does did can could would should will may might there than
then also such into about between both each other some any all more most not no only have has had using used use based
paper""".split())


@dataclass
class Example:
    question: str
    text: str
    rel: int  # 1 relevant, 0 not
    type: int = -1  # index into model.TYPES; -1: no type target
    span: tuple[int, int] | None = None  # character span of the answer in ``text``
    group: str = ""  # one question (dev metrics rank within a group)
    source: str = ""
    split: str = "train"


@dataclass
class ReaderData:
    examples: list[Example] = field(default_factory=list)

    def split(self, name: str) -> list[Example]:
        return [e for e in self.examples if e.split == name]

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for e in self.examples:
            c = out.setdefault(e.source, {"train": 0, "dev": 0, "train_pos": 0, "dev_pos": 0})
            if e.split in ("train", "dev"):
                c[e.split] += 1
                c[f"{e.split}_pos"] += e.rel
        return out

    def save(self, path: Path) -> None:
        path.write_text("\n".join(json.dumps(asdict(e)) for e in self.examples))


def pubmedqa_split(pmid: str) -> str:
    """``train`` / ``dev`` / ``test`` of a PubMedQA question (by pmid); the evaluation reports the
    ``test`` part only."""
    return hash_split(str(pmid), PUBMEDQA_SALT, PUBMEDQA_SPLITS)


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP and len(w) > 1]


class Overlap:
    """IDF-weighted word overlap of a query with a pool of texts (the lexical hard-negative miner)."""

    def __init__(self, texts: Sequence[str]):
        self.sets = [set(words(t)) for t in texts]
        df = Counter(w for s in self.sets for w in s)
        n = max(1, len(texts))
        self.idf = {w: math.log(1 + n / (1 + c)) for w, c in df.items()}

    def top(self, query: str, k: int, exclude: Iterable[int] = ()) -> list[int]:
        q = set(words(query))
        skip = set(exclude)
        # fsum: exact, so the order a set yields its words in (it varies with PYTHONHASHSEED) cannot
        # change a score and with it which negatives are mined (the training set is reproducible)
        scored = [(math.fsum(self.idf.get(w, 0.0) for w in q & s), i) for i, s in enumerate(self.sets) if i not in skip]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [i for sc, i in scored[:k] if sc > 0] or [i for _, i in scored[:k]]


def sentences_of(paragraph: str) -> list[str]:
    text = " ".join(str(paragraph).split())
    out = []
    for a, b in split_sentences(text):
        s = text[a:b].strip()
        if out and len(out[-1]) < 40:
            out[-1] = f"{out[-1]} {s}"
        elif s:
            out.append(s)
    return out


def _norm(s: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", s.lower()))


def find_span(text: str, answer: str) -> tuple[int, int] | None:
    """Character span of ``answer`` in ``text`` (case-insensitive, whitespace-tolerant)."""
    answer = " ".join(str(answer).split()).strip(" .")
    if not answer or len(answer) > 200:
        return None
    i = text.lower().find(answer.lower())
    if i >= 0:
        return i, i + len(answer)
    return None


def eval_article_ids(data_dir: Path) -> set[str]:
    """Ids of the QASPER papers that evaluation questions are asked on (never trained on)."""
    out: set[str] = set()
    for rel in EVAL_ARTICLE_FILES:
        p = data_dir / rel
        if not p.exists():
            continue
        d = json.loads(p.read_text(encoding="utf-8"))
        out.update(str(x["id"]) for x in d) if isinstance(d, list) else out.update(str(k) for k in d)
    p = data_dir / EVAL_PDF_QUESTIONS
    if p.exists():
        for line in p.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                out.add(str(json.loads(line)["paper_id"]))
    return out


def _qasper_split(article: str) -> str:
    from vectree.retrieval.sprout.data import QASPER_SPLITS, split_of

    return split_of(article, QASPER_SPLITS)


def qasper_examples(data_dir: Path, rng: random.Random, excluded: set[str]) -> list[Example]:
    from vectree.retrieval.datasets import matches_reference

    path = data_dir / "qasper" / "dev-questions" / "dev_question_dict.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    by_article: dict[str, list[tuple[str, dict]]] = {}
    for qid in sorted(data):
        art = str(data[qid]["article_id"])
        if art not in excluded:
            by_article.setdefault(art, []).append((qid, data[qid]))
    articles = sorted(by_article)
    pool_all: list[tuple[str, str]] = []  # (article, sentence) for easy negatives
    per_article: dict[str, list[tuple[int, str]]] = {}  # (paragraph index, sentence)
    for art in articles:
        paras: list[str] = []
        for _, q in by_article[art]:
            for p in q.get("evidence", []):
                p = " ".join(str(p).split())
                if p and p not in paras and not p.startswith("FLOAT SELECTED"):
                    paras.append(p)
        sents = [(i, s) for i, p in enumerate(paras) for s in sentences_of(p)]
        per_article[art] = sents
        pool_all.extend((art, s) for _, s in sents)
    out: list[Example] = []
    for art in articles:
        split = _qasper_split(art)
        sents = per_article[art]
        if not sents:
            continue
        miner = Overlap([s for _, s in sents])
        for qid, q in by_article[art]:
            question = str(q["text"])
            highlights = [h for h in q.get("highlighted_evidence", []) if isinstance(h, str) and h.strip()
                          and not h.startswith("FLOAT SELECTED")]
            if not highlights:
                continue
            own_paras = {" ".join(str(p).split()) for p in q.get("evidence", [])}
            pos = [i for i, (_, s) in enumerate(sents) if any(matches_reference(s, h) for h in highlights)]
            if not pos:
                continue
            spans = [str(x) for x in q.get("extractive_spans", []) if str(x).strip()]
            for i in pos[:3]:
                text = sents[i][1]
                span = next((sp for sp in (find_span(text, a) for a in spans) if sp), None)
                out.append(Example(question, text, 1, TYPE_INDEX["extractive"], span, qid, "qasper", split))
            pos_set = set(pos)
            # hard: the best lexical matches that are not this question's evidence
            own_para_idx = {pi for pi, s in sents if any(s in p for p in own_paras)}
            hard = [i for i in miner.top(question, 8, exclude=pos_set) if sents[i][0] not in own_para_idx][:3]
            same_para = [i for i, (pi, _) in enumerate(sents) if pi in own_para_idx and i not in pos_set]
            if same_para:
                hard.append(rng.choice(same_para))
            for i in hard:
                out.append(Example(question, sents[i][1], 0, TYPE_INDEX["unanswerable"], None, qid, "qasper", split))
            other = rng.choice(pool_all)
            if other[0] != art:
                out.append(Example(question, other[1], 0, TYPE_INDEX["unanswerable"], None, qid, "qasper", split))
    return out


def pagebench_examples(data_dir: Path, excluded: set[str]) -> list[Example]:
    path = data_dir / "qasper" / "pagebench" / "0b_qa_pairs.csv"
    if not path.exists():
        return []
    with path.open(encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    by_paper: dict[str, list[dict]] = {}
    for r in rows:
        paper = r["target_file"].removesuffix(".pdf")
        if paper in excluded or not (r.get("evidence_text") or "").strip():
            continue
        by_paper.setdefault(paper, []).append(r)
    out = []
    for paper, rs in sorted(by_paper.items()):
        split = _qasper_split(paper)
        texts = [" ".join(r["evidence_text"].split())[:600] for r in rs]
        for i, r in enumerate(rs):
            out.append(Example(r["question"], texts[i], 1, -1, None, f"pb-{r['q_id']}", "pagebench", split))
            others = [t for j, t in enumerate(texts) if j != i and t != texts[i]]
            for t in others[:2]:
                out.append(Example(r["question"], t, 0, -1, None, f"pb-{r['q_id']}", "pagebench", split))
    return out


def hotpotqa_examples(data_dir: Path) -> list[Example]:
    from vectree.retrieval.sprout.data import hotpotqa_split

    from vectree.retrieval.datasets import read_hotpotqa_ircot

    out = []
    for row in read_hotpotqa_ircot(data_dir / "hotpotqa"):
        qid = row.question_id
        split = hotpotqa_split(qid)
        if split == "test":
            continue
        question = row.question
        answers = [s for s in row.answers if s]
        answer = answers[0] if answers else ""
        paras = [(t, " ".join(p.split()), sup) for t, p, sup in row.paragraphs]
        texts = [f"{t}: {p}" if t else p for t, p, _ in paras]
        for text, (_, _, sup) in zip(texts, paras):
            if not sup:
                continue
            if answer.lower() in ("yes", "no"):
                typ, span = TYPE_INDEX[answer.lower()], None
            else:
                span = find_span(text[:700], answer)
                typ = TYPE_INDEX["extractive"] if span else -1
            out.append(Example(question, text[:700], 1, typ, span, qid, "hotpotqa", split))
        negatives = [i for i, (_, _, sup) in enumerate(paras) if not sup]
        miner = Overlap(texts)
        for i in [j for j in miner.top(question, 10) if j in negatives][:2]:
            out.append(Example(question, texts[i][:700], 0, TYPE_INDEX["unanswerable"], None, qid, "hotpotqa", split))
    return out


def read_pubmedqa(data_dir: Path) -> tuple[dict[str, list[str]], list[dict]]:
    """``({pmid: the abstract's labelled parts}, questions)`` of ``data_dir/pubmedqa`` (lines split on
    newlines only: the abstracts hold other line separators)."""
    folder = Path(data_dir) / "pubmedqa"

    def rows(name: str) -> list[dict]:
        return [json.loads(x) for x in (folder / name).read_text(encoding="utf-8").split("\n") if x.strip()]

    return {str(r["pmid"]): [str(c) for c in r["contexts"]] for r in rows("corpus.jsonl")}, rows("questions.jsonl")


def pubmedqa_examples(data_dir: Path) -> list[Example]:
    parts, questions = read_pubmedqa(data_dir)
    corpus = {pmid: " ".join(" ".join(c).split()) for pmid, c in parts.items()}
    train_pmids = sorted(str(q["pmid"]) for q in questions if pubmedqa_split(str(q["pmid"])) == "train")
    out = []
    for split in ("train", "dev"):
        # negatives come from the same split's abstracts, so dev never borrows training text and back
        pmids = sorted(str(q["pmid"]) for q in questions if pubmedqa_split(str(q["pmid"])) == split) \
            if split == "dev" else train_pmids
        texts = [corpus[p] for p in pmids]
        miner = Overlap(texts)
        for q in questions:
            pmid = str(q["pmid"])
            if pubmedqa_split(pmid) != split or pmid not in corpus:
                continue
            decision = q.get("final_decision")
            typ = TYPE_INDEX.get(decision, -1) if decision in ("yes", "no") else -1
            out.append(Example(q["question"], corpus[pmid][:900], 1, typ, None, f"pm-{pmid}", "pubmedqa", split))
            for i in [j for j in miner.top(q["question"], 3) if pmids[j] != pmid][:2]:
                out.append(Example(q["question"], texts[i][:900], 0, TYPE_INDEX["unanswerable"], None,
                                   f"pm-{pmid}", "pubmedqa", split))
    return out


def ict_examples(examples: Sequence[Example], rng: random.Random, n: int) -> list[Example]:
    """Inverse cloze pairs from the training paragraphs already in ``examples`` (HotpotQA and
    PubMedQA positives): a sentence as the query, the rest of its paragraph as the positive, a
    paragraph of another question as the negative."""
    paras = sorted({e.text for e in examples if e.split == "train" and e.rel and e.source in ("hotpotqa", "pubmedqa")})
    rng.shuffle(paras)
    out = []
    for k, p in enumerate(paras):
        if len(out) >= 2 * n:
            break
        sents = sentences_of(p)
        if len(sents) < 3:
            continue
        i = rng.randrange(1, len(sents))
        query = sents[i]
        rest = " ".join(sents[:i] + sents[i + 1:])
        neg = paras[(k + 1 + rng.randrange(len(paras) - 1)) % len(paras)]
        out.append(Example(query, rest, 1, -1, None, f"ict-{k}", "ict", "train"))
        out.append(Example(query, neg, 0, -1, None, f"ict-{k}", "ict", "train"))
    return out


def build_reader_data(data_dir: Path, *, seed: int = 13, quick: bool = False, ict: int = 300,
                      extra: Sequence[Example] = ()) -> ReaderData:
    """Every source's examples with their splits (``quick``: a small sample of each, for tests
    and ``--quick``).  ``extra``: more examples, first (an experiment's source, e.g.
    :func:`.pages.paper_examples`)."""
    rng = random.Random(seed)
    excluded = eval_article_ids(data_dir)
    examples: list[Example] = list(extra)
    examples += qasper_examples(data_dir, rng, excluded)
    examples += pagebench_examples(data_dir, excluded)
    examples += hotpotqa_examples(data_dir)
    examples += pubmedqa_examples(data_dir)
    examples += ict_examples(examples, rng, ict)
    if quick:
        groups = sorted({(e.source, e.split, e.group) for e in examples})
        keep_groups: set[str] = set()
        for source in sorted({g[0] for g in groups}):
            for split, cap in (("train", 60), ("dev", 25)):
                gs = [g[2] for g in groups if g[0] == source and g[1] == split]
                rng.shuffle(gs)
                keep_groups.update(gs[:cap])
        examples = [e for e in examples if e.group in keep_groups]
    return ReaderData(examples)
