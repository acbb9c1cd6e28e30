"""The offline navigator: a deterministic policy over the same seven tools, the default agent.

With the trained reader (:mod:`vectree.retrieval.rerank`, shipped in the package) it reads like this:

* ``search_papers`` (hybrid candidates reranked by the reader, each with a calibrated relevance);
  the papers whose relevance passes the calibrated paper threshold (and margin to the best) are
  read, at most ``papers`` of them: one when one paper holds the evidence, several when it spreads;
* per paper ``get_document_tree`` and ``search_within_paper`` (sentences reranked by the reader;
  with SproutRAG's vote on, a second ``search_within_paper`` with ``passages_only``: the pages are
  cited from plain passages and SproutRAG's order picks the answer's sentence among them);
* the evidence candidates of every paper are pooled; when even the best one is below the
  calibrated evidence threshold the navigator abstains: the answer says the corpus holds no good
  evidence and lists the best candidates as "possibly relevant", with no citation;
* otherwise it cites every candidate whose calibrated relevance passes the selection threshold
  and lies within the margin of the best (calibrated on dev, see ``calibrate.py``), opens those
  pages, and reads the answer from the best evidence with the reader's heads: Yes / No for a
  yes/no question, else the answer span (a span that is a caption or the paper's title falls back
  to the clause rule below); the first citation's quote is the sentence that holds the answer;
* the answer carries a calibrated confidence (probability that it is right).

Without a reader (``VECTREE_RERANKER=off``, or the ``vectree-no-rerank`` ablation) it reads the way the LLM agent is told to: search the corpus (skipped when the paper is given),
read the paper's tree, search within the paper, open the one or two pages that the within-paper
search and the tree agree on, and answer extractively from those pages:

* the sentences of the opened pages are ranked against the question (MiniLM cosine plus
  IDF-weighted word overlap);
* a yes/no question is answered "Yes" or "No" (negation in the best evidence that the question
  lacks flips it);
* any other question is answered with the shortest clause of the best sentences that carries
  what the question asks for and does not merely repeat it;
* the pages of the chosen sentences are cited, with the sentences as quotes: citations are the
  pages that hold the evidence, not every page read.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from vectree.retrieval.passages import READ_CANDIDATES, heading_key, is_heading

from .tools import MAX_PAGES_PER_CALL, MIN_QUOTE_WORDS, Toolbox, ToolError, Trace

YES_NO_START = re.compile(
    r"^\s*(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|shall|may|might|must)\b", re.I)
NEGATION = re.compile(r"\b(not|no|never|neither|nor|cannot|without|none|fail(s|ed)?|unable|n't)\b", re.I)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]+|\d+(?:\.\d+)?%?")
_CLAUSE_SPLIT = re.compile(r"\s*(?:[,;:()\[\]]|\s-\s|\s–\s|\bwhich\b|\bwhere\b|\bwhile\b|\bwhereas\b|\bbecause\b)\s*")
STOP = frozenset("""a an the of in on at to for from by with and or but is are was were be been being this that these
those it its as we our they their them he she his her you your i do does did can could would should will may might
what which who whom whose when where why how than then there here also such into over under about between both each
other some any all more most very not no only own same so too just have has had using used use based paper""".split())
# a second evidence sentence (and its page) is cited when it scores nearly as well as the best;
# chosen on QASPER (0.9 kept recall without costing precision; a first-page penalty did not help)
SECOND_CITATION = 0.9
LEAD_TRIM = re.compile(r"^(?:and|or|but|that|which|then|thus|so|also|we|they|it|is|are|was|were|by|of|with|as|to|the)\s+", re.I)


def content_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in STOP]


@dataclass
class Answer:
    """What the navigator (or the LLM agent) returns."""

    question: str
    answer: str
    citations: list[dict[str, Any]] = field(default_factory=list)  # {doc_id, page, quote, valid[, reason, relevance]}
    evidence: list[str] = field(default_factory=list)  # the sentences the answer came from
    trace: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    agent: str = "offline"
    confidence: float | None = None  # calibrated probability that the answer is right (reader path)
    abstained: bool = False  # True: no good evidence; ``possibly_relevant`` lists the best candidates
    possibly_relevant: list[dict[str, Any]] = field(default_factory=list)
    # what ``confidence`` was computed from (reader path; kept for calibration, not shown to users)
    confidence_features: dict[str, float] = field(default_factory=dict, repr=False)

    @property
    def pages(self) -> list[tuple[str, int]]:
        return sorted({(c["doc_id"], c["page"]) for c in self.citations if c.get("valid", True)})

    def as_dict(self) -> dict[str, Any]:
        return {"question": self.question, "answer": self.answer, "citations": self.citations,
                "evidence": self.evidence, "trace": self.trace, "seconds": round(self.seconds, 3),
                "agent": self.agent, "confidence": self.confidence, "abstained": self.abstained,
                "possibly_relevant": self.possibly_relevant}


class OfflineNavigator:
    """Drives a :class:`Toolbox` deterministically; see the module docstring for the policy."""

    def __init__(self, toolbox: Toolbox, *, max_pages: int = 2, papers: int = 3, reader: bool = True,
                 calibrated: bool = True):
        """``reader=False``: the rule-based reading (ranking by the reranker still applies when the
        toolbox has one); ``calibrated=False``: the reader ranks and reads, but pages are chosen by
        the old rule (best plus a runner-up), one paper is read and nobody abstains."""
        self.toolbox = toolbox
        self.max_pages = max_pages
        self.papers = papers
        self.use_reader = reader
        self.calibrated = calibrated

    def _embedder(self):
        from vectree.retrieval.embed import get_embedder

        return get_embedder()

    def answer(self, question: str, *, paper: str | None = None) -> Answer:
        reader = self.toolbox.reranker() if self.use_reader else None
        if reader is not None:
            return answer_with_reader(self, reader, question, paper=paper)
        return self.answer_by_rules(question, paper=paper)

    def answer_by_rules(self, question: str, *, paper: str | None = None) -> Answer:
        started = time.perf_counter()
        tb, trace = self.toolbox, Trace()
        question = question.strip()
        if not question:
            raise ValueError("empty question")
        search_sections: dict[str, list[dict]] = {}
        if paper is None:
            found = trace.record(tb, "search_papers", {"query": question, "k": self.papers})
            if found is None or not found.data["results"]:
                return self._no_answer(question, trace, started, "no paper in the corpus matches the question")
            paper = found.data["results"][0]["doc_id"]
            search_sections = {r["doc_id"]: r["sections"] for r in found.data["results"]}
        else:
            tb.paper(paper)  # an unknown paper is the caller's error, not an empty answer
        tree = trace.record(tb, "get_document_tree", {"doc_id": paper, "max_depth": 3})
        within = trace.record(tb, "search_within_paper", {"doc_id": paper, "query": question, "k": 6})
        pages = self._choose_pages(within.data["results"] if within else [],
                                   tree.data["sections"] if tree else [], search_sections.get(paper, []))
        if not pages:
            return self._no_answer(question, trace, started, "the paper has no text to read")
        opened = trace.record(tb, "get_page_content", {"doc_id": paper, "pages": pages})
        if opened is None:
            return self._no_answer(question, trace, started, "the pages could not be opened")
        ranked = self._rank_sentences(question, paper, [p["page"] for p in opened.data["pages"]],
                                      within.data["results"] if within else [])
        if not ranked:
            return self._no_answer(question, trace, started, "the opened pages hold no sentences")
        best_page, best, _ = ranked[0]
        evidence = [(best_page, best)]
        if len(ranked) > 1 and ranked[1][2] >= SECOND_CITATION * ranked[0][2]:
            evidence.append(ranked[1][:2])
        text = self._extract(question, [s for _, s in evidence])
        citations = [{"doc_id": paper, "page": p, "quote": s} for p, s in evidence]
        submitted = trace.record(tb, "submit_answer", {"answer": text, "citations": citations})
        return Answer(question, text, submitted.data["citations"] if submitted else citations,
                      [s for _, s in evidence], trace.as_dict(), time.perf_counter() - started)

    def _no_answer(self, question, trace, started, why) -> Answer:
        trace.record(self.toolbox, "submit_answer", {"answer": f"No answer found: {why}.", "citations": []})
        return Answer(question, f"No answer found: {why}.", [], [], trace.as_dict(), time.perf_counter() - started)

    def _choose_pages(self, hits: list[dict], sections: list[dict], matched: list[dict]) -> list[int]:
        """Pages by fused evidence: within-paper hits by rank, a bonus for pages of sections that
        the corpus search matched; the top page, plus the runner-up when it is nearly as good."""
        score: Counter = Counter()
        for rank, h in enumerate(hits):
            for p in (h.get("pages") or [h.get("page")]):
                if p:
                    # the best hit on a page decides; more hits on it only break ties
                    score[p] = max(score[p], 1.0 / (rank + 1)) + 0.05
        for s in matched:
            for p in range(s["pages"][0], min(s["pages"][1], s["pages"][0] + 1) + 1):
                score[p] += 0.25
        if not score and sections:
            score[sections[0]["pages"][0]] = 1.0
        if not score:
            return [1]  # nothing to go on: the first page holds the abstract
        # open the best pages; citations are decided later by the evidence found on them
        return sorted(p for p, _ in score.most_common(self.max_pages))

    def _rank_sentences(self, question: str, doc_id: str, pages: list[int], hits: list[dict]):
        """The sentences of the opened pages, best first: cosine to the question (with the vectors
        the pipeline stored for these very sentences), IDF-weighted word overlap, and a small bonus
        for sentences the within-paper search already returned."""
        passages = self.toolbox.passages(doc_id)
        idx = [i for i in passages.on_pages(pages) if len(passages.texts[i].split()) >= MIN_QUOTE_WORDS]
        if not idx:
            return []
        q = self._embedder().encode_query(question)
        cos = passages.vectors[idx] @ q
        sentences = [(passages.pages[i], passages.texts[i]) for i in idx]
        qwords = Counter(content_words(question))
        df = Counter(w for _, s in sentences for w in set(content_words(s)))
        n = len(sentences)
        idf = {w: math.log(1 + n / (1 + df[w])) for w in qwords}
        norm = sum(idf.values()) or 1.0
        snippets = " ".join(h.get("snippet", "") for h in hits[:2])
        scored = []
        for (page, s), c in zip(sentences, cos):
            words = set(content_words(s))
            overlap = sum(idf[w] for w in qwords if w in words) / norm
            in_snippet = 0.05 if s in snippets else 0.0
            scored.append((page, s, float(c) + 0.35 * overlap + in_snippet))
        scored.sort(key=lambda t: -t[2])
        return scored

    def _extract(self, question: str, evidence: list[str]) -> str:
        if YES_NO_START.match(question) and not re.search(r"\bor\b", question):
            negated = bool(NEGATION.search(evidence[0])) and not NEGATION.search(question)
            return "No" if negated else "Yes"
        if NUMERIC_QUESTION.search(question):
            number = numeric_answer(question, evidence)
            if number:
                return number
        names = named_answer(question, evidence[0]) if asks_for_name(question) else None
        return names or self._clause_answer(question, evidence[0])

    def _clause_answer(self, question: str, sentence: str) -> str:
        """The clause of ``sentence`` most similar to the question that adds words the question lacks."""
        qstems = {stem(w) for w in content_words(question)}
        candidates = []
        for clause in _CLAUSE_SPLIT.split(sentence):
            clause = LEAD_TRIM.sub("", clause.strip(" .")).strip()
            if len(clause.split()) < 2 or echoes(clause, question):
                continue
            candidates.append(clause)
        if not candidates:
            return sentence
        emb = self._embedder()
        q = emb.encode_query(question)
        vecs = emb.encode_documents(candidates)
        scores = []
        for clause, v in zip(candidates, vecs):
            words = content_words(clause)
            novelty = sum(1 for w in words if stem(w) not in qstems) / len(words)
            length = len(clause.split())
            brevity = 1.0 if length <= 14 else 14 / length
            scores.append(float(v @ q) * (0.5 + novelty) * brevity)
        return candidates[int(np.argmax(scores))]


_QUANTITY_WORDS = (r"accuracy|error|rmse|mae|mape|percentage|percent|proportion|fraction|rate|energy|"
                   r"temperature|threshold|size|number|capacity|duration|margin|weight|stability|parameters|value|"
                   r"score|f1|voltage|current|time|speed|cost|reduction|increase|improvement|count|amount|length|"
                   r"frequency|power")
NUMERIC_QUESTION = re.compile(
    r"^\s*how (many|much|large|big|long|often|fast|old|high|low|small|far|heavy|deep)\b"
    r"|\b(what|which)\b.*\b(" + _QUANTITY_WORDS + r")\b", re.I)
UNIT = (r"%|‰|°\s?C|K\b|kJ/mol|J/mol|[kMGT]?Wh\b|[µmkMG]?W\b|[mµk]?V\b|m?Ah\b|[kMGT]B\b|[kMG]?Hz\b|ms\b|s\b|min\b|"
        r"(?:seconds|minutes|hours|days|weeks|months|years|cycles|cells|modules|spectra|events|parameters|samples|"
        r"papers|questions|documents|words|tokens|epochs|layers|points|times|fold|x)\b")
NUMBER_SPAN = re.compile(
    r"(?:(?:about|approximately|around|roughly|nearly|over|under|every|up to)\s+)?(?:[$€£]\s?)?[-+]?\d[\d,]*(?:\.\d+)?"
    # a magnitude ("81.1M papers", "100 million sentences") belongs to the number
    r"(?:\s?(?:[kKMB]\b|thousand\b|million\b|billion\b|trillion\b))?"
    r"(?:\s?(?:" + UNIT + r"))?(?:\s?(?:per|/)\s?[a-z]+\b)?")
# "three annotators": QASPER's papers write small counts in words
NUMBER_WORD = re.compile(r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
                         r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|hundred|dozen)\b", re.I)
REFERENCE_BEFORE = re.compile(r"(section|sec\.|fig\.|figure|table|eq\.|equation|ref\.|appendix|step|stage|phase)\s*$", re.I)


def stem(word: str) -> str:
    """A crude stem that is enough to match "retain"/"retained", "reject"/"rejected" (first 5 letters)."""
    return word.lower()[:5] if word[:1].isalpha() else word.lower()


def echoes(span: str, question: str) -> bool:
    """True when ``span`` adds nothing to the question: every content word of it (by stem) is
    already in the question ("What is the seed lexicon?" -> "Seed Lexicon").  Such a span names
    what was asked about, not the answer; the clause rule then looks for one that adds words."""
    qstems = {stem(w) for w in content_words(question)}
    return all(stem(w) in qstems for w in content_words(span))


# "What datasets do they use?", "Which baselines ...?", "What evaluation metric ...?": a question
# that asks for a named thing of a kind (40 % of QASPER's dev-dictionary questions); its answer
# is the name the evidence gives ("the Europarl German-English corpus", "BiDAF", "BLEU")
KIND_QUESTION = re.compile(
    r"^\s*(?:what|which)\s+(?:[\w'-]+\s+){0,3}?(?:datasets?|data\s?sets?|corpus|corpora|models?|baselines?|metrics?|"
    r"methods?|architectures?|algorithms?|tools?|toolkits?|benchmarks?|languages?|frameworks?|classifiers?|"
    r"encoders?|embeddings?|approach(?:es)?|techniques?|tasks?|features?|systems?|libraries|library|measures?|"
    r"software|platforms?|networks?|parsers?|taggers?|optimi[sz]ers?|loss(?:es)?)\b", re.I)
_NAME_TOKEN = re.compile(r"[A-Za-z0-9][\w&+'./-]*[\w+]|[A-Za-z0-9]")
# placeholders the extraction of papers leaves (QASPER's BIBREF12, INLINEFORM0) and words that are
# capitalised for another reason than being a name
_NOT_A_NAME = re.compile(r"^(?:BIBREF|INLINEFORM|TABREF|SECREF|FIGREF|DISPLAYFORM)\d*$|^(?:Table|Figure|Fig|Section|Sec|"
                         r"Eq|Equation|Appendix|We|Our|The|This|These|Those|In|For|On|To|It|Its|As|At|By|From|With|"
                         r"And|Or|Both|All|Each|Then|Here|There|However|Finally|First|Second|Third|Also|A|An|I)$")


def _name_like(token: str, first: bool) -> bool:
    """A token that names something: an acronym or mixed case ("BERT", "IMDb", "QANet"), letters
    with digits ("WMT15"), or a capitalised word that does not open the sentence."""
    if _NOT_A_NAME.match(token) or not any(ch.isalpha() for ch in token):
        return False
    inner_upper = any(ch.isupper() for ch in token[1:])
    has_digit = any(ch.isdigit() for ch in token)
    return inner_upper or has_digit or (token[0].isupper() and not first)


def abbreviates(name: str, question: str) -> bool:
    """``name`` is an abbreviation of consecutive words of ``question`` ("S-RNN" of "Structural-RNN",
    "GNB" of "Gaussian naive Bayes"): the initials of those words -- a word already in capitals counts
    whole -- spell it.  Such a name is the question's own thing under another name, never an answer."""
    short = re.sub(r"[^A-Za-z0-9]", "", name)
    if len(short) < 2 or not any(c.isupper() for c in short[1:]) or " " in name.strip():
        return False
    # function words spell nothing: "DT" is no abbreviation of "do they"
    parts = [p for p in re.split(r"[\s\-/]+", question) if p and p.lower().strip("?.,") not in STOP]
    pieces = [re.sub(r"[^A-Za-z0-9]", "", p) for p in parts]
    pieces = [p if p.isupper() or p.isdigit() else p[:1] for p in pieces]
    target = short.upper()
    for i in range(len(pieces)):
        spelt = ""
        for p in pieces[i:]:
            spelt += p.upper()
            if spelt == target:
                return True
            if not target.startswith(spelt):
                break
    return False


