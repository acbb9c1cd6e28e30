"""Layout checks and every loader, on tiny folders in the shared layout that the tests write."""

from __future__ import annotations

import json
import shutil

import pymupdf
import pytest

from vectree.evaluation.layouts import LAYOUTS, LayoutError, data_hashes, validate_layout
from vectree.evaluation.loaders import load_benchmark
from tests.eval_folders import TOPICS, WRITERS, write_qasper_pdf


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval-folders")
    return {name: write(root) for name, write in WRITERS.items()}


@pytest.fixture
def copy_of(folders, tmp_path):
    made = []

    def make(name):
        made.append(name)
        dst = tmp_path / f"{len(made)}" / name
        shutil.copytree(folders[name], dst)
        return dst
    return make


# ---- layouts ------------------------------------------------------------------------------
def test_every_layout_validates_its_tiny_folder(folders):
    for name in LAYOUTS:
        files = validate_layout(name, folders[name])
        assert set(spec.path for spec in LAYOUTS[name].files) <= set(files)
        assert all(p.is_file() for p in files.values())
    hashes = data_hashes(validate_layout("qasper_pdf", folders["qasper_pdf"]))
    assert list(hashes) == sorted(hashes) and "pdfs/0001.00001.pdf" in hashes
    assert all(len(h) == 64 for h in hashes.values())


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_a_missing_file_is_named(name, copy_of):
    folder = copy_of(name)
    victim = LAYOUTS[name].files[-1].path
    (folder / victim).unlink()
    with pytest.raises(LayoutError, match=victim.split("/")[-1].replace(".", r"\.")):
        validate_layout(name, folder)


