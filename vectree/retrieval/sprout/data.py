"""Training data for SproutRAG: documents of sentence chunks with queries and their positives.

Sources (folders laid out like ``../shared/data``):

* **HotpotQA** (``hotpotqa/ircot_format_dev_subsampled.jsonl``): one document per question, its
  ten paragraphs; positives = the chunks of the two supporting paragraphs (the benchmark's gold);
  the other paragraphs are the hard negatives; the positives of one question are the co-relevant
  pairs the attention loss pulls together.
* **QASPER dev evidence** (``qasper/dev-questions/dev_question_dict.json``): one document per
  article, the union of its questions' evidence paragraphs; positives = the chunks matching a
  question's highlighted evidence (its evidence paragraphs when nothing matches).  The other
  files of ``qasper/`` are the evaluation harness's QASPER benchmark and are never trained on.
* **DragonBall** (``dragonball/``, only when asked for: ``sources=(..., "dragonball")``): the
  shared queries split by query id into ``train`` (60%) and ``dev`` (40%, :func:`dragonball_split`);
  the evaluation reports DragonBall on the dev queries.  Its licence (CC-BY-NC-SA) forbids shipping
  derivatives: a model trained with it is a *benchmark model* (``info["benchmark_model"]``, said in
  its model card) and never the package's default.

The default sources, HotpotQA + QASPER (:data:`SHIPPABLE_SOURCES`), are licence-compatible: the
package's default model is trained on them alone.

Splits are a fixed function of the item id (:func:`split_of`), so they are reproducible and
independent of file order: HotpotQA questions go 45% ``train``, 15% ``dev`` (model selection),
40% ``test`` (benchmark only, never trained or selected on); QASPER articles 80% ``train``,
20% ``dev``.  The HotpotQA distractor file follows the same rule by question id.
"""

from __future__ import annotations

import hashlib
import time
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from vectree.retrieval.splits import hash_split

from .chunks import Chunk, chunk_text

SPLIT_SALT = "sprout-split-v1"
HOTPOT_SPLITS = (("train", 0.45), ("dev", 0.15), ("test", 0.40))
QASPER_SPLITS = (("train", 0.80), ("dev", 0.20))
QASPER_DEV_FILE = Path("qasper") / "dev-questions" / "dev_question_dict.json"
HOTPOT_FILE = Path("hotpotqa") / "ircot_format_dev_subsampled.jsonl"


class TrainingDataError(FileNotFoundError):
    """The training data folder is missing or not in the shared layout."""


def split_of(item_id: str, splits: Sequence[tuple[str, float]] = HOTPOT_SPLITS) -> str:
    """The split of ``item_id``: a salted sha256 of the id mapped onto the cumulative fractions."""
    return hash_split(item_id, SPLIT_SALT, splits)


def hotpotqa_split(question_id: str) -> str:
    """``train`` / ``dev`` / ``test`` for a HotpotQA question id (both files)."""
    return split_of(question_id, HOTPOT_SPLITS)


@dataclass
class TrainQuery:
    text: str
    positives: list[int]  # chunk indices


@dataclass
class TrainDoc:
    key: str
    source: str  # hotpotqa | qasper
    split: str
    chunks: list[str]
    para: list[int]
    weights: list[int]  # sentences per chunk
    queries: list[TrainQuery] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.chunks)


def _doc_from_chunks(key: str, source: str, split: str, chunks: list[Chunk]) -> TrainDoc:
    return TrainDoc(key, source, split, [c.text for c in chunks], [c.paragraph for c in chunks],
                    [c.n_sentences for c in chunks])