def named_answer(question: str, sentence: str, *, most: int = 5) -> str | None:
    """The names ``sentence`` gives that ``question`` does not already hold, joined by ", ", in
    order (runs of name-like tokens, "&" and "-" kept inside a name; at most ``most``); None when
    it names nothing new.  For :data:`KIND_QUESTION` questions: "We use the Europarl German-English
    parallel corpus BIBREF22" answers "What datasets do they use?" with "Europarl German-English"."""
    qstems = {stem(w) for w in content_words(question)}
    names: list[str] = []
    run: list[str] = []
    tokens = list(_NAME_TOKEN.finditer(sentence))

    def close(at: int) -> None:
        """End the name being read; ``at``: where the sentence goes on after it."""
        if run:
            name = " ".join(run)
            words = content_words(name)
            cites = re.match(r"\s*et\s+al\b", sentence[at:])  # "See et al. (2017)": authors, not a name
            if words and not cites and not all(stem(w) in qstems for w in words) and name not in names \
                    and not abbreviates(name, question):
                names.append(name)
            run.clear()

    def opens(m) -> bool:  # the token opens the sentence (or a clause after a colon)
        return m.start() == 0 or sentence[:m.start()].rstrip().endswith((".", ":"))

    def joined(i: int) -> bool:  # nothing but a space, "&" or "-" between token i and the next
        return i + 1 < len(tokens) and sentence[tokens[i].end():tokens[i + 1].start()].strip() in ("", "&", "-")

    for i, m in enumerate(tokens):
        token = m.group()
        if run and not joined(i - 1):
            close(tokens[i - 1].end())  # a comma, a bracket or a word between: the name ended
        nxt = tokens[i + 1].group() if joined(i) else None
        if _name_like(token, first=opens(m)):
            run.append(token)
        elif nxt is not None and _name_like(nxt, first=False) and (
                token.isdigit() and run or opens(m) and token[0].isupper() and not _NOT_A_NAME.match(token)):
            run.append(token)  # "Release 5 English", a name that opens the sentence ("Ontonotes Release")
        else:
            close(m.start())
    close(len(sentence))
    return ", ".join(names[:most]) if names else None


