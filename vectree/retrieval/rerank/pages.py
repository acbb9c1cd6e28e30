"""Which evidence the navigator cites, calibrated on pages of dev papers built from training data.

The reader's sentence-level selection (:func:`.calibrate._fit_selection`) is fitted on each dev
question's *own* candidate list (its evidence and a few mined negatives).  The navigator decides on
something else: the reranked top candidates of a whole paper, and it is judged on the *pages* it
cites.  On dev papers built like the evaluation's, the sentence-level choice cited 2.5 pages per
question against 1.1 gold ones (page precision .30).

So the choice is made again here, on pages:

* **dev papers**: every QASPER dev-dictionary article of the reader's dev split (by article, the
  split in the model card; never an evaluation paper) -- its questions' evidence paragraphs --
  padded with the next articles' paragraphs to ``pad`` chunks (a paper is mostly text that is not
  evidence), its own paragraphs placed at random (seeded) positions among the padding so that its
  evidence spreads over the pages as in a real paper, and cut into pages of ``page_chars``
  characters (a rendered QASPER page holds about 3,300); gold pages are the pages of each
  question's evidence chunks;
* **episodes**: each question runs the navigator's candidate step once
  (:func:`.apply.rerank_passages`, k = 8: hybrid BM25 + cosine, reranked, calibrated relevance);
* **the grid**: threshold x margin (:func:`.calibrate.select`, the best always kept) x the most
  sentences cited; the chosen point has the best mean page F1 over the questions (ties: fewer
  pages).  The curve of every point is kept for the report.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from vectree.retrieval.passages import READ_CANDIDATES

from .calibrate import GRID, MARGINS, select

PAD_CHUNKS = 200
PAGE_CHARS = 3500
CANDIDATES = READ_CANDIDATES  # what the navigator's search_within_paper returns to read from
MAX_CITED_GRID = (1, 2, 3, 4)


@dataclass
class DevPaper:
    key: str
    chunks: list[str]
    pages: list[int]  # page of each chunk
    questions: list[tuple[str, set[int]]]  # (question, gold pages)
    evidence: list[set[int]] = field(default_factory=list)  # each question's evidence chunks (indices)
    paragraphs: list[tuple[int, int]] = field(default_factory=list)  # [start, end) chunks of each paragraph
    article_keys: list[str | None] = field(default_factory=list)  # each paragraph's article (None: its own)


@dataclass
class Episode:
    pages: list[int]  # candidate pages, in the navigator's order
    relevance: list[float]  # their calibrated relevance
    gold: set[int]


def dev_papers(data_dir: Path, *, split: str = "dev", pad: int = PAD_CHUNKS, page_chars: int = PAGE_CHARS,
               limit: int | None = None) -> list[DevPaper]:
    """The dev papers described in the module docstring (``limit``: only the first that many)."""
    from vectree.retrieval.sprout.data import qasper_docs

    from .data import eval_article_ids

    excluded = eval_article_ids(Path(data_dir))
    pool = [d for d in qasper_docs(Path(data_dir)) if d.key not in excluded and d.split == split]
    out = []
    for at, doc in enumerate(pool[:limit] if limit else pool):
        # paragraphs as (chunk indices of this document or None, chunk texts); the document's own
        # paragraphs are placed at random positions among the padding (seeded by the article), so
        # its evidence lies spread over the paper's pages as in a real one, not packed on page 1
        own = _paragraphs(doc)
        padding: list[tuple[None, list[str]]] = []
        padded_from: list[str] = []
        size = doc.n
        for j in range(1, len(pool)):
            if size >= pad:
                break
            for _, texts in _paragraphs(pool[(at + j) % len(pool)]):
                padding.append((None, texts))
                padded_from.append(pool[(at + j) % len(pool)].key)
                size += len(texts)
        rng = random.Random(f"page-selection:{doc.key}")
        slots = sorted(rng.sample(range(len(own) + len(padding)), len(own)))
        order: list[tuple[list[int] | None, list[str]]] = list(padding)
        sources: list[str | None] = list(padded_from)
        for slot, paragraph in zip(slots, own):
            order.insert(slot, paragraph)
            sources.insert(slot, None)
        chunks, position, spans = [], {}, []
        for idx, texts in order:
            spans.append((len(chunks), len(chunks) + len(texts)))
            for n, text in enumerate(texts):
                if idx is not None:
                    position[idx[n]] = len(chunks)
                chunks.append(text)
        pages, used, page = [], 0, 1
        for text in chunks:
            if used and used + len(text) > page_chars:
                page, used = page + 1, 0
            pages.append(page)
            used += len(text) + 1
        asked = [q for q in doc.queries if q.positives]
        questions = [(q.text, {pages[position[i]] for i in q.positives}) for q in asked]
        out.append(DevPaper(doc.key, chunks, pages, questions, [{position[i] for i in q.positives} for q in asked],
                            spans, sources))
    return out


def paper_examples(data_dir: Path, embedder, *, negatives: int = 6, depth: int = 24,
                   splits: Sequence[str] = ("train", "dev")) -> list[Example]:
    """QASPER questions asked of a whole paper, as the navigator asks them: each question's
    evidence sentences against the sentences the paper's hybrid first stage (BM25 + cosine) ranks
    highest without being evidence -- the candidates the reader must order at query time.

    The papers are :func:`dev_papers` of each split (an article's evidence paragraphs placed
    among other articles' paragraphs of the same split, 200 chunks; never an evaluation paper).
    Before these, the reader only met negatives drawn from other questions' evidence of the same
    article, and on whole papers its logit ranked the evidence first less often than the cosine
    did (``benchmarks/diag_page_ranking.py``)."""
    from vectree.retrieval.passages import PaperPassages, passages_table

    from .data import Example

    out: list[Example] = []
    for split in splits:
        for paper in dev_papers(Path(data_dir), split=split):
            rows = [{"passage_id": i, "page_no": p, "block": 0, "node_id": None, "text": t}
                    for i, (t, p) in enumerate(zip(paper.chunks, paper.pages))]
            passages = PaperPassages(passages_table(rows, embedder.encode_documents(paper.chunks)))
            vectors = embedder.encode_queries([q for q, _ in paper.questions])
            for n, ((question, _), qv, evidence) in enumerate(zip(paper.questions, vectors, paper.evidence)):
                group = f"paper:{paper.key}:{n}"
                hits = [h.passage_id for h in passages.rank(question, qv, depth)]
                for i in sorted(evidence)[:3]:
                    out.append(Example(question, paper.chunks[i], 1, -1, None, group, "qasper-paper", split))
                for i in [i for i in hits if i not in evidence][:negatives]:
                    out.append(Example(question, paper.chunks[i], 0, -1, None, group, "qasper-paper", split))
    return out


def _paragraphs(doc) -> list[tuple[list[int], list[str]]]:
    """A training document's paragraphs: (chunk indices, chunk texts), in order."""
    groups: dict[int, tuple[list[int], list[str]]] = {}
    for i, (text, p) in enumerate(zip(doc.chunks, doc.para)):
        groups.setdefault(p, ([], []))
        groups[p][0].append(i)
        groups[p][1].append(text)
    return [groups[p] for p in sorted(groups)]


def episodes(reader, papers: Sequence[DevPaper], embedder, *, k: int = CANDIDATES,
             progress: Callable[[int, int], None] | None = None) -> list[Episode]:
    """Every dev question's candidates as the navigator sees them (:func:`.apply.rerank_passages`)."""
    from vectree.retrieval.passages import PaperPassages, passages_table

    from .apply import rerank_passages

    out = []
    for n, paper in enumerate(papers):
        rows = [{"passage_id": i, "page_no": p, "block": 0, "node_id": None, "text": t}
                for i, (t, p) in enumerate(zip(paper.chunks, paper.pages))]
        passages = PaperPassages(passages_table(rows, embedder.encode_documents(paper.chunks)))
        vectors = embedder.encode_queries([q for q, _ in paper.questions])
        for (question, gold), qv in zip(paper.questions, vectors):
            qv = reader.adapt_query(qv)  # as the toolbox compares it (unchanged without an adapter)
            hits = rerank_passages(reader, passages, question, qv, k)
            out.append(Episode([h["page"] for h in hits], [h["relevance"] for h in hits], gold))
        if progress:
            progress(n + 1, len(papers))
    return out


def cited_pages(pages: Sequence[int], relevance: Sequence[float], threshold: float, margin: float,
                max_cited: int) -> set[int]:
    """The pages the navigator cites: the selected candidates (best first), at most ``max_cited``."""
    chosen = sorted(select(relevance, threshold, margin), key=lambda i: -relevance[i])[:max_cited]
    return {pages[i] for i in chosen}


def score(eps: Sequence[Episode], threshold: float, margin: float, max_cited: int) -> dict[str, float]:
    """Micro page precision / recall, mean per-question page F1 and pages cited per question."""
    tp = fp = fn = 0
    f1s, n_pages = [], []
    for e in eps:
        cited = cited_pages(e.pages, e.relevance, threshold, margin, max_cited)
        hit = len(cited & e.gold)
        tp, fp, fn = tp + hit, fp + len(cited) - hit, fn + len(e.gold) - hit
        f1s.append(2 * hit / (len(cited) + len(e.gold)) if hit else 0.0)
        n_pages.append(len(cited))
    return {"precision": tp / max(1, tp + fp), "recall": tp / max(1, tp + fn),
            "mean_f1": float(np.mean(f1s)) if f1s else 0.0, "pages": float(np.mean(n_pages)) if n_pages else 0.0}


def fit(eps: Sequence[Episode], *, grid: Sequence[float] = GRID, margins: Sequence[float] = MARGINS,
        max_cited: Sequence[int] = MAX_CITED_GRID) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The chosen point (best mean page F1, then fewer pages) and the whole curve."""
    curve = [{"threshold": t, "margin": m, "max_cited": c, **{k: round(v, 4) for k, v in score(eps, t, m, c).items()}}
             for c in max_cited for m in margins for t in grid]
    best = max(curve, key=lambda d: (d["mean_f1"], -d["pages"], d["threshold"]))
    return {**best, "questions": len(eps)}, curve


def calibrate_pages(reader, data_dir: Path, embedder, *, limit: int | None = None,
                    progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Build the dev papers, run the episodes, fit: ``(page_selection block, curve)``.  The block
    records the dev figures of the sentence-level choice too (``sentence_level``), so a card can
    show what the page-level calibration changed."""
    papers = dev_papers(Path(data_dir), limit=limit)
    eps = episodes(reader, papers, embedder, progress=progress)
    chosen, curve = fit(eps)
    sel = (reader.config.calibration or {}).get("selection") or {}
    if sel:
        before = score(eps, float(sel["threshold"]), float(sel["margin"]), 4)
        chosen["sentence_level"] = {"threshold": sel["threshold"], "margin": sel["margin"], "max_cited": 4,
                                    **{k: round(v, 4) for k, v in before.items()}}
    chosen.update({"papers": len(papers), "pad_chunks": PAD_CHUNKS, "page_chars": PAGE_CHARS,
                   "candidates": CANDIDATES, "split": "dev"})
    return chosen, curve


def save_page_selection(folder: Path, data_dir: Path, *, embedder=None, limit: int | None = None,
                        progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Calibrate a saved reader's page selection in place: ``config.json`` -> ``calibration`` ->
    ``page_selection``, the curve into ``dev_curves.json`` (``page_selection_curve``), and the
    model card re-rendered (a hand-written section after the generated card is kept).  Nothing else
    in the calibration changes."""
    import json

    from .card import write_model_card
    from .model import Reader

    if embedder is None:
        from vectree.retrieval.embed import get_embedder

        embedder = get_embedder()
    folder = Path(folder)
    reader = Reader.load(folder)
    chosen, curve = calibrate_pages(reader, Path(data_dir), embedder, limit=limit, progress=progress)
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config.setdefault("calibration", {})["page_selection"] = chosen
    config_path.write_text(json.dumps(config, indent=1))
    curves_path = folder / "dev_curves.json"
    curves = json.loads(curves_path.read_text()) if curves_path.exists() else {}
    curves["page_selection_curve"] = curve
    curves_path.write_text(json.dumps(curves, indent=1))
    card = folder / "MODEL_CARD.md"
    kept = ""
    if card.exists():
        text = card.read_text()
        at = text.find(HAND_WRITTEN)
        kept = text[at:] if at >= 0 else ""
    reader.config.calibration = config["calibration"]
    write_model_card(folder, reader.config)
    if kept:
        card.write_text(card.read_text().rstrip("\n") + "\n\n" + kept)
    return chosen


HAND_WRITTEN = "## Where this copy was trained"
