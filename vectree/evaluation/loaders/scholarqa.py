"""``scholarqa_multi``: multi-paper synthesis over the snippets the expert answers cite.

Reads ``human_answers.json``.  The corpus is every cited snippet (``ctxs``) of every question,
grouped by paper: a paper is identified by its Semantic Scholar ``url`` when it has one, else by
its normalised title; its document is its distinct snippets in order of first appearance, joined
by blank lines.  A question's gold papers are the papers of its own ``ctxs``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ..datasets import _read_json
from ..layouts import LayoutError, validate_layout
from .base import SynthesisBenchmark, SynthPaper, SynthQuestion


def _paper_key(ctx: dict) -> str:
    url = str(ctx.get("url") or "").strip()
    if url:
        return "url:" + url.rstrip("/").lower()
    return "title:" + " ".join(re.sub(r"[^0-9a-z]+", " ", str(ctx.get("title", "")).lower()).split())


def load_scholarqa_multi(folder: str | Path) -> SynthesisBenchmark:
    folder = Path(folder)
    files = validate_layout("scholarqa_multi", folder)
    path = files["human_answers.json"]
    data = _read_json(path)
    ids: dict[str, str] = {}
    titles: dict[str, str] = {}
    urls: dict[str, str] = {}
    snippets: dict[str, list[str]] = {}
    questions = []
    for i, row in enumerate(data):
        if not isinstance(row["ctxs"], list):
            raise LayoutError(f"{path}: item {i} 'ctxs' is not a list")
        gold = []
        for j, ctx in enumerate(row["ctxs"]):
            if not isinstance(ctx, dict) or "text" not in ctx or "title" not in ctx:
                raise LayoutError(f"{path}: item {i} ctxs[{j}] needs 'title' and 'text'")
            key = _paper_key(ctx)
            doc_id = ids.get(key)
            if doc_id is None:
                doc_id = ids[key] = "s2-" + hashlib.sha256(key.encode()).hexdigest()[:12]
                titles[doc_id], urls[doc_id], snippets[doc_id] = str(ctx["title"]), str(ctx.get("url") or ""), []
            text = str(ctx["text"]).strip()
            if text and text not in snippets[doc_id]:
                snippets[doc_id].append(text)
            gold.append(doc_id)
        questions.append(SynthQuestion(str(row["id"]), str(row["input"]), str(row["output"]),
                                       tuple(dict.fromkeys(gold)), str(row.get("subject", ""))))
    papers = {d: SynthPaper(d, titles[d], tuple(snippets[d]), urls[d]) for d in ids.values() if snippets[d]}
    return SynthesisBenchmark("scholarqa_multi", papers, questions, files,
                              [f"scholarqa_multi: {len(papers)} papers, "
                               f"{sum(len(p.snippets) for p in papers.values())} distinct snippets"])