def span_clause(sentence: str, span: str) -> str:
    """The clause of ``sentence`` around ``span``: from the clause break before it to the first
    break after it (breaks: :data:`_CLAUSE_SPLIT`); ``span`` itself when it is not in the sentence.
    "How is novelty scored?": the span "mean distance between each generated caption" becomes
    "... the mean distance between each generated caption and its nearest training caption"."""
    at = sentence.find(span)
    if at < 0:
        return span
    start = 0
    for piece in _CLAUSE_SPLIT.finditer(sentence):
        if piece.end() <= at:
            start = piece.end()
        elif piece.start() >= at + len(span):
            return sentence[start:piece.start()].strip(" .")
    return sentence[start:].strip(" .")


def asks_for_name(question: str) -> bool:
    """A :data:`KIND_QUESTION` that does not ask for a quantity ("What is the dataset size?")."""
    return bool(KIND_QUESTION.search(question)) and not NUMERIC_QUESTION.search(question)


def asked_quantity(question: str) -> tuple[str, bool] | None:
    """``(stem, counted)`` of the quantity a question asks for: ``("accur", False)`` of "What
    accuracy did X reach?" (a property, stated as "accuracy of 94.2%" or "94.2% accuracy"),
    ``("layer", True)`` of "How many layers ...?" (a count, stated before the noun: "three
    layers", "a 3-layer"); None when the question names none."""
    m = re.search(r"\b(?:what|which)\b.*?\b(" + _QUANTITY_WORDS + r")\b", question, re.I)
    if m:
        return stem(m.group(1)), False
    m = re.match(r"\s*how (?:many|much)\s+(?:of\s+the\s+)?([A-Za-z][\w-]*)", question, re.I)
    return (stem(m.group(1)), True) if m and m.group(1).lower() not in STOP else None