def test_malformed_json_lines_fields_and_shapes_are_named(copy_of):
    folder = copy_of("pubmedqa")
    with open(folder / "questions.jsonl", "a") as fh:
        fh.write("{not json\n")
    with pytest.raises(LayoutError, match=r"questions\.jsonl: line 4 is not JSON"):
        validate_layout("pubmedqa", folder)

    folder = copy_of("hotpotqa")
    rows = [json.loads(x) for x in (folder / "ircot_format_dev_subsampled.jsonl").read_text().splitlines()]
    del rows[1]["contexts"]
    (folder / "ircot_format_dev_subsampled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(LayoutError, match=r"ircot_format_dev_subsampled\.jsonl: line 2 has no field 'contexts'"):
        validate_layout("hotpotqa", folder)

    folder = copy_of("scholarqa_multi")
    (folder / "human_answers.json").write_text(json.dumps({"not": "a list"}))
    with pytest.raises(LayoutError, match=r"human_answers\.json: expected a JSON array"):
        validate_layout("scholarqa_multi", folder)

    folder = copy_of("dragonball")
    (folder / "queries_finance_en.jsonl").write_text(json.dumps({"query": {"content": "q", "query_id": 1}}) + "\n")
    with pytest.raises(LayoutError, match=r"queries_finance_en\.jsonl: line 1 has no field 'ground_truth\.doc_ids'"):
        validate_layout("dragonball", folder)


def test_qasper_pdf_checks_the_pdfs_it_names(copy_of):
    folder = copy_of("qasper_pdf")
    (folder / "pdfs" / "0002.00002.pdf").unlink()
    with pytest.raises(LayoutError, match=r"0002\.00002\.pdf is missing"):
        validate_layout("qasper_pdf", folder)
    folder = copy_of("qasper_pdf")
    (folder / "pdfs" / "0001.00001.pdf").write_bytes(b"hello, not a pdf")
    with pytest.raises(LayoutError, match="not a PDF"):
        validate_layout("qasper_pdf", folder)


def test_unknown_benchmark_and_missing_folder(tmp_path):
    with pytest.raises(LayoutError, match="unknown benchmark"):
        validate_layout("squad", tmp_path)
    with pytest.raises(LayoutError, match="does not exist"):
        validate_layout("pubmedqa", tmp_path / "nowhere")


# ---- loaders -------------------------------------------------------------------------------
def test_qasper_pdf_loader(folders):
    b = load_benchmark("qasper_pdf", folders["qasper_pdf"])
    assert [q.question_id for q in b.questions] == ["q-bread", "q-bees", "q-none", "q-unans"]
    assert set(b.papers) == {"0001.00001", "0002.00002"}
    assert b.papers["0001.00001"].pdf.name == "0001.00001.pdf"
    bread, bees, none, unans = b.questions
    assert bread.evidence_pages == (2,) and bread.has_evidence
    assert none.evidence_pages == () and not none.has_evidence
    assert [r.answer for r in bread.references] == ["wild yeast and lactic bacteria ferment the dough"]
    assert {r.answer for r in unans.references} == {"Unanswerable"}
    assert load_benchmark("qasper_pdf", folders["qasper_pdf"], limit=1).papers.keys() == {"0001.00001"}


def test_qasper_loader_renders_and_places_evidence_on_the_right_page(folders, tmp_path):
    b = load_benchmark("qasper", folders["qasper"], work_dir=tmp_path)
    assert [q.question_id for q in b.questions] == ["hfq1", "hfq2", "ledq1"]
    assert set(b.papers) == {"hf-1111.11111", "led-2222.22222"}
    lexicon, stats, led = b.questions
    # references in QASPER's official forms, one per annotation
    assert [r.answer for r in lexicon.references] == ["fifteen positive, fifteen negative predicates",
                                                      "a list of predicates"]
    assert [r.answer for r in led.references] == ["Yes"]
    # the evidence page is the page where the rendered PDF shows that paragraph
    pdf = pymupdf.open(b.papers["hf-1111.11111"].pdf)
    assert pdf.page_count >= 2
    on = [i + 1 for i, page in enumerate(pdf) if "fifteen negative predicates" in " ".join(page.get_text().split())]
    assert lexicon.evidence_pages == tuple(on) and on[0] > 1
    caption = [i + 1 for i, page in enumerate(pdf) if "Statistics of the corpus" in page.get_text()]
    assert stats.evidence_pages == tuple(caption)
    assert led.evidence_pages == (1,)
    assert "4 of 4 evidence strings placed" in b.notes[0]  # two annotations cite one paragraph
    # rendering is cached and reproducible
    again = load_benchmark("qasper", folders["qasper"], work_dir=tmp_path)
    assert [q.evidence_pages for q in again.questions] == [q.evidence_pages for q in b.questions]
    # a limit renders only the papers it needs
    few = load_benchmark("qasper", folders["qasper"], work_dir=tmp_path / "few", limit=1)
    assert list(few.papers) == ["hf-1111.11111"] and len(few.questions) == 1


def test_pubmedqa_loader(folders):
    b = load_benchmark("pubmedqa", folders["pubmedqa"])
    assert len(b.documents) == len(TOPICS) and len(b.questions) == 3
    assert [q.gold_doc_id for q in b.questions] == ["1001", "1004", "1005"]
    assert b.questions[2].label == "maybe"
    assert b.documents["1001"].sections[0][0] == "BACKGROUND"
    limited = load_benchmark("pubmedqa", folders["pubmedqa"], limit=1)
    assert len(limited.questions) == 1 and len(limited.documents) == len(TOPICS)  # the corpus stays whole


def test_dragonball_loader_gold_and_no_gold_queries(folders):
    b = load_benchmark("dragonball", folders["dragonball"])
    assert set(b.documents) == {"dragonball-1", "dragonball-2", "dragonball-3"}  # English only
    revenue, acquire, unsolvable = b.queries
    doc = b.documents["dragonball-1"]
    gold_text = [doc.text[slice(*doc.sentences[i])] for _, i in revenue.gold]
    assert gold_text == ["Glacier Corp reported revenue of 12 million dollars in 2019."]
    assert len(acquire.gold) == 1 and not unsolvable.gold
    assert set(revenue.doc_ids) == set(b.documents)  # every query searches the whole collection


def test_dragonball_qa_renders_single_report_questions_and_places_their_sentences(folders, tmp_path):
    b = load_benchmark("dragonball_qa", folders["dragonball_qa"], work_dir=tmp_path)
    assert b.task == "paper_qa"
    # db3 names no report (nothing to ask it of): left out; db4 asks Glacier's report what it lacks
    assert [q.question_id for q in b.questions] == ["db1", "db2", "db4"]
    revenue, acquire, dividend = b.questions
    assert set(b.papers) == {"dragonball-1", "dragonball-2"}
    with pymupdf.open(b.papers["dragonball-1"].pdf) as pdf:
        page_text = " ".join(pdf[p - 1].get_text() for p in revenue.evidence_pages)
    assert "revenue of 12 million" in " ".join(page_text.split())
    assert revenue.references[0].type == "abstractive" and not revenue.unanswerable
    assert dividend.unanswerable and dividend.evidence_pages == ()
    assert dividend.references[0].answer == "Unanswerable"
    assert "1 unsolvable" in b.notes[0]
    assert len(load_benchmark("dragonball_qa", folders["dragonball_qa"], work_dir=tmp_path, limit=1).questions) == 1


def test_dragonball_multi_asks_the_corpus_and_places_each_reports_sentences(folders, tmp_path):
    b = load_benchmark("dragonball_multi", folders["dragonball_multi"], work_dir=tmp_path)
    (q,) = b.questions
    assert q.question_id == "db5" and q.paper_id == ""  # asked of the whole corpus
    assert set(q.meta["gold_docs"]) == {"dragonball-1", "dragonball-2"}
    assert {d for d, _ in q.evidence_pages} == {"dragonball-1", "dragonball-2"}
    assert set(b.papers) == {"dragonball-1", "dragonball-2"}  # every report a query names: the corpus
    for doc, page in q.evidence_pages:
        with pymupdf.open(b.papers[doc].pdf) as pdf:
            text = " ".join(pdf[page - 1].get_text().split())
        assert "12 million" in text or "rival bakery" in text


def test_hotpotqa_loader_both_formats(folders):
    b = load_benchmark("hotpotqa", folders["hotpotqa"])
    assert [(q.query_id, q.source) for q in b.queries] == [("h1", "ircot"), ("h2", "ircot"), ("d1", "distractor")]
    h1 = b.queries[0]
    doc = b.documents[h1.doc_ids[0]]
    gold = sorted(doc.text[slice(*doc.sentences[i])] for _, i in h1.gold)
    assert len(gold) == 3 and all(s in TOPICS["violin"] for s in gold)
    d1 = b.queries[2]
    ddoc = b.documents[d1.doc_ids[0]]
    assert sorted(ddoc.text[slice(*ddoc.sentences[i])] for _, i in d1.gold) == sorted(
        ["Ocean tides follow the gravitational pull of the moon and the sun.",
         "Spring tides occur when the sun and moon align."])
    limited = load_benchmark("hotpotqa", folders["hotpotqa"], limit=1)
    assert len(limited.queries) == 1 and len(limited.documents) == 1


def test_scholarqa_loader_groups_snippets_by_paper(folders):
    b = load_benchmark("scholarqa_multi", folders["scholarqa_multi"])
    assert len(b.papers) == 3  # the volcano paper is cited by both questions: one paper
    s1, s2 = b.questions
    assert len(s1.gold_doc_ids) == 2 and len(s2.gold_doc_ids) == 2
    assert set(s1.gold_doc_ids) & set(s2.gold_doc_ids)
    volcano = next(p for p in b.papers.values() if "volcano" in p.title)
    assert volcano.snippets == (TOPICS["volcano"],)  # the same snippet twice is kept once


def test_loaders_reject_bad_records_with_the_file_named(copy_of, tmp_path):
    folder = copy_of("qasper_pdf")
    rows = [json.loads(x) for x in (folder / "questions.jsonl").read_text().splitlines()]
    rows[0]["evidence_pages"] = ["two"]
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(LayoutError, match=r"questions\.jsonl: line 1 evidence_pages"):
        load_benchmark("qasper_pdf", folder)


def test_tiny_qasper_pdf_writer_is_a_real_pdf(tmp_path):
    folder = write_qasper_pdf(tmp_path)
    doc = pymupdf.open(folder / "pdfs" / "0001.00001.pdf")
    assert doc.page_count == 3 and "Sourdough" in doc[1].get_text()
