"""The offline navigator's reader path: calibrated evidence selection, answer reading, confidence
and abstention (the policy is described in :mod:`.navigator`)."""

from __future__ import annotations

import re
import time
from typing import Any

from .tools import MAX_PAGES_PER_CALL, Trace

MAX_CITED = 4
MAX_PAPERS = 2  # papers read per question when the calibrated paper threshold admits several
READ_TOP = 3
CAPTION = re.compile(r"^\s*(fig(ure)?\.?|table|tab\.|algorithm|listing|eq(uation)?\.?)\s*\d", re.I)
ASKS_FOR_TITLE = re.compile(r"\b(title|caption|called|named|name of)\b", re.I)


def _norm(s: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", s.lower()))


def answer_with_reader(nav, reader, question: str, *, paper: str | None = None):
    from vectree.retrieval.rerank.calibrate import answer_confidence, answer_of, select

    from .navigator import NUMERIC_QUESTION, YES_NO_START, Answer, content_words, numeric_answer

    started = time.perf_counter()
    tb, trace = nav.toolbox, Trace()
    question = question.strip()
    if not question:
        raise ValueError("empty question")
    cal = reader.config.calibration or {}
    sel = cal.get("selection") or {"threshold": 0.5, "margin": 0.3}
    paper_sel = cal.get("papers") or sel
    abstain_below = float((cal.get("evidence") or {}).get("abstain_below", 0.0))

    def abstain(best: float, possibly: list[dict[str, Any]], why: str):
        text = (f"The corpus holds no good evidence for this question ({why}). Possibly relevant: "
                + ("; ".join(f"{p['doc_id']}" + (f" p.{p['page']}" if p.get("page") else "") for p in possibly)
                   or "nothing") + ".")
        trace.record(tb, "submit_answer", {"answer": text, "citations": []})
        return Answer(question, text, [], [], trace.as_dict(), time.perf_counter() - started,
                      confidence=round(best, 3), abstained=True, possibly_relevant=possibly)

    if paper is not None:
        tb.paper(paper)  # an unknown paper is the caller's error (404), whatever the question
    if nav.calibrated and not content_words(question):
        # nothing to search for ("x", "?", "the"): no evidence can be judged relevant to it
        return abstain(0.0, [], "the question has no content words to look for")

    # ---- which papers
    titles: dict[str, str] = {}
    best_paper = 1.0
    if paper is None:
        found = trace.record(tb, "search_papers", {"query": question, "k": max(nav.papers, 5)})
        results = found.data["results"] if found else []
        if found and found.data.get("score") == "relevance":  # reranked: each score is a calibrated relevance
            results = [{**r, "relevance": r["score"]} for r in results]
        if not results:
            return nav._no_answer(question, trace, started, "no paper in the corpus matches the question")
        titles = {r["doc_id"]: r["title"] for r in results}
        best_paper = max((r.get("relevance", 1.0) for r in results), default=0.0)
        if nav.calibrated and all("relevance" in r for r in results):
            chosen = select([r["relevance"] for r in results], paper_sel["threshold"], paper_sel["margin"])
            papers = [results[i]["doc_id"] for i in chosen][:min(nav.papers, MAX_PAPERS)]
        else:
            papers = [results[0]["doc_id"]]
    else:
        row = tb.paper(paper)  # an unknown paper is the caller's error, not an empty answer
        titles[paper] = row.get("title") or ""
        papers = [paper]

    # ---- evidence candidates of every chosen paper
    candidates: list[dict[str, Any]] = []
    for doc_id in papers:
        trace.record(tb, "get_document_tree", {"doc_id": doc_id, "max_depth": 3})
        within = trace.record(tb, "search_within_paper", {"doc_id": doc_id, "query": question, "k": 8})
        if within is None:
            continue
        passages = tb.passages(doc_id)
        readings = tb.readings.get((doc_id, question), {})
        for h in within.data["results"]:
            if "passage" not in h:  # SproutRAG nodes: not sentence passages, skip for reading
                continue
            i = h["passage"]
            candidates.append({"doc_id": doc_id, "page": passages.pages[i], "text": passages.texts[i],
                               "relevance": float(h["relevance"]), "reading": readings.get(i)})
    if not candidates:
        return nav._no_answer(question, trace, started, "the papers hold no passages to read")
    # candidates stay in the tools' order (hybrid and reranker orders fused, best paper first);
    # the thresholds below use the calibrated probabilities
    best = max(c["relevance"] for c in candidates)

    # ---- abstain when even the best evidence is weak, or when the best paper and its best
    # evidence together are (their mean below the same calibrated threshold: paper entries are
    # short and score lower than sentences, so a paper alone does not decide)
    joint = (best + best_paper) / 2 if paper is None else best
    if nav.calibrated and (best < abstain_below or joint < abstain_below):
        possibly = [{"doc_id": c["doc_id"], "page": c["page"], "title": titles.get(c["doc_id"], ""),
                     "relevance": round(c["relevance"], 3), "text": c["text"]}
                    for c in sorted(candidates, key=lambda c: -c["relevance"])[:3]]
        why = (f"best evidence relevance {best:.2f}" if best < abstain_below else
               f"best paper {best_paper:.2f} and evidence {best:.2f} relevance, mean {joint:.2f}")
        return abstain(min(best, joint), possibly, f"{why}, below the calibrated {abstain_below:.2f}")

    # ---- which evidence is cited
    if nav.calibrated:
        cited = [candidates[i] for i in select([c["relevance"] for c in candidates], sel["threshold"], sel["margin"])]
    else:
        cited = candidates[:2] if len(candidates) > 1 and candidates[1]["relevance"] >= 0.9 * best else candidates[:1]
    cited = sorted(cited, key=lambda c: -c["relevance"])[:MAX_CITED]

    # ---- read the answer from the best evidence that is not a caption (unless one is asked for)
    missing = [c for c in candidates[:READ_TOP] if c.get("reading") is None]
    for c, r in zip(missing, reader.read(question, [c["text"] for c in missing]) if missing else []):
        c["reading"] = r
    asks_caption = bool(ASKS_FOR_TITLE.search(question)) or bool(re.search(r"\b(figure|table|fig)\b", question, re.I))
    readable = [c for c in candidates if c.get("reading") is not None
                and (asks_caption or not CAPTION.match(c["text"]))] or [c for c in candidates if c.get("reading")]
    holder = readable[0]
    r0 = holder["reading"]
    readings = [c["reading"] for c in readable[:READ_TOP]]
    kind, span = answer_of(r0)
    title = titles.get(holder["doc_id"], "")
    if YES_NO_START.match(question) and not re.search(r"\bor\b", question):
        text = "Yes" if r0.type_probs["yes"] >= r0.type_probs["no"] else "No"
    else:
        number = None
        if NUMERIC_QUESTION.search(question):
            # a quantity is asked for: the number nearest the question's words in the best evidence
            number = numeric_answer(question, [c["text"] for c in readable[:2]])
        bad = (not span or len(span) < 2 or len(span.split()) > 12
               or (CAPTION.match(span) and not ASKS_FOR_TITLE.search(question))
               or (title and _norm(span) and _norm(span) in _norm(title) and not ASKS_FOR_TITLE.search(question)))
        if number:
            text = number
            # the sentence the number came from holds the answer
            holder = next((c for c in readable[:2] if number in c["text"]), holder)
        elif not bad:
            text = span
        else:  # the span head gave nothing usable: the clause of the sentence that answers
            text = nav._extract(question, [holder["text"]])
    # the sentence that holds the answer is quoted first
    if holder not in cited:
        cited = [holder] + cited[:MAX_CITED - 1]
    else:
        cited = [holder] + [c for c in cited if c is not holder]
    for doc_id in dict.fromkeys(c["doc_id"] for c in cited):  # read the cited pages before answering
        pages = sorted({c["page"] for c in cited if c["doc_id"] == doc_id})[:MAX_PAGES_PER_CALL]
        trace.record(tb, "get_page_content", {"doc_id": doc_id, "pages": pages})
    citations = [{"doc_id": c["doc_id"], "page": c["page"], "quote": c["text"]} for c in cited]
    features = [r0.relevance, min((r0.relevance - readings[1].relevance) if len(readings) > 1 else 2.0, 5.0),
                r0.type_probs[kind]]
    confidence = answer_confidence(features, cal)
    submitted = trace.record(tb, "submit_answer", {"answer": text, "citations": citations})
    return Answer(question, text, submitted.data["citations"] if submitted else citations,
                  [c["text"] for c in cited], trace.as_dict(), time.perf_counter() - started,
                  confidence=round(confidence, 3))