def numeric_answer(question: str, evidence: list[str]) -> str | None:
    """The number (with its unit) in the evidence that sits closest to the words of the question,
    skipping numbers the question itself mentions; earlier evidence sentences weigh more.

    The quantity the question asks for (:func:`asked_quantity`) decides first: the number that
    states it ("an accuracy of 94.2%", "94.2% accuracy", "three layers") outranks one that is only
    near other words of the question.  A number glued to a word by a
    hyphen ("a twelve-channel calorimeter", "15-minute average") describes that word and is
    skipped, unless the question asks about it ("a 3-layer network" for "How many layers?")."""
    qstems = {stem(w) for w in content_words(question)}
    qnumbers = set(re.findall(r"\d[\d,.]*", question))
    asked, counted = asked_quantity(question) or (None, False)
    best, best_score = None, 0.0
    for rank, sent in enumerate(evidence[:2]):
        tokens = [(m.start(), m.group()) for m in re.finditer(r"\S+", sent)]
        anchors = [i for i, (_, t) in enumerate(tokens) if any(stem(w) in qstems for w in content_words(t))]
        # where the sentence names the asked quantity -- not another one of its kind: "maximum
        # absolute error" is not the "root-mean-square error" asked for (a word before it that
        # the question lacks)
        heads = [i for i, (_, t) in enumerate(tokens) if asked and any(stem(w) == asked for w in content_words(t))
                 and not (i > 0 and any(stem(w) not in qstems for w in content_words(tokens[i - 1][1])))]
        found = []  # (match, first token, last token)
        spans = sorted([*NUMBER_SPAN.finditer(sent), *NUMBER_WORD.finditer(sent)], key=lambda m: m.start())
        for m in spans:
            digits = re.findall(r"\d[\d,.]*", m.group())
            if m.re is NUMBER_WORD:
                if m.group().lower() in question.lower() or m.group().lower() == "one":
                    continue  # "one" is as often a pronoun ("one of the ...") as a count
            elif not digits or digits[0].rstrip(".,") in qnumbers or REFERENCE_BEFORE.search(sent[:m.start()]):
                continue
            if m.start() > 0 and (sent[m.start() - 1].isalnum() or sent[m.start() - 1] in "-_"):
                continue  # a digit inside a name such as HELIX-212 or NMC811
            token = re.search(r"\S*$", sent[:m.start()]).group() + re.match(r"\S*", sent[m.start():]).group()
            if IDENTIFIER.search(token):
                continue  # a DOI or a URL: it names something, it counts nothing
            if re.fullmatch(r"(?:19|20)\d\d", m.group().strip(" ,;.()")):
                continue  # a bare year dates something; it is not the quantity asked for
            glued = re.match(r"-([A-Za-z]+)", sent[m.end():])
            if glued and stem(glued.group(1)) not in qstems:
                continue  # "twelve-channel", "15-minute": a description of the word it is glued to
            found.append((m, sum(1 for start, _ in tokens if start < m.start()),
                          sum(1 for start, _ in tokens if start < m.end()) - 1))
        # the number that states the asked quantity: for a property, the first number within six
        # words after it ("accuracy of 94.2%", "RMSE at 15 °C was 1.48%": 15 °C is the question's)
        # or right before it ("94.2% accuracy"); for a count, before its noun with at most one word
        # between ("three layers", "a 3-layer", "10,000 Arabic tweets")
        stated = set()
        for h in heads:
            if counted:
                stated |= {j for j, (_, _, last) in enumerate(found) if 0 <= h - last <= 2}
                continue
            after = [j for j, (_, idx, _) in enumerate(found) if 0 < idx - h <= 6]
            stated |= set(after[:1]) | {j for j, (_, _, last) in enumerate(found) if 0 <= h - last <= 1}
        for j, (m, idx, _) in enumerate(found):
            closeness = sum(1.0 / (1 + abs(idx - a)) for a in anchors)
            score = (closeness + 0.1 + (1.0 if j in stated else 0.0)) / (1 + rank)
            if score > best_score:
                best, best_score = m.group().strip(" ,;.()"), score
    return best


# ---- the reader path: calibrated evidence selection, answer reading, confidence, abstention ----
MAX_CITED = 4
MAX_PAPERS = 2  # papers read per question when the calibrated paper threshold admits several
READ_TOP = 3
CAPTION = re.compile(r"^\s*(fig(ure)?\.?|table|tab\.|algorithm|listing|eq(uation)?\.?)\s*\d", re.I)
ASKS_FOR_TITLE = re.compile(r"\b(title|caption|called|named|name of)\b", re.I)


# "What is CiteSee?": a question that asks what a named thing is.  The thing is short and asked
# about as such (no "of"/"for"/... : "What is the size of the dataset?" asks for a property)
DEFINITION_QUESTION = re.compile(r"^\s*what\s+(?:is|are)\s+(?:an?\s+|the\s+)?(?P<term>[^?]+?)\s*\??\s*$", re.I)
_NOT_A_TERM = re.compile(r"\b(of|in|for|on|to|from|with|by|about|between|used|does|do|did|is|are|was|were|how|why|when|"
                         r"which|what|who|where|their|its|they|we|it|this|that|these|those|there|here)\b", re.I)


def definition_term(question: str) -> str | None:
    """The term a definitional question asks about ("CiteSee" of "What is CiteSee?"), else None."""
    m = DEFINITION_QUESTION.match(question)
    if not m or NUMERIC_QUESTION.search(question):
        return None
    term = m.group("term").strip(" \"'“”")
    if not term or len(term.split()) > 5 or _NOT_A_TERM.search(term):
        return None
    return term


def _term_pattern(term: str) -> str:
    """``term`` as a regex: any case, any run of spaces or hyphens between its words, and a
    footnote mark glued to its end as PDFs extract it ("S2ORC,1", "Paper Plain1")."""
    words = [re.escape(w) for w in re.split(r"[\s\-]+", term) if w]
    return r"(?<![\w-])" + r"[\s\-]*".join(words) + r"\d{0,2}(?![\w-])"


def definition_sentence(term: str, texts: Sequence[str]) -> tuple[int, str] | None:
    """The first passage of ``texts`` that defines ``term``, with the definition: an appositive
    after an introducing verb or on its own ("This paper introduces CiteSee, a paper reading tool
    that ..."; "GhostVLAD, an extension of ..."), or a copula ("GhostVLAD is an extension of ...").
    A paper defines what it names at its first real mention, so the first match wins."""
    t = _term_pattern(term)
    patterns = (
        re.compile(t + r"\s*(?:\([^)]{1,40}\)\s*)?,\d{0,2}\s*(?P<d>(?:a|an|the)\s+(?:\w[\w\-’']*\s+){0,3}?"
                   r"(?:tool|toolkit|system|framework|method|model|dataset|corpus|collection|set|approach|technique|"
                   r"library|interface|benchmark|algorithm|metric|measure|task|platform|architecture|network|"
                   r"extension|variant|version|suite|pipeline|resource|application|service|language|format)\b.*)", re.I),
        re.compile(t + r"\s*(?:\([^)]{1,40}\)\s*)?\s+(?:is|are)\s+(?P<d>(?:a|an)\s+.+)", re.I),
    )
    for i, text in enumerate(texts):
        for pat in patterns:
            m = pat.search(text)
            if m:
                words = m.group("d").strip().rstrip(".").split()
                return i, " ".join(words[:30]) + (" …" if len(words) > 30 else "")
    return None


