"""Scale corpora of real text: N papers of about 10 sections each, composed from the shared data.

Nothing here is random tokens.  Every section is a real paragraph: QASPER full-text paragraphs
(with their section names), PubMedQA abstract paragraphs (with their structured labels:
BACKGROUND, METHODS, ...) and HotpotQA Wikipedia paragraphs (with their article titles).  Paper
``i`` of a corpus takes its sections from a fixed, seeded walk over that pool, so the corpora are
nested (the first 100 papers of the 1,000 corpus are the 100 corpus) and rebuilt identically on
every run; nothing generated is committed (the cache lives under ``/tmp/vectree-scale``).

Two products:

* :func:`papers` -> ``ScalePaper`` objects (title, abstract, sections of heading + paragraphs),
  typeset into PDFs by the project's own typesetter (:func:`write_pdfs`, ``vectree.demo.render``)
  for the ingestion points;
* :func:`entries` -> Layer-0 ``Entry`` rows (one paper entry, one section entry per section, the
  section's summary being its paragraph's first sentences), written straight into the search
  index for the search points, as the section-tree builder would have produced them.

Queries (:func:`queries`) are the shared PubMedQA and HotpotQA questions: real questions, some of
whose answers are in the corpus.

Usage: python benchmarks/scale_corpus.py --papers 100 --pdfs /tmp/vectree-scale/pdf100
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
CACHE = Path("/tmp/vectree-scale")
SEED = 20261205
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


@dataclass(frozen=True)
class Para:
    source: str  # qasper | pubmedqa | hotpotqa
    heading: str
    text: str


@dataclass(frozen=True)
class ScalePaper:
    doc_id: str
    title: str
    abstract: str
    sections: tuple[tuple[str, str], ...]  # (heading, paragraph)


def _jsonl_lines(path: Path) -> list[str]:
    # not str.splitlines(): it also splits on U+2028 inside JSON strings (PubMedQA has some)
    return [x for x in path.read_text().split("\n") if x.strip()]


def _clean(text: str) -> str:
    return " ".join(str(text).split())


def _sentences(text: str) -> list[str]:
    return [s for s in _SENT.split(text) if s]


@lru_cache(maxsize=1)
def pool(data: Path = DATA) -> tuple[Para, ...]:
    """Every usable paragraph of the shared texts (40 to 2,000 characters), in file order."""
    out: list[Para] = []
    for paper in json.loads((data / "qasper/hf/qasper-train-first10.json").read_text()):
        ft = paper["full_text"]
        for name, paras in zip(ft["section_name"], ft["paragraphs"]):
            heading = (name or "Section").split(":::")[-1].strip() or "Section"
            out += [Para("qasper", heading, _clean(p)) for p in paras]
    for line in _jsonl_lines(data / "pubmedqa/corpus.jsonl"):
        doc = json.loads(line)
        labels = doc.get("labels") or []
        for j, ctx in enumerate(doc["contexts"]):
            label = labels[j] if j < len(labels) else "RESULTS"
            out.append(Para("pubmedqa", label.title(), _clean(ctx)))
    seen: set[str] = set()
    for line in _jsonl_lines(data / "hotpotqa/ircot_format_dev_subsampled.jsonl"):
        for ctx in json.loads(line)["contexts"]:
            text = _clean(ctx["paragraph_text"])
            if text not in seen:
                seen.add(text)
                out.append(Para("hotpotqa", _clean(ctx["title"]), text))
    return tuple(p for p in out if 40 <= len(p.text) <= 2000)


def _trim(text: str, words: int) -> str:
    w = text.split()
    return text if len(w) <= words else " ".join(w[:words]).rstrip(",;:") + "."


def papers(n: int, sections: int = 10, data: Path = DATA) -> list[ScalePaper]:
    """The first ``n`` papers of the seeded sequence, ``sections`` sections each.

    The pool is walked in fresh seeded permutations, so a paragraph comes back about every
    ``len(pool)`` sections.  So that no two sections are the same text (exact duplicates would
    make nearest-neighbour ties), a section is its paragraph rotated to start at a different
    sentence on each reuse, with one sentence of a second paragraph (from an independent walk)
    after its first: real sentences, recombined."""
    paras = pool(data)
    splits = [_sentences(p.text) or [p.text] for p in paras]
    rng = random.Random(SEED)
    walks: list[list[int]] = [[], []]
    used = [0] * len(paras)

    def draw(w: int) -> int:
        if not walks[w]:  # a fresh permutation of the pool each time it is used up
            order = list(range(len(paras)))
            rng.shuffle(order)
            walks[w] = order
        return walks[w].pop()

    def rotated(k: int) -> list[str]:
        sents = splits[k]
        r = used[k] % len(sents)
        used[k] += 1
        return sents[r:] + sents[:r]

    out = []
    for i in range(n):
        secs = []
        for _ in range(sections):
            main, extra = draw(0), draw(1)
            rot = rotated(main)
            body = rot[:1] + rotated(extra)[:1] + rot[1:]
            secs.append((paras[main].heading, _trim(" ".join(body), 110)))
        lead = secs[0]
        title = _trim(f"{lead[0]}: {_sentences(lead[1])[0]}", 14).rstrip(".")
        abstract = " ".join((_sentences(b) or [b])[0] for _, b in secs[:3])
        out.append(ScalePaper(f"scale{i:05d}", title, _trim(abstract, 120), tuple(secs)))
    return out


def entries(corpus: list[ScalePaper]):
    """Layer-0 entries as the section-tree builder makes them: a paper entry (title, abstract,
    section titles) and one section entry per section (title, a two-sentence summary)."""
    from vectree.retrieval.search.entries import PAPER, SECTION, Entry

    out = []
    for p in corpus:
        titles = "; ".join(h for h, _ in p.sections)
        n = len(p.sections)
        out.append(Entry(f"{p.doc_id}#paper", p.doc_id, None, PAPER, p.title, f"{p.abstract}\n{titles}", 1, n))
        for j, (heading, para) in enumerate(p.sections, start=1):
            summary = " ".join(_sentences(para)[:2]) or para
            out.append(Entry(f"{p.doc_id}#n{j}", p.doc_id, f"n{j}", SECTION, heading, _trim(summary, 60), j, j))
    return out


def queries(n: int, data: Path = DATA) -> list[str]:
    """``n`` real questions: PubMedQA and HotpotQA, interleaved."""
    pm = [json.loads(x)["question"] for x in _jsonl_lines(data / "pubmedqa/questions.jsonl")]
    hp = [json.loads(x)["question_text"] for x in _jsonl_lines(data / "hotpotqa/ircot_format_dev_subsampled.jsonl")]
    mixed = [q for pair in zip(pm, hp) for q in pair]
    return mixed[:n]


def write_pdfs(corpus: list[ScalePaper], folder: Path) -> list[Path]:
    """Typeset each paper with the project's typesetter (``vectree.demo.render``); existing
    files are kept (the corpus is deterministic)."""
    from vectree.demo.model import Paper, Section
    from vectree.demo.render import render_paper

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for p in corpus:
        path = folder / f"{p.doc_id}.pdf"
        if not path.exists():
            paper = Paper(title=p.title, authors=["A. Scale", "B. Bench"], abstract=p.abstract,
                          sections=[Section(h, [body]) for h, body in p.sections],
                          references=["Shared data: QASPER, PubMedQA, HotpotQA."])
            tmp = path.with_suffix(".tmp.pdf")
            render_paper(paper, str(tmp))
            tmp.rename(path)
        out.append(path)
    return out


def fingerprint(corpus: list[ScalePaper]) -> str:
    h = hashlib.sha256()
    for p in corpus:
        h.update(json.dumps([p.doc_id, p.title, p.abstract, p.sections]).encode())
    return h.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", type=int, default=100)
    ap.add_argument("--sections", type=int, default=10)
    ap.add_argument("--pdfs", type=Path, help="typeset the papers into this folder")
    args = ap.parse_args()
    corpus = papers(args.papers, args.sections)
    print(f"pool: {len(pool())} paragraphs; {len(corpus)} papers, {len(entries(corpus))} Layer-0 entries; "
          f"fingerprint {fingerprint(corpus)}")
    if args.pdfs:
        print(f"{len(write_pdfs(corpus, args.pdfs))} PDFs under {args.pdfs}")


if __name__ == "__main__":
    main()