def hotpotqa_docs(data_dir: Path) -> list[TrainDoc]:
    """One :class:`TrainDoc` per IRCoT question (every split; filter on ``.split``)."""
    from vectree.retrieval.datasets import load_hotpotqa

    bench = load_hotpotqa(data_dir / "hotpotqa", sources=("ircot",))
    out = []
    for q in bench.queries:
        doc = bench.documents[q.doc_ids[0]]
        chunks = chunk_text(doc.text)
        gold_spans = [doc.sentences[i] for _, i in q.gold]
        pos = [c.index for c in chunks if any(c.start <= a and b <= c.end for a, b in gold_spans)]
        td = _doc_from_chunks(q.query_id, "hotpotqa", hotpotqa_split(q.query_id), chunks)
        td.queries.append(TrainQuery(q.text, pos))
        out.append(td)
    return out


DRAGONBALL_SPLITS = (("train", 0.6), ("dev", 0.4))
DRAGONBALL_DIR = Path("dragonball")
SOURCES = ("hotpotqa", "qasper", "dragonball")
# licence-compatible sources: a model trained on them may ship; DragonBall (CC-BY-NC-SA) may not
SHIPPABLE_SOURCES = ("hotpotqa", "qasper")


def dragonball_split(query_id: str) -> str:
    """``train`` / ``dev`` for a DragonBall query id (split by query: the benchmark's hidden
    questions are other questions on the same documents)."""
    return split_of(f"dragonball:{query_id}", DRAGONBALL_SPLITS)


def dragonball_docs(data_dir: Path) -> list[TrainDoc]:
    """DragonBall (English) documents with the shared queries whose gold lies in them; each
    document appears once per split that has queries on it (``train`` / ``dev`` by query id, see
    :func:`dragonball_split`), so no dev query is ever trained on.  Positives = the chunks holding
    a gold sentence (the benchmark's reference-matching rule).  Benchmark use only: a model trained
    with these is a *benchmark model* and never ships (the data is CC-BY-NC-SA)."""
    from vectree.retrieval.datasets import load_dragonball

    bench = load_dragonball(data_dir / DRAGONBALL_DIR)
    chunked = {}
    out: dict[tuple[str, str], TrainDoc] = {}
    for q in bench.queries:
        if not q.gold:
            continue
        split = dragonball_split(q.query_id)
        for doc_id in sorted({d for d, _ in q.gold}):
            doc = bench.documents[doc_id]
            if doc_id not in chunked:
                chunked[doc_id] = chunk_text(doc.text)
            chunks = chunked[doc_id]
            gold_spans = [doc.sentences[i] for d, i in q.gold if d == doc_id]
            pos = [c.index for c in chunks if any(c.start <= a and b <= c.end for a, b in gold_spans)]
            if not pos or len(pos) == len(chunks):
                continue
            key = (doc_id, split)
            if key not in out:
                out[key] = _doc_from_chunks(f"{doc_id}@{split}", "dragonball", split, chunks)
            out[key].queries.append(TrainQuery(q.text, pos))
    return [out[k] for k in sorted(out)]