def _norm(s: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", s.lower()))


def front_matter(tb, doc_id: str) -> frozenset:
    """The section ids of a paper's front matter: the paper itself (passages before the first
    heading: title, authors) and a section titled "Abstract" (``passages.SectionCursor``)."""
    out = set()
    for n in tb.tree(doc_id):
        if n.get("parent_id") is None or heading_key(n.get("title") or "") == "abstract":
            out.add(n["node_id"])
    return frozenset(out)


def _second_paper(tb, question: str, first: str, results: list[dict[str, Any]], min_share: float) -> str | None:
    """The candidate paper that holds the largest share of what the question names and the first
    paper lacks, when that share reaches the calibrated ``min_share``
    (:mod:`vectree.retrieval.rerank.second_paper`); else None."""
    from vectree.retrieval.rerank.second_paper import named_terms, second_paper

    named = named_terms(question)
    if not named:
        return None
    held: dict[str, frozenset[str]] = {}
    for r in results:
        try:
            held[r["doc_id"]] = tb.paper_terms(r["doc_id"])
        except ToolError:  # a paper without passages yet cannot hold anything
            pass
    if first not in held:
        return None
    others = [d for d in held if d != first]
    j, share = second_paper(named, held[first], [held[d] for d in others], list(held.values()))
    return others[j] if j >= 0 and share >= min_share else None


def _label(title: str) -> str:
    """A paper's title short enough to label a part of an answer: up to its first colon, at
    most eight words ("S2ORC", "CleanCo Housekeeping Services")."""
    words = title.split(":")[0].split()
    return " ".join(words[:8]) + (" ..." if len(words) > 8 else "")


# a passage no answer is read from, whatever the reader thinks of it: a line of code ("1 >>> from
# papermage import Document"), or a citation line ("doi:10.1186/1752-2897-4-1 Cite this article
# as: ...", whose DOI digits a quantity question would take for the number asked for)
NOT_PROSE = re.compile(r"^\s*(?:\d+\s+)?(?:>>>|\$\s|import\s+\w|from\s+[\w.]+\s+import\s|def\s+\w+\(|class\s+\w+\s*[:(])"
                       r"|\bdoi:\s*10\.\d{4,}/|\bcite this article\b", re.I)
IDENTIFIER = re.compile(r"doi|https?:|www\.|\d\.\d{4,}/", re.I)  # a DOI or a URL: a token that names, not counts


def _section_titles(tb, doc_id: str) -> list[str]:
    """The verified section titles of a paper (none when its tree cannot be read)."""
    try:
        return [n.get("title") or "" for n in tb.tree(doc_id) if n.get("parent_id") is not None]
    except ToolError:
        return []


def _quotable(c: dict[str, Any]) -> bool:
    """Long enough to count as a quote (a heading such as "3 Design of papermage" is not)."""
    return len(c["text"].split()) >= MIN_QUOTE_WORDS


def _best_per_paper(candidates: list[dict[str, Any]], prefer=None) -> dict[str, dict[str, Any]]:
    """Each paper's most relevant candidate, by paper; with ``prefer`` (a predicate), the most
    relevant of those it accepts, when the paper has any."""
    tops: dict[str, dict[str, Any]] = {}
    for c in candidates:
        held = tops.get(c["doc_id"])
        better = held is None or c["relevance"] > held["relevance"]
        if prefer is not None and held is not None and prefer(held) != prefer(c):
            better = prefer(c)
        if better:
            tops[c["doc_id"]] = c
    return tops


def _keep_each_paper(cited: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """``cited`` (in order) cut to ``limit`` so that every paper in it keeps its first quotable
    passage (its first passage when none is): those first, then the rest in order."""
    firsts: list[dict[str, Any]] = []
    for doc_id in dict.fromkeys(c["doc_id"] for c in cited):
        own = [c for c in cited if c["doc_id"] == doc_id]
        firsts.append(next((c for c in own if _quotable(c)), own[0]))
    firsts = firsts[:limit]
    rest = [c for c in cited if not any(c is f for f in firsts)]
    keep = firsts + rest[:max(limit - len(firsts), 0)]
    return [c for c in cited if any(c is k for k in keep)]


ANSWER_FORMS = ("yes_no", "number", "names", "definition", "span", "clause")


def confidence_features(r0, readings: list, kind: str, holder: dict[str, Any], best: float, coverage: float,
                        form: str, text: str, *, n_papers: int = 1) -> dict[str, float]:
    """Everything the answer's confidence may be fitted on (the reader's ``calibration.answer``
    names the ones its map uses, :func:`vectree.retrieval.rerank.calibrate.answer_confidence`):
    the first readable candidate's relevance logit and its margin to the next one (the tools'
    order), the answer-type probability, the calibrated relevance of the sentence holding the
    answer and of the best candidate, the share of the question's words the best passage holds,
    the rule that formed the answer (one-hot over :data:`ANSWER_FORMS`), the answer's length in
    words (log) and how many papers are cited."""
    margin = min((r0.relevance - readings[1].relevance) if len(readings) > 1 else 2.0, 5.0)
    out = {"top_relevance_logit": float(r0.relevance), "margin_to_second": float(margin),
           "answer_type_prob": float(r0.type_probs[kind]), "holder_relevance": float(holder.get("relevance", best)),
           "best_relevance": float(best), "passage_coverage": float(coverage),
           "answer_words_log": math.log1p(len(text.split())), "papers_cited": float(n_papers)}
    out.update({f"form_{f}": float(form == f) for f in ANSWER_FORMS})
    return out


class _Finished(Exception):
    """A reading episode that ends early (an abstention, no paper, nothing to read) with its answer."""

    def __init__(self, answer: Answer):
        super().__init__(answer.answer)
        self.answer = answer


def answer_with_reader(nav, reader, question: str, *, paper: str | None = None) -> Answer:
    """The reader-driven policy of the module docstring: one :class:`ReadingEpisode`."""
    return ReadingEpisode(nav, reader, question).run(paper)


class ReadingEpisode:
    """One question answered with the trained reader, phase by phase (:meth:`run`): which papers,
    their evidence candidates, whether the evidence is good enough, which of it is cited, the
    answer read from it, and the submitted answer with its confidence.  Every calibrated number
    comes from the reader's ``config.calibration``; ``nav.calibrated=False`` is the ablation that
    cites by the old rule, reads one paper and never abstains."""

    def __init__(self, nav, reader, question: str):
        self.started = time.perf_counter()
        self.nav, self.reader, self.tb, self.trace = nav, reader, nav.toolbox, Trace()
        self.question = question.strip()
        if not self.question:
            raise ValueError("empty question")
        cal = self.cal = reader.config.calibration or {}
        # the cited evidence: calibrated on the pages of dev papers when the reader has that block
        # (retrieval.rerank.pages), else the sentence-level selection with at most MAX_CITED
        self.sel = cal.get("page_selection") or cal.get("selection") or {"threshold": 0.5, "margin": 0.3}
        self.max_cited = int(self.sel.get("max_cited", MAX_CITED))
        self.paper_sel = cal.get("papers") or self.sel
        self.abstain_below = float((cal.get("evidence") or {}).get("abstain_below", 0.0))
        q = self.question
        self.asks_caption = bool(ASKS_FOR_TITLE.search(q)) or bool(re.search(r"\b(figure|table|fig)\b", q, re.I))
        self.yes_no = bool(YES_NO_START.match(q)) and not re.search(r"\bor\b", q)
        self.asks_quantity = bool(NUMERIC_QUESTION.search(q))
        self.asks_name = asks_for_name(q)
        self.titles: dict[str, str] = {}
        self.results: list[dict[str, Any]] = []  # Layer 0's papers (asked of the whole corpus)
        self.best_paper = 1.0
        self.named_second: str | None = None  # the paper read because it holds what the question names
        self.candidates: list[dict[str, Any]] = []
        # with SproutRAG's vote on (vectree-sprout), the sentences in its order, from which the answer
        # is read when its sentence lies on a page the plain passages cite (see sprout_answer)
        self.sprout_order: list[dict[str, Any]] = []
        self.best = 0.0  # the best candidate's calibrated relevance
        self.coverage = 1.0  # the share of the question's words the best passage holds (a confidence feature)
        self.body: set[str] = set()  # papers whose body has a passage past the selection threshold
        self._section_titles: dict[str, list[str]] = {}

    # ---- the episode ---------------------------------------------------------------------------
    def run(self, paper: str | None) -> Answer:
        try:
            papers = self.choose_papers(paper)
            self.gather_candidates(papers)
            self.judge_evidence(paper)
            cited = self.choose_cited()
            return self.answer(cited)
        except _Finished as done:
            return done.answer

    def abstain(self, best: float, possibly: list[dict[str, Any]], why: str) -> _Finished:
        """The answer that says the corpus holds no good evidence, listing ``possibly`` relevant."""
        where = dict.fromkeys(f"{p['doc_id']}" + (f" p.{p['page']}" if p.get("page") else "") for p in possibly)
        text = (f"The corpus holds no good evidence for this question ({why}). Possibly relevant: "
                + ("; ".join(where) or "nothing") + ".")
        self.trace.record(self.tb, "submit_answer", {"answer": text, "citations": []})
        return _Finished(Answer(self.question, text, [], [], self.trace.as_dict(), time.perf_counter() - self.started,
                                confidence=round(best, 3), abstained=True, possibly_relevant=possibly))

    def no_answer(self, why: str) -> _Finished:
        return _Finished(self.nav._no_answer(self.question, self.trace, self.started, why))

    # ---- which papers --------------------------------------------------------------------------
    def choose_papers(self, paper: str | None) -> list[str]:
        from vectree.retrieval.rerank.calibrate import select

        nav, tb, cal, question = self.nav, self.tb, self.cal, self.question
        if paper is not None:
            tb.paper(paper)  # an unknown paper is the caller's error (404), whatever the question
        if nav.calibrated and not content_words(question):
            # nothing to search for ("x", "?", "the"): no evidence can be judged relevant to it
            raise self.abstain(0.0, [], "the question has no content words to look for")
        if paper is not None:
            row = tb.paper(paper)
            self.titles[paper] = row.get("title") or ""
            return [paper]
        found = self.trace.record(tb, "search_papers", {"query": question, "k": max(nav.papers, 5)})
        results = found.data["results"] if found else []
        if found and found.data.get("score") == "relevance":  # reranked: each score is a calibrated relevance
            results = [{**r, "relevance": r["score"]} for r in results]
        if not results:
            raise self.no_answer("no paper in the corpus matches the question")
        self.results = results
        self.titles = {r["doc_id"]: r["title"] for r in results}
        self.best_paper = max((r.get("relevance", 1.0) for r in results), default=0.0)
        floor = cal.get("coverage")
        if nav.calibrated and floor:
            self._check_corpus_coverage(floor)
        if not (nav.calibrated and all("relevance" in r for r in results)):
            return [results[0]["doc_id"]]
        chosen = select([r["relevance"] for r in results], self.paper_sel["threshold"], self.paper_sel["margin"])
        papers = [results[i]["doc_id"] for i in chosen][:min(nav.papers, MAX_PAPERS)]
        second = cal.get("second_paper")
        if second and min(nav.papers, MAX_PAPERS) >= 2:
            # a paper that holds what the question names and the best one lacks is read second,
            # before any paper chosen by relevance alone (on dev questions, BM25's five best
            # reranked: mean paper-set F1 .442 against .404, benchmarks/dev_second_paper.py)
            extra = _second_paper(tb, question, papers[0], results[:int(second.get("candidates", 5))],
                                  float(second["min_share"]))
            if extra:
                papers, self.named_second = [papers[0], extra], extra
        return papers

    def _check_corpus_coverage(self, floor: dict[str, Any]) -> None:
        """A question about a paper the corpus lacks names things none of its best papers holds,
        while near-topic sentences still score as fairly relevant (retrieval.rerank.coverage)."""
        from vectree.retrieval.rerank.coverage import best_coverage, question_terms

        held = []
        for r in self.results[:int(floor.get("candidates", 5))]:
            try:
                held.append(self.tb.paper_terms(r["doc_id"]))
            except ToolError:  # a paper without passages yet: it cannot say, the others decide
                pass
        covered = best_coverage(question_terms(self.question), held, int(floor.get("together", 1))) if held else 1.0
        if covered < float(floor["min_coverage"]):
            # papers, not passages: what they are about is their title
            possibly = [{"doc_id": r["doc_id"], "title": r["title"], "text": r["title"] or "",
                         "relevance": round(float(r.get("relevance", 0.0)), 3)} for r in self.results[:3]]
            raise self.abstain(min(self.best_paper, covered), possibly,
                               f"its best papers hold {int(100 * covered)}% of what it names, weighted by rarity, "
                               f"below the calibrated {float(floor['min_coverage']):.0%}")

    # ---- evidence candidates of every chosen paper ---------------------------------------------
    def search_within(self, doc_id: str, **more) -> tuple[str | None, list[dict[str, Any]]]:
        """``search_within_paper`` of one paper, its hits as candidates (with the reader's readings)."""
        tb, question = self.tb, self.question
        within = self.trace.record(tb, "search_within_paper", {"doc_id": doc_id, "query": question,
                                                               "k": READ_CANDIDATES, **more})
        if within is None:
            return None, []
        passages = tb.passages(doc_id)
        readings = tb.readings.get((doc_id, question), {})  # this call's: the next one replaces them
        front = front_matter(tb, doc_id)
        # SproutRAG nodes without a passage index are not sentences: nothing to read
        return within.data["method"], [
            {"doc_id": doc_id, "page": passages.pages[h["passage"]], "text": passages.texts[h["passage"]],
             "relevance": float(h["relevance"]), "reading": readings.get(h["passage"]),
             "front": passages.nodes[h["passage"]] in front}
            for h in within.data["results"] if "passage" in h]

    def gather_candidates(self, papers: list[str]) -> None:
        for doc_id in papers:
            self.trace.record(self.tb, "get_document_tree", {"doc_id": doc_id, "max_depth": 3})
            method, found = self.search_within(doc_id)
            if method == "sprout":
                self.sprout_order += found
                _, found = self.search_within(doc_id, passages_only=True)
            self.candidates += found
        second = self.named_second
        if second is not None and self.nav.calibrated:
            # the paper read for its named words answers the same abstention rule as the best paper:
            # its relevance and its best evidence's, averaged, reach the calibrated threshold (a
            # name alone, "HIV" in an NLP paper's related work, does not make it the second half of
            # the answer)
            own = [c["relevance"] for c in self.candidates if c["doc_id"] == second]
            second_rel = next((float(r.get("relevance", 0.0)) for r in self.results if r["doc_id"] == second), 0.0)
            if not own or (max(own) + second_rel) / 2 < self.abstain_below:
                self.candidates = [c for c in self.candidates if c["doc_id"] != second]
                self.named_second = None
        if not self.candidates:
            raise self.no_answer("the papers hold no passages to read")
        # candidates stay in the tools' order (hybrid and reranker orders fused, best paper first);
        # the thresholds below use the calibrated probabilities
        self.best = max(c["relevance"] for c in self.candidates)

    def best_passages(self) -> list[dict[str, Any]]:
        """What an evidence abstention lists as possibly relevant: the three best passages."""
        return [{"doc_id": c["doc_id"], "page": c["page"], "title": self.titles.get(c["doc_id"], ""),
                 "relevance": round(c["relevance"], 3), "text": c["text"]}
                for c in sorted(self.candidates, key=lambda c: -c["relevance"])[:3]]

    # ---- is the evidence good enough -----------------------------------------------------------
    def judge_evidence(self, paper: str | None) -> None:
        """Abstain (raise) on weak evidence; drop the front matter where the body holds evidence."""
        if not self.nav.calibrated:
            return
        best, abstain_below = self.best, self.abstain_below
        # abstain when even the best evidence is weak, or when the best paper and its best evidence
        # together are (their mean below the same calibrated threshold: paper entries are short and
        # score lower than sentences, so a paper alone does not decide)
        joint = (best + self.best_paper) / 2 if paper is None else best
        if best < abstain_below or joint < abstain_below:
            why = (f"best evidence relevance {best:.2f}" if best < abstain_below else
                   f"best paper {self.best_paper:.2f} and evidence {best:.2f} relevance, mean {joint:.2f}")
            raise self.abstain(min(best, joint), self.best_passages(),
                               f"{why}, below the calibrated {abstain_below:.2f}")
        # the paper is the right one and its sentences are on topic, yet none of them holds what
        # the question names ("What was Energex's cash flow in 2021?" of a report without one):
        # abstain when the best passage of the papers read holds less of the question's words,
        # weighted by their rarity in the paper, than the floor calibrated on training-side papers
        # with and without the question's evidence (retrieval.rerank.coverage.passage_coverage)
        inside = self.cal.get("passage_coverage")
        if inside:
            from vectree.retrieval.rerank.coverage import papers_passage_coverage, question_terms

            read = list(dict.fromkeys(c["doc_id"] for c in self.candidates))
            held = papers_passage_coverage(question_terms(self.question), [self.tb.passage_terms(d) for d in read],
                                           int(inside.get("window", 0)))
            self.coverage = held
            if held < float(inside["min_coverage"]):
                raise self.abstain(min(best, held), self.best_passages(),
                                   f"no passage of the {'paper' if len(read) == 1 else 'papers'} holds more than "
                                   f"{int(100 * held)}% of the question's words, weighted by rarity, below the "
                                   f"calibrated {float(inside['min_coverage']):.0%}")
        # the front matter (title, authors, abstract) restates what the paper shows; the evidence
        # for a claim is in the body, which is where a reader checks it (QASPER's annotators chose
        # evidence from the full text, never the abstract).  So when a body passage passes the
        # selection threshold, the front matter is neither read nor cited (per paper: a second
        # paper's front matter is judged against its own body)
        self.body = {c["doc_id"] for c in self.candidates if not c["front"] and c["relevance"] >= self.sel["threshold"]}
        self.candidates = [c for c in self.candidates if not (c["front"] and c["doc_id"] in self.body)]

    # ---- which evidence is cited ---------------------------------------------------------------
    def answers_from(self, c: dict[str, Any]) -> bool:
        """Can the answer be read from ``c``?  Not from a heading or a fragment ("Results and
        Discussion": shorter than a quote must be; "3 The LONGEVAL guidelines for faithfulness
        human evaluation": a section's heading, however long), a caption (unless one is asked
        for), a question the paper asks ("How could researchers leverage papermage?"), code or a
        citation line (:data:`NOT_PROSE`)."""
        text = c["text"]
        if not _quotable(c) or (CAPTION.match(text) and not self.asks_caption) or text.rstrip().endswith("?") \
                or NOT_PROSE.search(text):
            return False
        if c["doc_id"] not in self._section_titles:
            self._section_titles[c["doc_id"]] = _section_titles(self.tb, c["doc_id"])
        return not any(is_heading(text, t) for t in self._section_titles[c["doc_id"]])

    def choose_cited(self) -> list[dict[str, Any]]:
        from vectree.retrieval.rerank.calibrate import select

        candidates, sel = self.candidates, self.sel
        if self.nav.calibrated:
            cited = [candidates[i] for i in select([c["relevance"] for c in candidates], sel["threshold"], sel["margin"])]
            # page 1 (title, abstract, the opening) restates the whole paper, so its sentences pass
            # the threshold for almost any question about it, while the evidence seldom lies there
            # (2 of the 31 located pagebench rows on papers outside the evaluation; first counted
            # over all 75 rows, 12, which included evaluation papers): a page-1 sentence is cited
            # only when it is the best candidate of its paper (each paper read has its own opening)
            tops = _best_per_paper(candidates)
            added = []
            if self.named_second in tops:
                # the second paper is read because it holds what the question names and the best
                # paper lacks (a comparison of two companies): each paper's best passage that can
                # answer is cited when it passes the threshold, whatever the margin to the other
                # paper's best (and wherever it lies: a company report's first page is about the company)
                added = [c for c in _best_per_paper(candidates, self.answers_from).values()
                         if c["relevance"] >= sel["threshold"] and not any(c is k for k in cited)]
            cited = [c for c in cited if c["page"] != 1 or c is tops[c["doc_id"]]] + added
        else:
            cited = (candidates[:2] if len(candidates) > 1 and candidates[1]["relevance"] >= 0.9 * self.best
                     else candidates[:1])
        cited = sorted(cited, key=lambda c: -c["relevance"])
        return self.keep_cited(cited)

    def keep_cited(self, cited: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``cited`` cut to the most quotes an answer carries (each paper keeps one when calibrated)."""
        return _keep_each_paper(cited, self.max_cited) if self.nav.calibrated else cited[:self.max_cited]

    # ---- the answer ----------------------------------------------------------------------------
    def read(self, cands: list[dict[str, Any]]) -> None:
        """Give the candidates without a reading the reader's (one batch)."""
        unread = [c for c in cands if c.get("reading") is None]
        for c, r in zip(unread, self.reader.read(self.question, [c["text"] for c in unread]) if unread else []):
            c["reading"] = r

    def read_answer(self, pool: list[dict[str, Any]]) -> tuple[str, dict[str, Any], str, str]:
        """``(answer, the candidate that holds it, answer type, the rule that formed it)`` from
        the best of ``pool`` (the rule, one of :data:`ANSWER_FORMS`, is a confidence feature)."""
        from vectree.retrieval.rerank.calibrate import answer_of

        question = self.question
        holder = pool[0]
        r0 = holder["reading"]
        kind, span = answer_of(r0)
        title = self.titles.get(holder["doc_id"], "")
        if self.yes_no:
            return ("Yes" if r0.type_probs["yes"] >= r0.type_probs["no"] else "No"), holder, kind, "yes_no"
        if kind in ("yes", "no"):
            # the type head says yes/no to a question that is not one ("Which plant ...?"): a
            # wh-question is answered by a span, never by "Yes"
            kind, span = "extractive", r0.span
        bad = (not span or len(span) < 2 or len(span.split()) > 12 or echoes(span, question)
               or (CAPTION.match(span) and not ASKS_FOR_TITLE.search(question))
               or (title and _norm(span) and _norm(span) in _norm(title) and not ASKS_FOR_TITLE.search(question)))
        if self.asks_quantity:
            # the number nearest the question's words in the best evidence; the sentence it came
            # from holds the answer
            number = numeric_answer(question, [c["text"] for c in pool[:2]])
            if number:
                return number, next((c for c in pool[:2] if number in c["text"]), holder), kind, "number"
        elif self.asks_name:
            # a named thing of a kind ("What datasets do they use?"): the names the evidence gives,
            # not the reader's span (QASPER dev split, the reader's held-out questions, gold
            # sentence given: token F1 .465 against .331, benchmarks/dev_named_answer.py)
            names = named_answer(question, holder["text"])
            if names:
                return names, holder, kind, "names"
        if not bad:
            # a quantity or a name asked for and none found: the span; else the span stops short
            # of what QASPER's annotators mark (6 words against their 10) and its clause answers
            # (reader's dev split, gold sentence given: token F1 .431 against .380 over the
            # questions that ask neither; train split .338 against .310; benchmarks/dev_answer_types.py)
            return (span if self.asks_quantity or self.asks_name else span_clause(holder["text"], span)), holder, kind, "span"
        # the span head gave nothing usable: the clause of the sentence that answers
        return self.nav._extract(question, [holder["text"]]), holder, kind, "clause"

    def answer(self, cited: list[dict[str, Any]]) -> Answer:
        """Read the answer (from the best readable evidence, SproutRAG's order, a definition, or
        each paper), quote the sentence that holds it first, open the cited pages and submit."""
        from vectree.retrieval.rerank.calibrate import answer_confidence

        candidates = self.candidates
        # read the answer from the best evidence that is not a caption (unless one is asked for)
        self.read(candidates[:READ_TOP])
        readable = [c for c in candidates if c.get("reading") is not None and self.answers_from(c)] \
            or [c for c in candidates if c.get("reading")]
        text, holder, kind, form = self.read_answer(readable)
        r0 = readable[0]["reading"]
        readings = [c["reading"] for c in readable[:READ_TOP]]
        if self.sprout_order and not self.yes_no:
            chosen = self.sprout_answer(holder, cited)
            if chosen is not None:
                (text, holder, kind, form), r0, readings, cited = chosen
        term = definition_term(self.question)
        if term and not self.yes_no:
            defined = self.definition_answer(term, holder)
            if defined is not None:
                text, holder, r0 = defined
                kind, form = "extractive", "definition"
                readings = [r0] + [r for r in readings if r is not r0]
        text, cited = self.answer_from_each_paper(text, holder, cited)
        # the sentence that holds the answer is quoted first
        cited = [holder] + [c for c in cited if c is not holder]
        # (an answer from each paper put its holders first: they stay, and each paper keeps a quote)
        cited = self.keep_cited(cited)
        for doc_id in dict.fromkeys(c["doc_id"] for c in cited):  # read the cited pages before answering
            pages = sorted({c["page"] for c in cited if c["doc_id"] == doc_id})[:MAX_PAGES_PER_CALL]
            self.trace.record(self.tb, "get_page_content", {"doc_id": doc_id, "pages": pages})
        # a quote shorter than the citation rule's minimum (a heading) can never count as evidence
        quotable = [c for c in cited if len(c["text"].split()) >= MIN_QUOTE_WORDS] or cited
        citations = [{"doc_id": c["doc_id"], "page": c["page"], "quote": c["text"]} for c in quotable]
        features = confidence_features(r0, readings, kind, holder, self.best, self.coverage, form, text,
                                       n_papers=len({c["doc_id"] for c in cited}))
        confidence = answer_confidence(features, self.cal)
        submitted = self.trace.record(self.tb, "submit_answer", {"answer": text, "citations": citations})
        checked = submitted.data["citations"] if submitted else citations
        # each quote's calibrated relevance (the probability that the sentence is evidence for the
        # question): what a reader weighs beside the answer's confidence, which asks more (that the
        # short answer matches an expert's)
        checked = [{**c, "relevance": round(float(q["relevance"]), 3)} for c, q in zip(checked, quotable)]
        return Answer(self.question, text, checked, [c["text"] for c in cited], self.trace.as_dict(),
                      time.perf_counter() - self.started, confidence=round(confidence, 3), confidence_features=features)

    def sprout_answer(self, holder: dict[str, Any], cited: list[dict[str, Any]]):
        """vectree-sprout: the pages cited are the plain passages' (on the QASPER dev papers they
        are more precise than those of SproutRAG's order: P .491 against .485), and SproutRAG's
        order chooses the sentence the answer is read from when that sentence lies on one of those
        pages (answer F1 .143 against .126 and .154 for SproutRAG's own, at plain passages' P and R:
        benchmarks/dev_navigator.py --within-paper sprout).  Those dev questions have extractive
        answers only, so a yes/no decision stays with the sentence plain passages put first (the
        caller's rule).  ``((answer, holder, kind, form), first reading, readings, cited)``, or
        None when SproutRAG's sentence lies on no page plain passages would quote."""
        kept = {c["doc_id"] for c in self.candidates}
        order = [c for c in self.sprout_order if c["doc_id"] in kept and not (c["front"] and c["doc_id"] in self.body)]
        self.read(order[:READ_TOP])
        pool = [c for c in order if c.get("reading") is not None and self.answers_from(c)]
        if not pool:
            return None
        alt = self.read_answer(pool)
        # the sentences plain passages would quote: their holder first (as in answer)
        quoted = self.keep_cited([holder] + [c for c in cited if c is not holder])
        on_page = [c for c in quoted if (c["doc_id"], c["page"]) == (alt[1]["doc_id"], alt[1]["page"])]
        if not on_page:
            return None
        new_holder = alt[1]
        # the answer's sentence takes the place of a sentence of its page, unless cited already
        same = next((c for c in on_page if c["text"] == new_holder["text"]), on_page[-1])
        return (alt, pool[0]["reading"], [c["reading"] for c in pool[:READ_TOP]],
                [new_holder if c is same else c for c in quoted])

    def definition_answer(self, term: str, holder: dict[str, Any]):
        """"What is CiteSee?": the sentence where the paper defines it ("This paper introduces
        CiteSee, a paper reading tool that ...") answers, wherever it lies (an abstract defines the
        paper's own contribution; the sentences a reranker likes best only use the name: "CiteSee
        allows").  ``(definition, its holder, its reading)``, or None when the paper has none."""
        from vectree.retrieval.rerank.calibrate import relevance_prob

        doc_id = holder["doc_id"]
        passages = self.tb.passages(doc_id)
        found = definition_sentence(term, passages.texts)
        if found is None:
            return None
        i, definition = found
        holder = next((c for c in self.candidates if c["doc_id"] == doc_id and c["text"] == passages.texts[i]), None)
        if holder is None:  # not among the reranked candidates (an abstract): read it now
            reading = self.reader.read(self.question, [passages.texts[i]])[0]
            holder = {"doc_id": doc_id, "page": passages.pages[i], "text": passages.texts[i], "reading": reading,
                      "relevance": float(relevance_prob([reading.relevance], self.cal)[0])}
        elif holder.get("reading") is None:
            holder["reading"] = self.reader.read(self.question, [holder["text"]])[0]
        return definition, holder, holder["reading"]

    def answer_from_each_paper(self, text: str, holder: dict[str, Any], cited: list[dict[str, Any]]):
        """Evidence from several papers (a comparison of two companies): an answer from each,
        labelled with its paper, the best evidence's paper first.  ``(answer, cited)``."""
        others = [d for d in dict.fromkeys(c["doc_id"] for c in cited) if d != holder["doc_id"]]
        if not (self.nav.calibrated and not self.yes_no and others):
            return text, cited
        titles = self.titles
        parts = [f"{_label(titles.get(holder['doc_id'], '')) or holder['doc_id']}: {text}"]
        holders = [holder]
        for doc_id in others:
            # a heading or a title alone ("InnovateTech Solutions") answers nothing: such a paper
            # keeps its citation but adds no part to the answer
            own = [c for c in cited if c["doc_id"] == doc_id and self.answers_from(c)]
            if not own:
                continue
            self.read(own)
            part, h, _, _ = self.read_answer(own)
            parts.append(f"{_label(titles.get(doc_id, '')) or doc_id}: {part}")
            holders.append(h)
        if len(parts) == 1:
            return text, cited
        return "; ".join(parts), holders + [c for c in cited if not any(c is h for h in holders)]
