"""Tiny benchmark folders in the shared data layout, written by the tests themselves.

Each ``write_<benchmark>(root)`` writes a folder with the same file names, formats and fields as
``../shared/data/<benchmark>/`` (README) -- a handful of items whose topics do not overlap, so a
lexical or dense retriever can find the right document -- and returns the folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf

TOPICS = {
    "glacier": "Glacier ice cores record atmospheric carbon dioxide over many millennia. Drilling teams in "
               "Antarctica extract cylinders of ancient ice. Bubbles trapped inside preserve samples of old air.",
    "bakery": "Sourdough bread rises because wild yeast and lactic bacteria ferment the dough. Bakers feed the "
              "starter with flour and water every day. A long fermentation gives the crust its sour flavour.",
    "violin": "Stradivari violins are prized for their bright tone and projection. Luthiers study the varnish and "
              "the density of the spruce tops. Blind listening tests compare old and new instruments.",
    "tides": "Ocean tides follow the gravitational pull of the moon and the sun. Spring tides occur when the sun "
             "and moon align. Tidal power stations convert the moving water into electricity.",
    "honeybee": "Honeybees communicate the location of flowers with a waggle dance. The angle of the dance points "
                "toward the food source relative to the sun. Foragers recruit nest mates this way.",
    "volcano": "Basaltic volcanoes erupt runny lava that flows for kilometres. Explosive eruptions need viscous "
               "magma rich in silica. Seismometers warn of rising magma before an eruption.",
}


def _jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


# ---- qasper_pdf -------------------------------------------------------------------------------
def _pdf(path: Path, pages: list[str]) -> None:
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 540, 720), text, fontsize=11)
    doc.set_metadata({"title": path.stem})
    doc.save(path)


def write_qasper_pdf(root: Path) -> Path:
    """Two 3-page PDFs; four questions: two with evidence pages, one without, one unanswerable."""
    folder = root / "qasper_pdf"
    (folder / "pdfs").mkdir(parents=True)
    _pdf(folder / "pdfs" / "0001.00001.pdf", [TOPICS["glacier"], TOPICS["bakery"], TOPICS["violin"]])
    _pdf(folder / "pdfs" / "0002.00002.pdf", [TOPICS["tides"], TOPICS["honeybee"], TOPICS["volcano"]])

    def q(pid, qid, question, answers, pages, unanswerable=False):
        return {"paper_id": pid, "pdf": f"pdfs/{pid}.pdf", "pdf_pages": 3, "question_id": qid, "question": question,
                "uda_subset": "paper_text", "answers": answers, "evidence_source": None, "evidence": [],
                "unanswerable": unanswerable, "evidence_available": bool(pages),
                "evidence_paragraphs": [{"text": "x", "is_float_caption": False, "pages": pages, "method": "exact",
                                         "confidence": 1.0}] if pages else [],
                "evidence_pages": pages}

    _jsonl(folder / "questions.jsonl", [
        q("0001.00001", "q-bread", "What makes sourdough bread rise?",
          [{"answer": "wild yeast and lactic bacteria ferment the dough", "type": "extractive"}], [2]),
        q("0002.00002", "q-bees", "How do honeybees communicate the location of flowers?",
          [{"answer": "with a waggle dance", "type": "extractive"}], [2]),
        q("0001.00001", "q-none", "Do they compare old and new violins?", [{"answer": "Yes", "type": "boolean"}], []),
        q("0002.00002", "q-unans", "What is the budget of the tidal station?",
          [{"answer": "", "type": "none"}], [], unanswerable=True),
    ])
    return folder


# ---- qasper (full text) ---------------------------------------------------------------------
LONG_PARAGRAPH = ("Filler text about the methods of the study that runs long enough to push later sections "
                  "onto the next page of the rendered paper. ") * 12


def write_qasper(root: Path) -> Path:
    """One HF-schema paper that renders to several pages, and one original-schema fixture paper."""
    folder = root / "qasper"
    (folder / "hf").mkdir(parents=True)
    (folder / "led-fixture").mkdir()
    evidence = "The seed lexicon consists of fifteen positive and fifteen negative predicates."
    paper = {
        "id": "1111.11111", "title": "Polarity from Discourse", "abstract": TOPICS["glacier"],
        "full_text": {
            "section_name": ["Introduction", "Method", "Method ::: Seed Lexicon", "Results"],
            "paragraphs": [[TOPICS["bakery"], LONG_PARAGRAPH], [LONG_PARAGRAPH, LONG_PARAGRAPH],
                           [LONG_PARAGRAPH, evidence], [TOPICS["violin"]]],
        },
        "figures_and_tables": {"caption": ["Table 1: Statistics of the corpus."], "file": ["1-Table1-1.png"]},
        "qas": {
            "question": ["What is the seed lexicon?", "What statistics are reported?"],
            "question_id": ["hfq1", "hfq2"],
            "nlp_background": ["two", "two"], "topic_background": ["x", "x"], "paper_read": ["no", "no"],
            "search_query": ["", ""], "question_writer": ["w", "w"],
            "answers": [
                {"answer": [
                    {"unanswerable": False, "extractive_spans": ["fifteen positive", "fifteen negative predicates"],
                     "yes_no": None, "free_form_answer": "", "evidence": [evidence], "highlighted_evidence": []},
                    {"unanswerable": False, "extractive_spans": [], "yes_no": None,
                     "free_form_answer": "a list of predicates", "evidence": [evidence], "highlighted_evidence": []},
                ], "annotation_id": ["a1", "a2"], "worker_id": ["w1", "w2"]},
                {"answer": [
                    {"unanswerable": False, "extractive_spans": [], "yes_no": None, "free_form_answer": "corpus statistics",
                     "evidence": ["FLOAT SELECTED: Table 1: Statistics of the corpus."], "highlighted_evidence": []},
                ], "annotation_id": ["a3"], "worker_id": ["w1"]},
            ],
        },
    }
    (folder / "hf" / "qasper-train-first10.json").write_text(json.dumps([paper]))
    led = {"2222.22222": {
        "title": "A Fixture", "abstract": "A short abstract.",
        "full_text": [{"section_name": "Introduction", "paragraphs": ["A short paragraph about tides.",
                                                                     TOPICS["tides"]]}],
        "qas": [{"question": "Are tides caused by the moon?", "question_id": "ledq1",
                 "answers": [{"answer": {"unanswerable": False, "extractive_spans": [], "yes_no": True,
                                         "free_form_answer": "", "evidence": [TOPICS["tides"]],
                                         "highlighted_evidence": []}, "annotation_id": "a", "worker_id": "w"}]}],
    }}
    (folder / "led-fixture" / "qasper_sample_small.json").write_text(json.dumps(led))
    return folder


# ---- pubmedqa ---------------------------------------------------------------------------------
def write_pubmedqa(root: Path) -> Path:
    folder = root / "pubmedqa"
    folder.mkdir(parents=True)
    docs = []
    for i, (topic, text) in enumerate(TOPICS.items()):
        first, *rest = text.split(". ")
        docs.append({"pmid": str(1000 + i), "contexts": [first + ".", ". ".join(rest)],
                     "labels": ["BACKGROUND", "RESULTS"], "meshes": [topic]})
    _jsonl(folder / "corpus.jsonl", docs)
    _jsonl(folder / "questions.jsonl", [
        {"pmid": "1001", "question": "Does wild yeast make sourdough bread rise?", "long_answer": "yes",
         "final_decision": "yes"},
        {"pmid": "1004", "question": "Do honeybees use a waggle dance to point toward flowers?", "long_answer": "yes",
         "final_decision": "yes"},
        {"pmid": "1005", "question": "Can seismometers warn of rising magma before volcanic eruptions?",
         "long_answer": "maybe", "final_decision": "maybe"},
    ])
    return folder


# ---- dragonball -----------------------------------------------------------------------------
def write_dragonball(root: Path, name: str = "dragonball") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    docs = [
        {"domain": "Finance", "language": "en", "doc_id": 1, "company_name": "Glacier Corp",
         "content": "Glacier Corp reported revenue of 12 million dollars in 2019. " + TOPICS["glacier"]},
        {"domain": "Finance", "language": "en", "doc_id": 2, "company_name": "Bakery Ltd",
         "content": "Bakery Ltd acquired a rival bakery chain in March 2020. " + TOPICS["bakery"]},
        {"domain": "Law", "language": "en", "doc_id": 3, "court_name": "Violin Court", "content": TOPICS["violin"]},
        {"domain": "Finance", "language": "zh", "doc_id": 4, "company_name": "Z", "content": "公司收入增长。"},
    ]
    _jsonl(folder / "dragonball_docs.jsonl", docs)

    def q(qid, text, doc_ids, refs, kind="Factual Question"):
        return {"domain": "Finance", "language": "en", "query": {"content": text, "query_id": qid, "query_type": kind},
                "ground_truth": {"content": "answer", "doc_ids": doc_ids, "references": refs, "keypoints": []}}

    _jsonl(folder / "queries_finance_en.jsonl", [
        q("db1", "What revenue did Glacier Corp report in 2019?", [1],
          ["Glacier Corp reported revenue of 12 million dollars in 2019."]),
        q("db2", "What did Bakery Ltd acquire in March 2020?", [2], ["Bakery Ltd acquired a rival bakery chain"]),
        q("db3", "What is the capital of the moon?", [], [], kind="Irrelevant Unsolvable Question"),
    ] + ([  # asked of a report that does not hold the answer (dragonball_qa's abstention test)
        q("db4", "What dividend did Glacier Corp pay in 2019?", [1], [], kind="Irrelevant Unsolvable Question"),
        # two reports at once (dragonball_multi asks it of the whole corpus)
        q("db5", "What did Glacier Corp report and Bakery Ltd acquire?", [1, 2],
          ["Glacier Corp reported revenue of 12 million dollars in 2019.", "Bakery Ltd acquired a rival bakery chain"],
          kind="Multi-document Information Integration Question"),
    ] if name in ("dragonball_qa", "dragonball_multi") else []))
    return folder


def write_dragonball_qa(root: Path) -> Path:
    return write_dragonball(root, "dragonball_qa")


def write_dragonball_multi(root: Path) -> Path:
    return write_dragonball(root, "dragonball_multi")


# ---- hotpotqa -----------------------------------------------------------------------------
def write_hotpotqa(root: Path) -> Path:
    folder = root / "hotpotqa"
    folder.mkdir(parents=True)
    rows = []
    for qid, question, support in [("h1", "Which instrument did Stradivari make?", "violin"),
                                   ("h2", "What do honeybees perform to share food locations?", "honeybee")]:
        contexts = [{"id": i, "title": t.title(), "paragraph_text": text, "is_supporting": t == support}
                    for i, (t, text) in enumerate(TOPICS.items())]
        rows.append({"question_id": qid, "question_text": question,
                     "answers_objects": [{"number": "", "date": {"day": "", "month": "", "year": ""},
                                          "spans": [support]}], "contexts": contexts})
    _jsonl(folder / "ircot_format_dev_subsampled.jsonl", rows)
    # as in HotpotQA, sentences after the first keep their leading space
    context = [[t.title(), [("" if i == 0 else " ") + (s if s.endswith(".") else s + ".")
                            for i, s in enumerate(text.split(". "))]] for t, text in TOPICS.items()]
    distractor = [{"_id": "d1", "question": "What do spring tides follow?", "answer": "the moon and the sun",
                   "supporting_facts": [["Tides", 0], ["Tides", 1]], "context": context, "type": "bridge",
                   "level": "easy"}]
    (folder / "hotpot_distractor_sample.json").write_text(json.dumps(distractor))
    return folder


# ---- scholarqa_multi ------------------------------------------------------------------------
def write_scholarqa_multi(root: Path) -> Path:
    folder = root / "scholarqa_multi"
    folder.mkdir(parents=True)

    def ctx(topic, url):
        return {"title": f"A study of {topic}", "text": TOPICS[topic], "url": url, "year": 2020,
                "authors": [{"authorId": "1", "name": "A. B."}], "citation_count": 3}

    items = [
        {"id": "s1", "input": "How do bees and volcano scientists share warnings and locations?",
         "output": "Honeybees use a waggle dance [0]. Seismometers warn of rising magma [1].",
         "ctxs": [ctx("honeybee", "https://s2/1"), ctx("volcano", "https://s2/2")], "annotator": "x", "subject": "bio"},
        {"id": "s2", "input": "What drives ocean tides and tidal power?",
         "output": "Tides follow the moon and the sun [0]; volcanoes are unrelated [1].",
         "ctxs": [ctx("tides", "https://s2/3"), ctx("volcano", "https://s2/2")], "annotator": "y",
         "subject": "physics"},
    ]
    (folder / "human_answers.json").write_text(json.dumps(items))
    return folder


WRITERS = {"qasper_pdf": write_qasper_pdf, "qasper": write_qasper, "pubmedqa": write_pubmedqa,
           "dragonball": write_dragonball, "dragonball_qa": write_dragonball_qa,
           "dragonball_multi": write_dragonball_multi, "hotpotqa": write_hotpotqa, "scholarqa_multi": write_scholarqa_multi}