def qasper_docs(data_dir: Path) -> list[TrainDoc]:
    """One :class:`TrainDoc` per QASPER dev article (every split)."""
    from vectree.retrieval.datasets import matches_reference

    path = data_dir / QASPER_DEV_FILE
    if not path.exists():
        raise TrainingDataError(f"missing {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    by_article: dict[str, list[dict]] = {}
    for qid in sorted(data):
        by_article.setdefault(str(data[qid]["article_id"]), []).append(data[qid])
    out = []
    for article, questions in sorted(by_article.items()):
        paragraphs: list[str] = []
        for q in questions:
            for p in q.get("evidence", []):
                p = " ".join(str(p).split())
                if p and p not in paragraphs:
                    paragraphs.append(p)
        if not paragraphs:
            continue
        text = "\n\n".join(paragraphs)
        chunks = chunk_text(text)
        if len(chunks) < 2:
            continue
        td = _doc_from_chunks(article, "qasper", split_of(article, QASPER_SPLITS), chunks)
        para_of_text = {p: i for i, p in enumerate(paragraphs)}
        for q in questions:
            highlights = [h for h in q.get("highlighted_evidence", []) if isinstance(h, str) and h.strip()]
            pos = [c.index for c in chunks if any(matches_reference(c.text, h) for h in highlights)]
            if not pos:
                ev = {para_of_text[" ".join(str(p).split())] for p in q.get("evidence", []) if " ".join(str(p).split()) in para_of_text}
                pos = [c.index for c in chunks if c.paragraph in ev]
            if pos and len(pos) < len(chunks):
                td.queries.append(TrainQuery(str(q["text"]), pos))
        if td.queries:
            out.append(td)
    return out


SOURCE_FILES = {"hotpotqa": [HOTPOT_FILE], "qasper": [QASPER_DEV_FILE],
                "dragonball": [DRAGONBALL_DIR / "dragonball_docs.jsonl", DRAGONBALL_DIR / "queries_finance_en.jsonl"]}


def check_sources(sources: Sequence[str]) -> tuple[str, ...]:
    unknown = sorted(set(sources) - set(SOURCES))
    if unknown or not sources:
        raise ValueError(f"unknown training sources {unknown or '(none given)'}; choose from {', '.join(SOURCES)}")
    return tuple(s for s in SOURCES if s in sources)


def resolve_training_data(data_dir: str | os.PathLike | None = None,
                          sources: Sequence[str] = SHIPPABLE_SOURCES) -> Path:
    """The training-data folder: ``data_dir``, else ``$VECTREE_TRAINING_DATA``, else
    ``../shared/data`` relative to the repository; a clear error when it is not there."""
    if data_dir is None:
        from vectree.retrieval.config import load_settings

        data_dir = load_settings().training_data_dir
    path = Path(data_dir)
    needed = [path / f for src in check_sources(sources) for f in SOURCE_FILES[src]]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        raise TrainingDataError(
            "SproutRAG training data not found: missing " + ", ".join(missing)
            + ". Point VECTREE_TRAINING_DATA (or --data) at a folder laid out like ../shared/data "
            "(hotpotqa/ircot_format_dev_subsampled.jsonl, qasper/dev-questions/dev_question_dict.json, "
            "and for --source dragonball dragonball/*.jsonl)."
        )
    return path


@dataclass
class TrainingSet:
    """Documents with their MiniLM chunk and query embeddings, ready for :mod:`.train`."""

    docs: list[TrainDoc]
    x: list[np.ndarray]  # per doc: (n, dim) chunk embeddings
    xq: list[np.ndarray]  # per doc: (n_queries, dim) query embeddings
    info: dict = field(default_factory=dict)
    # texts -> MiniLM vectors (through the training cache): what embeds the small nodes of a
    # text-node model's trees, whose texts depend on the tree and so on the model; not saved
    encode: Callable[[list[str]], np.ndarray] | None = field(default=None, repr=False, compare=False)

    def where(self, keep: Callable[[TrainDoc], bool]) -> "TrainingSet":
        idx = [i for i, d in enumerate(self.docs) if keep(d)]
        return TrainingSet([self.docs[i] for i in idx], [self.x[i] for i in idx], [self.xq[i] for i in idx], self.info,
                           self.encode)

    def split(self, name: str) -> "TrainingSet":
        return self.where(lambda d: d.split == name)

    def summary(self) -> dict:
        out: dict = {}
        for d in self.docs:
            s = out.setdefault(f"{d.source}/{d.split}", {"docs": 0, "queries": 0, "chunks": 0})
            s["docs"] += 1
            s["queries"] += len(d.queries)
            s["chunks"] += d.n
        return out

    def save(self, folder: str | os.PathLike) -> Path:
        from vectree.retrieval.store import atomic_write_bytes
        import io

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.savez(buf, x=np.concatenate(self.x) if self.x else np.zeros((0, 0), np.float32),
                 xq=np.concatenate(self.xq) if self.xq else np.zeros((0, 0), np.float32))
        atomic_write_bytes(folder / "embeddings.npz", buf.getvalue())
        meta = {"info": self.info, "docs": [asdict(d) for d in self.docs]}
        atomic_write_bytes(folder / "docs.json", json.dumps(meta).encode())
        return folder

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "TrainingSet":
        folder = Path(folder)
        if not (folder / "docs.json").exists():
            raise TrainingDataError(f"no SproutRAG training set in {folder}; materialise sprout_training_set")
        meta = json.loads((folder / "docs.json").read_text())
        with np.load(folder / "embeddings.npz") as arr:  # read each array once (NpzFile re-reads per access)
            x_all, xq_all = arr["x"], arr["xq"]
        docs, xs, xqs, i, j = [], [], [], 0, 0
        for d in meta["docs"]:
            d["queries"] = [TrainQuery(**q) for q in d["queries"]]
            doc = TrainDoc(**d)
            docs.append(doc)
            xs.append(x_all[i:i + doc.n])
            xqs.append(xq_all[j:j + len(doc.queries)])
            i += doc.n
            j += len(doc.queries)
        return cls(docs, xs, xqs, meta.get("info", {}))


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build_training_set(data_dir: str | os.PathLike | None = None, *, quick: bool = False,
                       cache_dir: str | os.PathLike | None = None, embedder=None,
                       max_docs: dict[str, int] | None = None,
                       log: Callable[[str], None] | None = None,
                       sources: Sequence[str] = SHIPPABLE_SOURCES) -> TrainingSet:
    """Read HotpotQA + QASPER, chunk, embed with MiniLM; HotpotQA ``test`` questions are dropped
    here so they can never reach training or model selection.

    ``quick``: a small subset (40 training and 15 dev documents per source, fewer of DragonBall's
    long reports) for a training run well under two minutes.  ``max_docs``: ``{"<source>/<split>": n}`` caps, first by id.
    ``log``: receives progress lines (documents read, chunks embedded so far, ETA).
    """
    from .encoder import embed_texts

    sources = check_sources(sources)
    root = resolve_training_data(data_dir, sources)
    docs: list[TrainDoc] = []
    if "hotpotqa" in sources:
        docs += [d for d in hotpotqa_docs(root) if d.split != "test"]
    if "qasper" in sources:
        docs += qasper_docs(root)
    if "dragonball" in sources:
        docs += dragonball_docs(root)
    caps = dict(max_docs or {})
    if quick:
        for key, n in {"hotpotqa/train": 40, "hotpotqa/dev": 15, "qasper/train": 40, "qasper/dev": 15,
                       "dragonball/train": 20, "dragonball/dev": 10}.items():
            caps.setdefault(key, n)
    if caps:
        kept, count = [], {}
        for d in sorted(docs, key=lambda d: (d.source, d.split, hashlib.sha256(d.key.encode()).hexdigest())):
            k = f"{d.source}/{d.split}"
            count[k] = count.get(k, 0) + 1
            if k not in caps or count[k] <= caps[k]:
                kept.append(d)
        docs = sorted(kept, key=lambda d: (d.source, d.key))
    texts = [t for d in docs for t in d.chunks]
    progress = None
    if log:
        log(f"training set: {len(docs)} documents, {len(texts):,} chunks to embed (cached ones are free)")
        started = time.perf_counter()

        def progress(done: int, total: int) -> None:
            rate = done / max(time.perf_counter() - started, 1e-9)
            log(f"embedding chunks: {done:,}/{total:,} (about {(total - done) / rate:.0f}s left)")

    vecs = embed_texts(texts, cache_dir=cache_dir, embedder=embedder, progress=progress)
    qtexts = [q.text for d in docs for q in d.queries]
    qvecs = embed_texts(qtexts, cache_dir=cache_dir, embedder=embedder, queries=True)
    xs, xqs, i, j = [], [], 0, 0
    for d in docs:
        xs.append(vecs[i:i + d.n])
        xqs.append(qvecs[j:j + len(d.queries)])
        i += d.n
        j += len(d.queries)
    from vectree.retrieval.embed import get_embedder

    emb = embedder or get_embedder()
    info = {
        "data_dir": str(root),
        "files": {str(p): file_sha256(root / p) for src in sources for p in SOURCE_FILES[src]},
        "sources": list(sources),
        # DragonBall is CC-BY-NC-SA: anything trained on it is a benchmark model, never shipped
        "benchmark_model": "dragonball" in sources,
        "base_encoder": emb.info.name,
        "base_dim": emb.info.dim,
        "quick": quick,
        "split_rule": f"sha256('{SPLIT_SALT}:' + id); hotpotqa {HOTPOT_SPLITS} by question id, qasper "
                      f"{QASPER_SPLITS} by article id, dragonball {DRAGONBALL_SPLITS} by query id ('dragonball:' + id)",
    }
    ts = TrainingSet(docs, xs, xqs, info, lambda texts: embed_texts(texts, cache_dir=cache_dir, embedder=emb))
    ts.info["summary"] = ts.summary()
    return ts


def write_synthetic_training_data(folder: str | os.PathLike, *, n_questions: int = 24, n_articles: int = 8,
                                  seed: int = 0) -> Path:
    """Write a small synthetic training corpus in the shared layout (HotpotQA IRCoT + QASPER dev
    files) under ``folder``; for tests and offline trials where ``../shared/data`` is absent.

    Each question has two supporting paragraphs that share a bridge entity and four distractors;
    each article has a few paragraphs of which one sentence answers each question.
    """
    import random

    rng = random.Random(seed)
    syll = ["ka", "lo", "mi", "ren", "tor", "vu", "zel", "pan", "dri", "sol", "mar", "qui", "bex", "nor"]

    def name() -> str:
        return "".join(rng.choice(syll) for _ in range(3)).capitalize()

    things = ["river", "castle", "festival", "company", "bridge", "orchestra", "mountain", "library"]
    colours = ["red", "green", "blue", "amber", "violet", "silver", "black", "white"]

    def paragraph(entity: str, kind: str, partner: str | None = None) -> list[str]:
        s = [f"{entity} is a {kind} known for its {rng.choice(colours)} emblem.",
             f"It was founded in {rng.randint(1500, 1990)} by {name()} {name()}.",
             f"Visitors often describe the {kind} as {rng.choice(['quiet', 'busy', 'ancient', 'modern'])}."]
        if partner:
            s.append(f"{entity} lies next to {partner}, which is a well known {rng.choice(things)}.")
        return s

    root = Path(folder)
    (root / "hotpotqa").mkdir(parents=True, exist_ok=True)
    with open(root / HOTPOT_FILE, "w", encoding="utf-8") as fh:
        for i in range(n_questions):
            a, b = name(), name()
            ka, kb = rng.sample(things, 2)
            contexts = [{"title": a, "paragraph_text": " ".join(paragraph(a, ka, b)), "is_supporting": True},
                        {"title": b, "paragraph_text": " ".join(paragraph(b, kb)), "is_supporting": True}]
            for _ in range(4):
                e = name()
                contexts.append({"title": e, "paragraph_text": " ".join(paragraph(e, rng.choice(things))),
                                 "is_supporting": False})
            rng.shuffle(contexts)
            for j, c in enumerate(contexts):
                c["id"] = str(j)
            fh.write(json.dumps({"question_id": f"synthetic-{i}", "question_text": f"Who founded the {kb} next to {a}?",
                                 "answers_objects": [{"spans": [b]}], "contexts": contexts}) + "\n")
    questions = {}
    for art in range(n_articles):
        topics = [name() for _ in range(4)]
        paras = [" ".join(paragraph(t, rng.choice(things))) for t in topics]
        for j, t in enumerate(topics[:3]):
            sent = paras[j].split(". ")[1].rstrip(".") + "."
            questions[f"syn-{art}-{j}"] = {"article_id": f"syn{art:04d}", "text": f"Who founded {t}?",
                                            "extractive_spans": [], "evidence": [paras[j]],
                                            "highlighted_evidence": [sent]}
    (root / QASPER_DEV_FILE).parent.mkdir(parents=True, exist_ok=True)
    (root / QASPER_DEV_FILE).write_text(json.dumps(questions), encoding="utf-8")
    return root
